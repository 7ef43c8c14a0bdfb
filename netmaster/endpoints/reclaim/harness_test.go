package reclaim_test

import (
	"os"
	"testing"

	"github.com/contiv/netplugin/netmaster/master"
	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

// The tests of this package drive whole leadership terms through HTTP
// (mastertest): the sweep and epcleanup, each under its own root of the
// package's shared embedded etcd (etcdEndpoint).
var etcdEndpoint string

func TestMain(m *testing.M) { os.Exit(mastertest.Run(m, &etcdEndpoint)) }

func newEnv(t testing.TB) *mastertest.Env { return newEnvCfg(t, mastertest.DefaultConfig()) }

func newEnvCfg(t testing.TB, cfg master.Config) *mastertest.Env {
	t.Helper()
	return mastertest.New(t, etcdEndpoint, cfg)
}
