package bgp

import (
	"encoding/json"
	"testing"

	"github.com/contiv/netplugin/state"
)

// FuzzParseConfig: any stored BGP object parses or is refused, never panics,
// and an accepted one satisfies the configuration's invariants.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"id":"h1","hostname":"h1","router-ip":"198.18.50.11/24","as":"65001","neighbor-as":"65000","neighbor":"198.18.50.1"}`))
	f.Add([]byte(`{"router-ip":"1.1.1.1/32","as":"0","neighbor-as":"x","neighbor":""}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var b state.Bgp
		if json.Unmarshal(data, &b) != nil {
			return
		}
		c, err := ParseConfig(b)
		if err != nil {
			return
		}
		if !c.RouterIP.Addr().Is4() || !c.Neighbor.Is4() || !c.RouterIP.Contains(c.Neighbor) ||
			c.AS == 0 || c.NeighborAS == 0 || c.RouterIP.Bits() == 32 {
			t.Fatalf("accepted %q as %+v", data, c)
		}
	})
}
