package reclaim_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

// IPv6 addresses have owners as IPv4 ones (docs/compat.md NM9b): an
// endpoint record, the gateway, or the allocAddress record. A new
// leadership term releases an IPv6 address without an owner and keeps the
// owned ones; releaseAddress and createEndpoint's take-over remove the
// record.
func TestLeakedIPv6AddressesSwept(t *testing.T) {
	e := newEnv(t)
	e.CreateDualNet("default", "n6", "198.18.40.0/24", "198.18.40.254", "2001:db8:40::/120", "2001:db8:40::fe")
	const pool = "n6.default"
	r := e.CreateEndpoint(mastertest.EPBody("default", "n6", "", "c1", "host1", "", ""))
	if got := e.Dump()["state/eps/n6.default-c1"]; !strings.Contains(got, `"ipv6Address":"2001:db8:40::1"`) || r.EndpointConfig.IPAddress != "198.18.40.1" {
		t.Fatalf("endpoint c1: %s", got)
	}
	alloc := func() string {
		t.Helper()
		var r struct{ IPv4Address string }
		if err := json.Unmarshal([]byte(e.OK("POST", "/plugin/allocAddress", `{"NetworkID":"","AddressPool":"2001:db8:40::/120"}`)), &r); err != nil {
			t.Fatal(err)
		}
		return r.IPv4Address
	}
	kept := alloc() // held by its allocAddress record
	if kept != "2001:db8:40::2/120" {
		t.Fatalf("allocAddress: %s", kept)
	}
	keptIP, _, _ := strings.Cut(kept, "/")
	if _, ok := e.Dump()["state/ipalloc/"+pool+"/"+keptIP]; !ok {
		t.Fatalf("no owner record for %s", keptIP)
	}
	taken := alloc() // handed to an endpoint below
	takenIP, _, _ := strings.Cut(taken, "/")
	released := alloc() // given back below
	releasedIP, _, _ := strings.Cut(released, "/")

	// createEndpoint takes over an address allocAddress handed out; the
	// record goes, the endpoint owns it. Another endpoint cannot take it.
	e.CreateEndpoint(mastertest.EPBody("default", "n6", "", "c2", "host1", "", takenIP))
	if got := e.Dump()["state/eps/n6.default-c2"]; !strings.Contains(got, `"ipv6Address":"`+takenIP+`"`) {
		t.Fatalf("endpoint c2 did not take %s: %s", takenIP, got)
	}
	if _, ok := e.Dump()["state/ipalloc/"+pool+"/"+takenIP]; ok {
		t.Fatalf("record of %s kept after the take-over", takenIP)
	}
	e.Fail("POST", "/plugin/createEndpoint", mastertest.EPBody("default", "n6", "", "c3", "host1", "", takenIP), "")
	// Neither the gateway nor a leaked address can be taken.
	e.Fail("POST", "/plugin/createEndpoint", mastertest.EPBody("default", "n6", "", "c3", "host1", "", "2001:db8:40::fe"), "")

	// releaseAddress frees the address and its record.
	e.OK("POST", "/plugin/releaseAddress", fmt.Sprintf(`{"NetworkID":%q,"IPv4Address":%q}`, pool, released))
	if _, ok := e.Dump()["state/ipalloc/"+pool+"/"+releasedIP]; ok {
		t.Fatalf("record of %s kept after releaseAddress", releasedIP)
	}

	// A killed netmaster's allocation: taken, no owner.
	leak, err := ipam.NewV6(e.St).Allocate(mastertest.Ctx(t, 10*time.Second), pool)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"2001:db8:40::1", keptIP, takenIP, "2001:db8:40::fe"}
	slices.Sort(want)
	before := e.V6Taken(pool)
	if !slices.Contains(before, leak.String()) || len(before) != len(want)+1 {
		t.Fatalf("before the sweep: %v (leak %s)", before, leak)
	}
	e.Restart()
	if got := e.V6Taken(pool); !slices.Equal(got, want) {
		t.Fatalf("after the sweep: %v, want %v", got, want)
	}
	// Owned addresses survive further terms; deleting the endpoints frees
	// theirs.
	e.Restart()
	if got := e.V6Taken(pool); !slices.Equal(got, want) {
		t.Fatalf("after a second term: %v, want %v", got, want)
	}
	for _, c := range []string{"c1", "c2"} {
		e.OK("POST", "/plugin/deleteEndpoint", mastertest.DeleteEP("default", "n6", "", c))
	}
	want = []string{keptIP, "2001:db8:40::fe"}
	slices.Sort(want)
	if got := e.V6Taken(pool); !slices.Equal(got, want) {
		t.Fatalf("after endpoint deletes: %v, want %v", got, want)
	}
}
