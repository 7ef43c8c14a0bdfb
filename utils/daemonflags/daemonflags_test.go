package daemonflags

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	ok := Common{Mode: "docker", NetMode: "vlan", FwdMode: "bridge"}
	cases := []struct {
		mod  func(*Common)
		want string // "" = valid
	}{
		{func(c *Common) {}, ""},
		{func(c *Common) { c.NetMode, c.FwdMode = "vlan", "routing" }, ""},
		{func(c *Common) { c.NetMode, c.FwdMode = "vxlan", "routing" }, ""},
		{func(c *Common) { c.Mode = "kubernetes" }, ""},
		{func(c *Common) { c.Mode = "swarm-mode" }, ""},
		{func(c *Common) { c.Mode = "test" }, ""},
		{func(c *Common) { c.Mode = "" }, "mode is not set"},
		{func(c *Common) { c.Mode = "mesos" }, `unknown "mesos" mode`},
		{func(c *Common) { c.NetMode = "" }, "network mode is not set"},
		{func(c *Common) { c.NetMode = "geneve" }, `invalid network mode "geneve"`},
		{func(c *Common) { c.FwdMode = "" }, "forwarding mode is not set"},
		{func(c *Common) { c.FwdMode = "nat" }, `invalid forwarding mode "nat"`},
		{func(c *Common) { c.NetMode, c.FwdMode = "vxlan", "bridge" }, "--netmode vxlan requires --fwdmode routing"},
		{func(c *Common) {
			c.EtcdEndpoints, c.ConsulEndpoints = []string{"http://a:1"}, []string{"b:2"}
		}, "ambiguous store"},
	}
	for _, tc := range cases {
		c := ok
		tc.mod(&c)
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: unexpected error %v", c, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want it to contain %q", c, err, tc.want)
		}
	}
}

func TestSplitList(t *testing.T) {
	if got := SplitList(" http://a:1, ,http://b:2,"); len(got) != 2 || got[0] != "http://a:1" || got[1] != "http://b:2" {
		t.Fatalf("%q", got)
	}
	if got := SplitList(""); len(got) != 0 {
		t.Fatalf("%q", got)
	}
}
