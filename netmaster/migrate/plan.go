package migrate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// ErrPlan: the source holds records that cannot be carried over as they
// are; the plan lists them and nothing is written.
var ErrPlan = errors.New("migrate: source cannot be migrated as it is")

// Record names one source key and what happened to it.
type Record struct {
	Key    string
	Reason string
}

// Pool4 is an IPv4 pool to restore (ipam.V4.Restore).
type Pool4 struct {
	ID    string
	Def   ipam.PoolDef
	Taken []netip.Addr
}

// Plan is what a migration writes, with everything it found on the way.
type Plan struct {
	// KVs are the plain keys to write, relative to the store root, by key.
	KVs []objdb.KeyValue
	// Pools are the IPv4 pools, networks first, then group sub-pools.
	Pools []Pool4
	// Skipped are source keys deliberately not carried over (the service
	// registry and locks, rebuilt by the running daemons).
	Skipped []Record
	// Unmapped are keys of a shape this migration does not know.
	Unmapped []Record
	// Problems are records that are corrupt or contradict each other.
	Problems []Record
	// Notes are repairs made on the way (an address used but not marked).
	Notes []string
	// Counts per kind of object mapped.
	Counts map[string]int
}

// Err is nil when the plan can be applied: no problems, and no unmapped
// keys unless allowUnmapped.
func (p *Plan) Err(allowUnmapped bool) error {
	if len(p.Problems) > 0 {
		return fmt.Errorf("%w: %d corrupt or inconsistent records (first: %s: %s)", ErrPlan, len(p.Problems), p.Problems[0].Key, p.Problems[0].Reason)
	}
	if len(p.Unmapped) > 0 && !allowUnmapped {
		return fmt.Errorf("%w: %d keys of unknown shape (first: %s); --allow-unmapped carries the rest over and lists them", ErrPlan, len(p.Unmapped), p.Unmapped[0].Key)
	}
	return nil
}

// Digest identifies the plan's content: two runs from the same source
// state have the same digest.
func (p *Plan) Digest() string {
	h := sha256.New()
	for _, kv := range p.KVs {
		h.Write([]byte(kv.Key))
		h.Write([]byte{0})
		h.Write(kv.Value)
		h.Write([]byte{0})
	}
	for _, pl := range p.Pools {
		fmt.Fprintf(h, "%s\x00%+v\x00", pl.ID, pl.Def)
		for _, a := range pl.Taken {
			h.Write(a.AsSlice())
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (p *Plan) problem(key, format string, args ...any) {
	p.Problems = append(p.Problems, Record{Key: key, Reason: fmt.Sprintf(format, args...)})
}

func (p *Plan) put(key string, val []byte) {
	p.KVs = append(p.KVs, objdb.KeyValue{Key: key, Value: val})
}

// modelTypes are the original's model object types (docs/daemons.md §2.5).
var modelTypes = map[string]bool{
	"tenant": true, "network": true, "endpointGroup": true, "policy": true, "rule": true,
	"global": true, "Bgp": true, "serviceLB": true, "netprofile": true, "appProfile": true,
	"extContractsGroup": true, "aciGw": true, "volume": true, "volumeProfile": true,
}

// copied are the state prefixes carried over as they are, after a decode
// into this project's type proves their shape (docs/daemons.md §3.1).
var copied = map[string]func([]byte) error{
	state.PrefixGlobConfig:    check[state.GlobConfig],
	state.PrefixGlobalCfg:     check[state.GlobalCfg],
	state.PrefixGlobalOper:    check[state.GlobalOper],
	state.PrefixEpgPolicies:   check[state.EpgPolicy],
	state.PrefixPolicyRules:   check[state.PolicyRule],
	state.PrefixBgp:           check[state.Bgp],
	state.PrefixServiceLBs:    check[state.ServiceLB],
	state.PrefixProviders:     check[state.SvcProvider],
	state.PrefixDocknets:      check[state.Docknet],
	state.PrefixEndpointOper:  check[state.EndpointOper],
	state.PrefixOvsDriverOper: check[state.OvsDriverOper],
}

func check[T any](b []byte) error {
	var v T
	return json.Unmarshal(b, &v)
}

// Bit counts of the tag resources (docs/daemons.md §3.5).
const (
	vlanBits  = 4096
	vxlanBits = 16384
)

// network is a network state record as the migration reads it: the
// bitmap fields stay encoded until decodeBits bounds them.
type network struct {
	ID            string          `json:"id"`
	Tenant        string          `json:"tenant"`
	NetworkName   string          `json:"networkName"`
	PktTagType    string          `json:"pktTagType"`
	PktTag        int             `json:"pktTag"`
	ExtPktTag     int             `json:"extPktTag"`
	SubnetIP      string          `json:"subnetIP"`
	SubnetLen     uint            `json:"subnetLen"`
	Gateway       string          `json:"gateway"`
	IPAddrRange   string          `json:"ipAddrRange"`
	IPAllocMap    string          `json:"ipAllocMap"`
	IPv6Subnet    string          `json:"ipv6SubnetIP"`
	IPv6SubnetLen uint            `json:"ipv6SubnetLen"`
	IPv6Gateway   string          `json:"ipv6Gateway"`
	IPv6AllocMap  map[string]bool `json:"ipv6AllocMap"`
	IPv6LastHost  string          `json:"ipv6LastHost"`

	key  string
	raw  map[string]json.RawMessage
	sn   ipam.Subnet
	def  ipam.PoolDef
	lo   uint32 // allocatable host indices
	hi   uint32
	bmap bits
	v6   netip.Prefix
}

type group struct {
	ID              string `json:"id"`
	GroupName       string `json:"groupName"`
	TenantName      string `json:"tenantName"`
	NetworkName     string `json:"networkName"`
	EndpointGroupID int    `json:"endpointGroupId"`
	IPPool          string `json:"IPPool"`
	EPGIPAllocMap   string `json:"epgIpAllocMap"`

	key string
	raw map[string]json.RawMessage
}

type tagRes struct {
	VLANs          string `json:"vlans"`
	FreeVLANs      string `json:"freeVLANs"`
	VXLANs         string `json:"vxlans"`
	LocalVLANs     string `json:"LocalVLANs"`
	FreeVXLANs     string `json:"freeVXLANs"`
	FreeLocalVLANs string `json:"freeLocalVLANs"`
	Start          *uint  `json:"FreeVXLANsStart"`
}

// Map reads the original's tree and plans this project's keys. It never
// fails: what it cannot carry over is listed in the plan (Plan.Err).
func Map(t *Tree) *Plan {
	p := &Plan{Counts: map[string]int{}}
	for _, k := range t.Outside {
		p.Unmapped = append(p.Unmapped, Record{Key: k, Reason: "outside /" + Root})
	}
	nets := map[string]*network{}
	groups := map[string]*group{}
	var eps []*state.Endpoint
	var epKeys []string
	var svcs []*state.ServiceLB
	tags := map[string]*tagRes{}
	var globalOper *state.GlobalOper
	for _, k := range t.Keys() {
		v := t.KV[k]
		seg := strings.Split(k, "/")
		switch {
		case seg[0] == "service" || seg[0] == "lock":
			p.Skipped = append(p.Skipped, Record{Key: k, Reason: "rebuilt by the running daemons (bound to a TTL)"})
		case len(seg) == 4 && seg[0] == "obj" && seg[1] == "modeldb":
			if !modelTypes[seg[2]] || seg[3] == "" {
				p.Unmapped = append(p.Unmapped, Record{Key: k, Reason: "unknown model object type " + strconv.Quote(seg[2])})
				continue
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(v, &obj); err != nil {
				p.problem(k, "model object: %v", err)
				continue
			}
			p.put(k, v)
			p.Counts["model "+seg[2]]++
		case len(seg) == 3 && seg[2] != "":
			prefix, id := seg[0]+"/"+seg[1]+"/", seg[2]
			switch prefix {
			case state.PrefixNetworks:
				n := &network{key: k}
				if err := json.Unmarshal(v, n); err == nil {
					err = json.Unmarshal(v, &n.raw)
				} else {
					p.problem(k, "network: %v", err)
					continue
				}
				if n.ID != id {
					p.problem(k, "network record's id %q differs from its key", n.ID)
					continue
				}
				nets[id] = n
			case state.PrefixEPGs:
				g := &group{key: k}
				if err := json.Unmarshal(v, g); err != nil {
					p.problem(k, "endpoint group: %v", err)
					continue
				}
				_ = json.Unmarshal(v, &g.raw)
				if g.ID != id {
					p.problem(k, "endpoint group record's id %q differs from its key", g.ID)
					continue
				}
				groups[id] = g
			case state.PrefixEndpoints:
				var ep state.Endpoint
				if err := json.Unmarshal(v, &ep); err != nil {
					p.problem(k, "endpoint: %v", err)
					continue
				}
				if ep.ID != id {
					p.problem(k, "endpoint record's id %q differs from its key", ep.ID)
					continue
				}
				eps = append(eps, &ep)
				epKeys = append(epKeys, k)
				p.put(k, v)
				p.Counts["endpoints"]++
			case state.PrefixVlanCfg, state.PrefixVlanOper, state.PrefixVxlanCfg, state.PrefixVxlanOper:
				if id != "global" {
					p.Unmapped = append(p.Unmapped, Record{Key: k, Reason: "tag resource other than global"})
					continue
				}
				var r tagRes
				if err := json.Unmarshal(v, &r); err != nil {
					p.problem(k, "tag resource: %v", err)
					continue
				}
				tags[prefix] = &r
			default:
				chk, ok := copied[prefix]
				if !ok {
					p.Unmapped = append(p.Unmapped, Record{Key: k, Reason: "unknown key"})
					continue
				}
				if err := chk(v); err != nil {
					p.problem(k, "%s record: %v", strings.TrimSuffix(prefix, "/"), err)
					continue
				}
				switch prefix {
				case state.PrefixServiceLBs:
					var s state.ServiceLB
					_ = json.Unmarshal(v, &s)
					svcs = append(svcs, &s)
				case state.PrefixGlobalOper:
					globalOper = &state.GlobalOper{}
					_ = json.Unmarshal(v, globalOper)
				}
				p.put(k, v)
				p.Counts[strings.TrimSuffix(prefix, "/")]++
			}
		default:
			p.Unmapped = append(p.Unmapped, Record{Key: k, Reason: "unknown key"})
		}
	}

	p.mapTags(tags, nets, globalOper)
	p.mapNetworks(nets, groups, eps, epKeys, svcs)
	sort.Slice(p.KVs, func(i, j int) bool { return p.KVs[i].Key < p.KVs[j].Key })
	return p
}

// mapTags checks the VLAN/VXLAN resources and copies them: the tags the
// networks hold must be marked in use, or they would be handed out again.
func (p *Plan) mapTags(tags map[string]*tagRes, nets map[string]*network, gop *state.GlobalOper) {
	if len(tags) == 0 {
		if len(nets) > 0 {
			p.problem("state/auto-vlan/global", "networks exist but the source has no tag resources")
		}
		return
	}
	dec := func(key, field, s string, max uint64) (bits, bool) {
		b, err := decodeBits(s, max)
		if err != nil {
			p.problem(key, "%s: %v", field, err)
			return bits{}, false
		}
		return b, true
	}
	ok := true
	var vlanCfg, vlanFree, vxCfg, vxLocal, vxFree, vxFreeLocal bits
	var start uint
	for prefix, r := range map[string]*tagRes{state.PrefixVlanCfg: tags[state.PrefixVlanCfg], state.PrefixVlanOper: tags[state.PrefixVlanOper],
		state.PrefixVxlanCfg: tags[state.PrefixVxlanCfg], state.PrefixVxlanOper: tags[state.PrefixVxlanOper]} {
		key := prefix + "global"
		if r == nil {
			p.problem(key, "missing while the other tag resources exist")
			ok = false
			continue
		}
		var good bool
		switch prefix {
		case state.PrefixVlanCfg:
			vlanCfg, good = dec(key, "vlans", r.VLANs, vlanBits)
		case state.PrefixVlanOper:
			vlanFree, good = dec(key, "freeVLANs", r.FreeVLANs, vlanBits)
		case state.PrefixVxlanCfg:
			var g2 bool
			vxCfg, good = dec(key, "vxlans", r.VXLANs, vxlanBits)
			vxLocal, g2 = dec(key, "LocalVLANs", r.LocalVLANs, vlanBits)
			good = good && g2
			if r.Start != nil {
				start = *r.Start
			}
		case state.PrefixVxlanOper:
			var g2 bool
			vxFree, good = dec(key, "freeVXLANs", r.FreeVXLANs, vxlanBits)
			vxFreeLocal, g2 = dec(key, "freeLocalVLANs", r.FreeLocalVLANs, vlanBits)
			good = good && g2
		}
		ok = ok && good
	}
	if !ok {
		return
	}
	if start == 0 && gop != nil && gop.FreeVXLANsStart != 0 {
		// The original did not persist the start on first definition
		// (docs/daemons.md §4.6); its global oper record has it.
		start = gop.FreeVXLANsStart
		p.Notes = append(p.Notes, fmt.Sprintf("state/auto-vxlan/global: FreeVXLANsStart was not stored; set to %d from oper/global/global", start))
	}
	_ = vxLocal
	names := sortedKeys(nets)
	for _, id := range names {
		n := nets[id]
		switch n.PktTagType {
		case "vlan":
			if !vlanCfg.test(uint64(n.PktTag)) || vlanFree.test(uint64(n.PktTag)) {
				p.problem(n.key, "VLAN %d is not marked in use in the tag resources", n.PktTag)
			}
		case "vxlan":
			if n.ExtPktTag <= int(start) || !vxCfg.test(uint64(n.ExtPktTag)-uint64(start)) || vxFree.test(uint64(n.ExtPktTag)-uint64(start)) {
				p.problem(n.key, "VXLAN %d is not marked in use in the tag resources", n.ExtPktTag)
			}
			if vxFreeLocal.test(uint64(n.PktTag)) {
				p.problem(n.key, "local VLAN %d is not marked in use in the tag resources", n.PktTag)
			}
		}
	}
	for _, prefix := range []string{state.PrefixVlanCfg, state.PrefixVlanOper, state.PrefixVxlanCfg, state.PrefixVxlanOper} {
		r := tags[prefix]
		var val []byte
		switch prefix {
		case state.PrefixVlanCfg:
			val, _ = json.Marshal(map[string]any{"id": "global", "vlans": r.VLANs})
		case state.PrefixVlanOper:
			val, _ = json.Marshal(map[string]any{"id": "global", "freeVLANs": r.FreeVLANs})
		case state.PrefixVxlanCfg:
			val, _ = json.Marshal(map[string]any{"id": "global", "vxlans": r.VXLANs, "LocalVLANs": r.LocalVLANs, "FreeVXLANsStart": start})
		case state.PrefixVxlanOper:
			val, _ = json.Marshal(map[string]any{"id": "global", "freeVXLANs": r.FreeVXLANs, "freeLocalVLANs": r.FreeLocalVLANs})
		}
		p.put(prefix+"global", val)
	}
	p.Counts["tag resources"] = 4
}

// mapNetworks turns each network's and group's bitmaps into ipam pools and
// checks that every endpoint's, gateway's and VIP's address is held.
func (p *Plan) mapNetworks(nets map[string]*network, groups map[string]*group, eps []*state.Endpoint, epKeys []string, svcs []*state.ServiceLB) {
	// owners[net][addr] names who holds the address.
	owned := map[string]map[netip.Addr]string{}
	own := func(net string, a netip.Addr, who string) {
		if owned[net] == nil {
			owned[net] = map[netip.Addr]string{}
		}
		owned[net][a] = who
	}
	v4Taken := map[string]map[netip.Addr]bool{}
	v6Taken := map[string]map[netip.Addr]bool{}
	for _, id := range sortedKeys(nets) {
		n := nets[id]
		if !p.decodeNetwork(n) {
			delete(nets, id)
			continue
		}
		set := map[netip.Addr]bool{}
		base := ipU32(n.sn.Base)
		for h := uint64(n.lo); h <= uint64(n.hi) && n.lo <= n.hi; h++ {
			if n.bmap.test(h) {
				set[u32IP(base+uint32(h))] = true
			}
		}
		v4Taken[id] = set
		if n.def.Gateway != "" {
			gw := netip.MustParseAddr(n.def.Gateway)
			set[gw] = true
			own(id, gw, "gateway")
		}
		if n.v6.IsValid() {
			s6 := map[netip.Addr]bool{}
			for h := range n.IPv6AllocMap {
				a, err := v6Host(n.v6, h)
				if err != nil {
					p.problem(n.key, "ipv6AllocMap entry %q: %v", h, err)
					continue
				}
				s6[a] = true
			}
			v6Taken[id] = s6
		}
	}
	// Group pools: the range is taken in the network, the group's
	// allocations in its own pool.
	gTaken := map[string]map[netip.Addr]bool{}
	gRange := map[string][2]netip.Addr{}
	epgIDs := map[int]string{}
	for _, id := range sortedKeys(groups) {
		g := groups[id]
		netID := state.NetworkID(g.TenantName, g.NetworkName)
		if prev, dup := epgIDs[g.EndpointGroupID]; dup {
			p.problem(g.key, "endpoint group id %d is also held by %s", g.EndpointGroupID, prev)
		} else if g.EndpointGroupID < 1 || g.EndpointGroupID > 65535 {
			p.problem(g.key, "endpoint group id %d is outside 1-65535", g.EndpointGroupID)
		} else {
			epgIDs[g.EndpointGroupID] = id
			p.put("state/epgids/"+strconv.Itoa(g.EndpointGroupID), []byte(id))
		}
		g.raw["epgIpAllocMap"] = json.RawMessage(strconv.Quote(emptyBits))
		val, _ := json.Marshal(g.raw)
		p.put(g.key, val)
		p.Counts["endpoint groups"]++
		if g.IPPool == "" {
			continue
		}
		n := nets[netID]
		if n == nil {
			p.problem(g.key, "group pool %s: network %s has no (valid) record", g.IPPool, netID)
			continue
		}
		first, last, err := ipam.ParsePool(n.sn, g.IPPool)
		if err != nil {
			p.problem(g.key, "group pool %q: %v", g.IPPool, err)
			continue
		}
		b, err := decodeBits(g.EPGIPAllocMap, n.sn.Size())
		if err == nil && b.n != n.sn.Size() {
			err = fmt.Errorf("bitset of %d bits, the subnet has %d addresses", b.n, n.sn.Size())
		}
		if err != nil {
			p.problem(g.key, "epgIpAllocMap: %v", err)
			continue
		}
		set := map[netip.Addr]bool{}
		base := ipU32(n.sn.Base)
		for h := ipU32(first) - base; h <= ipU32(last)-base; h++ {
			a := u32IP(base + h)
			if b.test(uint64(h)) {
				set[a] = true
			}
			if !v4Taken[netID][a] {
				p.Notes = append(p.Notes, fmt.Sprintf("%s: %s of group pool %s was not marked in the network; reserved", n.key, a, id))
				v4Taken[netID][a] = true
			}
			own(netID, a, "group pool "+id)
		}
		gTaken[id] = set
		gRange[id] = [2]netip.Addr{first, last}
		p.Pools = append(p.Pools, Pool4{ID: id, Def: ipam.PoolDef{Subnet: n.def.Subnet, First: first.String(), Last: last.String(), Parent: netID, Pool: g.IPPool}})
	}
	// Endpoints keep their addresses.
	for i, ep := range eps {
		k := epKeys[i]
		n := nets[ep.NetID]
		if n == nil {
			p.problem(k, "network %s has no (valid) record: the endpoint's address has no pool", ep.NetID)
			continue
		}
		if ep.MacAddress != "" {
			if _, err := net.ParseMAC(ep.MacAddress); err != nil {
				p.problem(k, "macAddress: %v", err)
			}
		}
		if ep.IPAddress != "" {
			a, err := netip.ParseAddr(ep.IPAddress)
			if err != nil || !a.Is4() || !n.sn.Contains(a) {
				p.problem(k, "ipAddress %q is not an address of %s", ep.IPAddress, n.sn)
			} else {
				pool, set := ep.NetID, v4Taken[ep.NetID]
				if gk := ep.EndpointGroupKey; gk != "" && gTaken[gk] != nil {
					if r := gRange[gk]; ipU32(a) >= ipU32(r[0]) && ipU32(a) <= ipU32(r[1]) {
						pool, set = gk, gTaken[gk]
					}
				}
				if who, dup := owned[pool][a]; dup && who != "gateway" && !strings.HasPrefix(who, "group pool") {
					p.problem(k, "ipAddress %s is also held by %s", a, who)
				}
				if !set[a] {
					p.Notes = append(p.Notes, fmt.Sprintf("%s: %s was not marked in pool %s; reserved", k, a, pool))
					set[a] = true
				}
				own(pool, a, k)
			}
		}
		if ep.IPv6Address != "" {
			a, err := netip.ParseAddr(ep.IPv6Address)
			if err != nil || !n.v6.IsValid() || !n.v6.Contains(a) {
				p.problem(k, "ipv6Address %q is not an address of the network's IPv6 subnet", ep.IPv6Address)
			} else {
				if !v6Taken[ep.NetID][a] {
					p.Notes = append(p.Notes, fmt.Sprintf("%s: %s was not marked in the IPv6 pool; reserved", k, a))
					v6Taken[ep.NetID][a] = true
				}
				own(ep.NetID, a, k)
			}
		}
	}
	for _, s := range svcs {
		if s.IPAddress == "" {
			continue
		}
		netID := state.NetworkID(s.Tenant, s.Network)
		a, err := netip.ParseAddr(s.IPAddress)
		if n := nets[netID]; n == nil || err != nil || !n.sn.Contains(a) {
			p.problem(state.PrefixServiceLBs+s.ID, "VIP %q is not an address of network %s", s.IPAddress, netID)
			continue
		}
		if !v4Taken[netID][a] {
			p.Notes = append(p.Notes, fmt.Sprintf("%s%s: VIP %s was not marked; reserved", state.PrefixServiceLBs, s.ID, a))
			v4Taken[netID][a] = true
		}
		own(netID, a, "service "+s.ID)
		// The VIP's owner record (docs/daemons.md §4.12, compat SL4).
		p.put("state/ipalloc/"+netID+"/"+a.String(), []byte("serviceLB "+s.ID))
	}
	// Pools, and owner records for addresses taken with no owner (the
	// original's allocAddress handed them out, docs/daemons.md §4.8):
	// without one the first term's sweep would free them.
	var netPools []Pool4
	for _, id := range sortedKeys(nets) {
		n := nets[id]
		taken := sortedAddrs(v4Taken[id])
		for _, a := range taken {
			if owned[id][a] == "" {
				p.put("state/ipalloc/"+id+"/"+a.String(), []byte(id))
				p.Counts["address records without an endpoint"]++
			}
		}
		netPools = append(netPools, Pool4{ID: id, Def: n.def, Taken: taken})
		p.Counts["ipv4 addresses held"] += len(taken)
		n.raw["ipAllocMap"] = json.RawMessage(strconv.Quote(emptyBits))
		n.raw["ipv6AllocMap"] = json.RawMessage("null")
		val, _ := json.Marshal(n.raw)
		p.put(n.key, val)
		p.Counts["networks"]++
		if n.v6.IsValid() {
			var last netip.Addr
			if n.IPv6LastHost != "" {
				l, err := v6Host(n.v6, n.IPv6LastHost)
				if err != nil {
					p.problem(n.key, "ipv6LastHost %q: %v", n.IPv6LastHost, err)
				}
				last = l
			}
			if n.IPv6Gateway != "" {
				if gw, err := netip.ParseAddr(n.IPv6Gateway); err == nil {
					v6Taken[id][gw] = true
					own(id, gw, "gateway")
				}
			}
			for _, a := range sortedAddrs(v6Taken[id]) {
				if owned[id][a] == "" {
					p.put("state/ipalloc/"+id+"/"+a.String(), []byte(id))
					p.Counts["address records without an endpoint"]++
				}
			}
			kvs, err := ipam.RestoreV6Keys(id, n.v6.String(), n.IPv6Gateway, sortedAddrs(v6Taken[id]), last)
			if err != nil {
				p.problem(n.key, "ipv6 pool: %v", err)
				continue
			}
			p.KVs = append(p.KVs, kvs...)
			p.Counts["ipv6 addresses held"] += len(v6Taken[id])
		}
	}
	for i := range p.Pools {
		id := p.Pools[i].ID
		p.Pools[i].Taken = sortedAddrs(gTaken[id])
		for _, a := range p.Pools[i].Taken {
			if owned[id][a] == "" {
				p.put("state/ipalloc/"+id+"/"+a.String(), []byte(p.Pools[i].Def.Parent))
				p.Counts["address records without an endpoint"]++
			}
		}
	}
	p.Pools = append(netPools, p.Pools...)
}

// decodeNetwork checks a network record and fills its pool definition.
func (p *Plan) decodeNetwork(n *network) bool {
	sn, err := ipam.ParseSubnet(fmt.Sprintf("%s/%d", n.SubnetIP, n.SubnetLen))
	if err != nil {
		p.problem(n.key, "subnet %s/%d: %v", n.SubnetIP, n.SubnetLen, err)
		return false
	}
	first, last := sn.First, sn.Last
	if n.IPAddrRange != "" {
		a, b, ok := strings.Cut(n.IPAddrRange, "-")
		fa, err1 := netip.ParseAddr(a)
		la, err2 := netip.ParseAddr(b)
		if !ok || err1 != nil || err2 != nil || !sn.Contains(fa) || !sn.Contains(la) || ipU32(fa) > ipU32(la) {
			p.problem(n.key, "ipAddrRange %q is not a range of %s", n.IPAddrRange, sn)
			return false
		}
		first, last = fa, la
	}
	n.sn = sn
	n.def = ipam.PoolDef{Subnet: sn.String(), First: first.String(), Last: last.String()}
	if n.Gateway != "" {
		gw, err := sn.CheckHost(n.Gateway)
		if err != nil {
			p.problem(n.key, "gateway %q: %v", n.Gateway, err)
			return false
		}
		n.def.Gateway = gw.String()
	}
	base := ipU32(sn.Base)
	n.lo = max(ipU32(first)-base, 1)
	n.hi = min(ipU32(last)-base, uint32(sn.Size()-2))
	b, err := decodeBits(n.IPAllocMap, sn.Size())
	if err == nil && b.n != sn.Size() {
		err = fmt.Errorf("bitset of %d bits, the subnet has %d addresses", b.n, sn.Size())
	}
	if err != nil {
		p.problem(n.key, "ipAllocMap (the network's address pool): %v", err)
		return false
	}
	n.bmap = b
	if n.IPv6Subnet != "" {
		pfx, err := ipam.ParseSubnetV6(fmt.Sprintf("%s/%d", n.IPv6Subnet, n.IPv6SubnetLen))
		if err != nil {
			p.problem(n.key, "ipv6 subnet: %v", err)
			return false
		}
		n.v6 = pfx
	}
	if n.raw == nil {
		p.problem(n.key, "network record is not a JSON object")
		return false
	}
	return true
}

// v6Host is the address of host id h ("::5", the original's text form)
// in prefix pfx; a full address inside pfx is accepted too.
func v6Host(pfx netip.Prefix, h string) (netip.Addr, error) {
	a, err := netip.ParseAddr(h)
	if err != nil || !a.Is6() || a.Is4In6() {
		return netip.Addr{}, fmt.Errorf("not an IPv6 host id")
	}
	if pfx.Contains(a) {
		return a, nil
	}
	pb, hb := pfx.Addr().As16(), a.As16()
	for i := range pb {
		pb[i] |= hb[i]
	}
	out := netip.AddrFrom16(pb)
	if !pfx.Contains(out) || out.Compare(pfx.Addr()) == 0 {
		return netip.Addr{}, fmt.Errorf("host id outside %s", pfx)
	}
	return out, nil
}

func ipU32(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func u32IP(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func sortedAddrs(m map[netip.Addr]bool) []netip.Addr {
	out := make([]netip.Addr, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}
