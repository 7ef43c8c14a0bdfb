package policy_test

import (
	"os"
	"testing"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

// The tests of this package drive whole leadership terms through HTTP
// (mastertest), each under its own root of the package's shared embedded
// etcd (etcdEndpoint).
var etcdEndpoint string

func TestMain(m *testing.M) { os.Exit(mastertest.Run(m, &etcdEndpoint)) }

func newEnv(t testing.TB) *mastertest.Env {
	return mastertest.New(t, etcdEndpoint, mastertest.DefaultConfig())
}
