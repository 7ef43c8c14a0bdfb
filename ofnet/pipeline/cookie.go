package pipeline

import (
	"fmt"
	"hash/fnv"
)

// Category is the top byte of a flow cookie: which kind of object created the flow.
type Category uint8

// Cookie categories. The values are persistent (flows on a switch outlive the agent):
// append, never renumber.
const (
	CatInit           Category = 1 // fixed flows of a pipeline (misses, drops, redirects)
	CatNetwork        Category = 2 // per-network flows (flood flows, VTEP×network flows)
	CatLocalEndpoint  Category = 3
	CatRemoteEndpoint Category = 4
	CatVtep           Category = 5
	CatRule           Category = 6
	CatUplink         Category = 7
	CatArpMode        Category = 8 // ARP redirect present only in proxy mode
	CatService        Category = 9 // service load balancer (docs/services.md)
	CatDNS            Category = 10
	CatNetpol         Category = 11 // Kubernetes NetworkPolicy (docs/k8s.md)
	// CatSvcAffinity marks the flows the switch learns for a service's session
	// affinity (docs/services.md): they are the switch's, never recorded by the
	// agent, so a resync must leave them and a service's removal deletes them by
	// cookie.
	CatSvcAffinity Category = 12
)

var catNames = map[Category]string{CatInit: "init", CatNetwork: "network",
	CatLocalEndpoint: "local-endpoint", CatRemoteEndpoint: "remote-endpoint", CatVtep: "vtep",
	CatRule: "rule", CatUplink: "uplink", CatArpMode: "arp-mode", CatService: "service", CatDNS: "dns",
	CatNetpol: "netpol", CatSvcAffinity: "service-affinity"}

func (c Category) String() string {
	if n, ok := catNames[c]; ok {
		return n
	}
	return fmt.Sprintf("category-%d", uint8(c))
}

// CookieCategoryMask selects the category byte of a cookie.
const CookieCategoryMask uint64 = 0xff << 56

// CookieOf returns the cookie for flows of one object: the category in the top byte,
// a 56-bit FNV-1a hash of the object's key (endpoint id, VTEP address, rule id...) in
// the rest. It is deterministic, so a restarted agent writes the same cookies and its
// replay leaves identical flows untouched.
func CookieOf(cat Category, object string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(object))
	return uint64(cat)<<56 | h.Sum64()&^CookieCategoryMask
}

// CookieCategory returns the category encoded in a cookie.
func CookieCategory(cookie uint64) Category { return Category(cookie >> 56) }
