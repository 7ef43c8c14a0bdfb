package servicelb_test

import (
	"os"
	"testing"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

// The tests of this package drive whole leadership terms through HTTP
// (mastertest), each over its own root of the package's etcd.
var pkgEtcd mastertest.Etcd

func TestMain(m *testing.M) { os.Exit(pkgEtcd.Main(m)) }

func newEnv(t testing.TB) *mastertest.Env { return pkgEtcd.New(t) }
