package master_test

import (
	"strings"
	"testing"

	"github.com/contiv/netplugin/netmaster/master"
	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

func TestStartupDefaults(t *testing.T) {
	e := newEnvCfg(t, func() (c masterConfig) { c = mastertest.DefaultConfig(); c.FwdMode = "routing"; return }())
	b := e.OK("GET", "/api/v1/globals/global/", "")
	want := `{"key":"global","arpMode":"proxy","fwdMode":"routing","name":"global","networkInfraType":"default","pvtSubnet":"172.19.0.0/16","vlans":"1-4094","vxlans":"1-10000"}` + "\n"
	if b != want {
		t.Fatalf("global after first start:\n got %s\nwant %s", b, want)
	}
	e.OK("GET", "/api/v1/tenants/default/", "")
	// User settings survive a restart, even with other flags (§10 #3).
	e.SetGlobal(mastertest.GlobalBody("default", "100-200", "1000-2000", "bridge", "flood", "172.20.0.0/16"))
	e.Cfg.FwdMode = "routing"
	e.Restart()
	b = e.OK("GET", "/api/v1/globals/global/", "")
	if !strings.Contains(b, `"vlans":"100-200"`) || !strings.Contains(b, `"fwdMode":"bridge"`) || !strings.Contains(b, `"arpMode":"flood"`) {
		t.Fatalf("global reset by restart: %s", b)
	}
	if got := e.Dump()["master/config/global"]; !strings.Contains(got, `"fwd-mode":"bridge"`) {
		t.Fatalf("GlobConfig = %s", got)
	}
	// A deleted default tenant is re-created at the next start.
	e.OK("DELETE", "/api/v1/tenants/default/", "")
	e.Restart()
	e.OK("GET", "/api/v1/tenants/default/", "")
}

type masterConfig = master.Config
