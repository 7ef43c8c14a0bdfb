package endpoints_test

import (
	"os"
	"testing"

	"github.com/contiv/netplugin/netmaster/master"
	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

// The tests of this package drive whole leadership terms through HTTP
// (mastertest): the /plugin/* calls, address ownership, the counters and
// service VIPs (the sweep and epcleanup: netmaster/endpoints/reclaim).

// etcdEndpoint is the package's shared embedded etcd; every test works
// under its own root.
var etcdEndpoint string

func TestMain(m *testing.M) { os.Exit(mastertest.Run(m, &etcdEndpoint)) }

// env is a leadership term (mastertest.Env) the tests of this package add
// helpers to.
type env struct{ *mastertest.Env }

func newEnv(t testing.TB) *env { return newEnvCfg(t, mastertest.DefaultConfig()) }

func newEnvCfg(t testing.TB, cfg master.Config) *env {
	t.Helper()
	return &env{mastertest.New(t, etcdEndpoint, cfg)}
}
