package master_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/netmaster/ipam"
)

// epBody is a /plugin/createEndpoint request on host with optional
// preferred addresses.
func epBody(tenant, net, group, container, host, ip, ip6 string) string {
	return fmt.Sprintf(`{"TenantName":%q,"NetworkName":%q,"ServiceName":%q,"EndpointID":%q,"EPCommonName":"n-%s",`+
		`"ConfigEP":{"Container":%q,"Host":%q,"IPAddress":%q,"IPv6Address":%q,"ServiceName":%q}}`,
		tenant, net, group, container, container, container, host, ip, ip6, group)
}

// createDualNet creates a network with an IPv6 subnet and gateway.
func (e *env) createDualNet(tenant, name, subnet, gw, subnet6, gw6 string) {
	e.t.Helper()
	e.ok("POST", "/api/v1/networks/"+tenant+":"+name+"/", fmt.Sprintf(
		`{"tenantName":%q,"networkName":%q,"encap":"vlan","subnet":%q,"gateway":%q,"ipv6Subnet":%q,"ipv6Gateway":%q}`,
		tenant, name, subnet, gw, subnet6, gw6))
}

// v6Taken lists the taken addresses of an IPv6 pool.
func (e *env) v6Taken(pool string) []string {
	e.t.Helper()
	list, err := ipam.NewV6(e.st).Allocated(testCtx(e.t, 10*time.Second), pool)
	if err != nil {
		e.t.Fatalf("list ipv6 pool %s: %v", pool, err)
	}
	var out []string
	for _, a := range list {
		out = append(out, a.String())
	}
	slices.Sort(out)
	return out
}

// IPv6 addresses have owners as IPv4 ones (docs/compat.md NM9b): an
// endpoint record, the gateway, or the allocAddress record. A new
// leadership term releases an IPv6 address without an owner and keeps the
// owned ones; releaseAddress and createEndpoint's take-over remove the
// record.
func TestLeakedIPv6AddressesSwept(t *testing.T) {
	e := newEnv(t)
	e.createDualNet("default", "n6", "198.18.40.0/24", "198.18.40.254", "2001:db8:40::/120", "2001:db8:40::fe")
	const pool = "n6.default"
	r := e.createEndpoint(epBody("default", "n6", "", "c1", "host1", "", ""))
	if got := e.dump()["state/eps/n6.default-c1"]; !strings.Contains(got, `"ipv6Address":"2001:db8:40::1"`) || r.EndpointConfig.IPAddress != "198.18.40.1" {
		t.Fatalf("endpoint c1: %s", got)
	}
	alloc := func() string {
		t.Helper()
		var r struct{ IPv4Address string }
		if err := json.Unmarshal([]byte(e.ok("POST", "/plugin/allocAddress", `{"NetworkID":"","AddressPool":"2001:db8:40::/120"}`)), &r); err != nil {
			t.Fatal(err)
		}
		return r.IPv4Address
	}
	kept := alloc() // held by its allocAddress record
	if kept != "2001:db8:40::2/120" {
		t.Fatalf("allocAddress: %s", kept)
	}
	keptIP, _, _ := strings.Cut(kept, "/")
	if _, ok := e.dump()["state/ipalloc/"+pool+"/"+keptIP]; !ok {
		t.Fatalf("no owner record for %s", keptIP)
	}
	taken := alloc() // handed to an endpoint below
	takenIP, _, _ := strings.Cut(taken, "/")
	released := alloc() // given back below
	releasedIP, _, _ := strings.Cut(released, "/")

	// createEndpoint takes over an address allocAddress handed out; the
	// record goes, the endpoint owns it. Another endpoint cannot take it.
	e.createEndpoint(epBody("default", "n6", "", "c2", "host1", "", takenIP))
	if got := e.dump()["state/eps/n6.default-c2"]; !strings.Contains(got, `"ipv6Address":"`+takenIP+`"`) {
		t.Fatalf("endpoint c2 did not take %s: %s", takenIP, got)
	}
	if _, ok := e.dump()["state/ipalloc/"+pool+"/"+takenIP]; ok {
		t.Fatalf("record of %s kept after the take-over", takenIP)
	}
	e.fail("POST", "/plugin/createEndpoint", epBody("default", "n6", "", "c3", "host1", "", takenIP), "")
	// Neither the gateway nor a leaked address can be taken.
	e.fail("POST", "/plugin/createEndpoint", epBody("default", "n6", "", "c3", "host1", "", "2001:db8:40::fe"), "")

	// releaseAddress frees the address and its record.
	e.ok("POST", "/plugin/releaseAddress", fmt.Sprintf(`{"NetworkID":%q,"IPv4Address":%q}`, pool, released))
	if _, ok := e.dump()["state/ipalloc/"+pool+"/"+releasedIP]; ok {
		t.Fatalf("record of %s kept after releaseAddress", releasedIP)
	}

	// A killed netmaster's allocation: taken, no owner.
	leak, err := ipam.NewV6(e.st).Allocate(testCtx(t, 10*time.Second), pool)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"2001:db8:40::1", keptIP, takenIP, "2001:db8:40::fe"}
	slices.Sort(want)
	before := e.v6Taken(pool)
	if !slices.Contains(before, leak.String()) || len(before) != len(want)+1 {
		t.Fatalf("before the sweep: %v (leak %s)", before, leak)
	}
	e.restart()
	if got := e.v6Taken(pool); !slices.Equal(got, want) {
		t.Fatalf("after the sweep: %v, want %v", got, want)
	}
	// Owned addresses survive further terms; deleting the endpoints frees
	// theirs.
	e.restart()
	if got := e.v6Taken(pool); !slices.Equal(got, want) {
		t.Fatalf("after a second term: %v, want %v", got, want)
	}
	for _, c := range []string{"c1", "c2"} {
		e.ok("POST", "/plugin/deleteEndpoint", deleteEP("default", "n6", "", c))
	}
	want = []string{keptIP, "2001:db8:40::fe"}
	slices.Sort(want)
	if got := e.v6Taken(pool); !slices.Equal(got, want) {
		t.Fatalf("after endpoint deletes: %v, want %v", got, want)
	}
}
