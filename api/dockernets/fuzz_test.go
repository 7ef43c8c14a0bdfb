package dockernets_test

import (
	"strings"
	"testing"

	"github.com/contiv/netplugin/api/dockernets"
)

func FuzzParseName(f *testing.F) {
	for _, s := range []string{"web", "web/blue", "db.web/blue", "a.b.c/d/e", "/", ".", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		tenant, network, group := dockernets.ParseName(name)
		if tenant == "" {
			t.Fatalf("ParseName(%q): empty tenant", name)
		}
		// Names built by Name from dot- and slash-free parts parse back.
		if !strings.ContainsAny(name, "./") && name != "" {
			if network != name || group != "" || tenant != dockernets.DefaultTenant {
				t.Fatalf("ParseName(%q) = %q %q %q", name, tenant, network, group)
			}
		}
	})
}

func FuzzDecodeNetworks(f *testing.F) {
	f.Add([]byte(`[{"Name":"web","Id":"abc","Driver":"netplugin","IPAM":{"Driver":"netplugin","Config":[{"Subnet":"198.18.0.0/24"}],"Options":{"tenant":"default"}},"Options":{"encap":"vlan"}}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[{"IPAM":null,"Options":[]}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = dockernets.DecodeNetworks(data)
	})
}
