package openflow13

import (
	"fmt"
	"net"
	"strings"
)

// This file renders matches, actions, instructions, flows and groups in the syntax of
// ovs-ofctl (OVS 3.1) dump-flows / dump-groups, so tests can compare with real dumps.

var portNames = map[uint32]string{
	OFPPInPort: "IN_PORT", OFPPTable: "TABLE", OFPPNormal: "NORMAL", OFPPFlood: "FLOOD",
	OFPPAll: "ALL", OFPPController: "CONTROLLER", OFPPLocal: "LOCAL", OFPPAny: "ANY",
}

// PortString renders a port number as OVS does (reserved ports by name).
func PortString(p uint32) string {
	if n, ok := portNames[p]; ok {
		return n
	}
	return fmt.Sprint(p)
}

// cHex mimics C's "%#x": 0 prints as "0".
func cHex(v uint64) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%#x", v)
}

var tcpFlagNames = []string{"fin", "syn", "rst", "psh", "ack", "urg", "ece", "cwr", "ns"}

func tcpFlagsString(v, mask uint16) string {
	mask &= 0x0fff
	if mask == 0x0fff {
		if v == 0 {
			return "0"
		}
		var parts []string
		for i := 0; i < 12; i++ {
			if v&(1<<i) != 0 {
				if i < len(tcpFlagNames) {
					parts = append(parts, tcpFlagNames[i])
				} else {
					parts = append(parts, fmt.Sprintf("[%#x]", 1<<i))
				}
			}
		}
		return strings.Join(parts, "|")
	}
	var s strings.Builder
	for i := 0; i < 12; i++ {
		if mask&(1<<i) == 0 {
			continue
		}
		if i >= len(tcpFlagNames) {
			return fmt.Sprintf("%#05x/%#05x", v, mask)
		}
		if v&(1<<i) != 0 {
			s.WriteByte('+')
		} else {
			s.WriteByte('-')
		}
		s.WriteString(tcpFlagNames[i])
	}
	return s.String()
}

func allOnes(b []byte) bool {
	for _, c := range b {
		if c != 0xff {
			return false
		}
	}
	return true
}

// prefixLen returns the CIDR length of a contiguous mask, or -1.
func prefixLen(m []byte) int {
	ones, size := net.IPMask(m).Size()
	if size == 0 {
		return -1
	}
	return ones
}

// valueString renders a field value (and mask, if any) with the field's OVS format.
func valueString(d *FieldDef, o OXM) string {
	mask := o.Mask
	if !o.HasMask || len(mask) != len(o.Value) || allOnes(mask) {
		mask = nil
	}
	if d == nil || len(o.Value) != d.Len {
		s := "0x" + fmt.Sprintf("%x", o.Value)
		if mask != nil {
			s += "/0x" + fmt.Sprintf("%x", mask)
		}
		return s
	}
	switch d.format {
	case fmtPort:
		return PortString(uint32(o.Uint()))
	case fmtMAC:
		s := net.HardwareAddr(o.Value).String()
		if mask != nil {
			s += "/" + net.HardwareAddr(mask).String()
		}
		return s
	case fmtIPv4, fmtIPv6:
		s := net.IP(o.Value).String()
		if mask != nil {
			if n := prefixLen(mask); n >= 0 {
				s += fmt.Sprintf("/%d", n)
			} else {
				s += "/" + net.IP(mask).String()
			}
		}
		return s
	case fmtTCPFlags:
		return tcpFlagsString(uint16(o.Uint()), uint16(o.MaskUint()))
	case fmtHex16:
		if mask != nil {
			return fmt.Sprintf("0x%04x/0x%04x", o.Uint(), beUint(mask))
		}
		return fmt.Sprintf("0x%04x", o.Uint())
	case fmtLabel:
		if mask != nil {
			return fmt.Sprintf("0x%05x/0x%05x", o.Uint(), beUint(mask))
		}
		return fmt.Sprintf("0x%05x", o.Uint())
	case fmtCtState:
		return ctStateString(uint32(o.Uint()), uint32(o.MaskUint()))
	case fmtHex:
		if mask != nil {
			return cHex(o.Uint()) + "/" + cHex(beUint(mask))
		}
		return cHex(o.Uint())
	default: // decimal; masked integers print in hex like OVS
		if mask != nil {
			return fmt.Sprintf("0x%0*x/0x%0*x", 2*d.Len, o.Uint(), 2*d.Len, beUint(mask))
		}
		return fmt.Sprint(o.Uint())
	}
}

// String renders one field as "name=value" using the ovs-ofctl match keyword.
func (o OXM) String() string {
	d := o.Def()
	if d == nil {
		if o.Class == OXMClassExperimenter {
			return fmt.Sprintf("oxm(exp=0x%08x,field=%d)=%s", o.Experimenter, o.Field, valueString(nil, o))
		}
		return fmt.Sprintf("oxm(class=0x%04x,field=%d)=%s", o.Class, o.Field, valueString(nil, o))
	}
	return d.MatchName + "=" + valueString(d, o)
}

// MatchString renders a match preceded by its priority exactly as OVS's match_format
// does (priority omitted when it is the default 32768; fields in OVS's order, not wire
// order; protocol shorthands such as "tcp" replace dl_type/nw_proto).
func MatchString(m Match, priority uint16) string {
	var parts []string
	if priority != 0x8000 {
		parts = append(parts, fmt.Sprintf("priority=%d", priority))
	}
	if s := m.String(); s != "" {
		parts = append(parts, s)
	}
	return strings.Join(parts, ",")
}

// String renders the match fields in OVS order (see MatchString).
func (m Match) String() string {
	bf := func(f uint8) (OXM, bool) { return m.Get(OXMClassOpenFlowBasic, f) }
	used := map[uint64]bool{}
	var parts []string
	emitKey := func(key uint64) {
		for _, o := range m.Fields {
			if o.key() == key {
				used[key] = true
				parts = append(parts, o.String())
				return
			}
		}
	}
	emit := func(class uint16, f uint8) { emitKey(fieldKey(class, 0, f)) }
	mark := func(f uint8) { used[fieldKey(OXMClassOpenFlowBasic, 0, f)] = true }

	ethType, hasType := uint64(0), false
	if o, ok := bf(OXMFieldEthType); ok && len(o.Value) == 2 && !o.HasMask {
		ethType, hasType = o.Uint(), true
	}
	proto, hasProto := uint64(0), false
	if o, ok := bf(OXMFieldIPProto); ok && len(o.Value) == 1 {
		proto, hasProto = o.Uint(), true
	}
	// OVS prints the conntrack fields before the protocol shorthand.
	emit(OXMClassNXM1, NXMFieldCtState)
	emit(OXMClassNXM1, NXMFieldCtZone)
	emit(OXMClassNXM1, NXMFieldCtMark)
	skipType, skipProto := false, false
	if hasType {
		name := ""
		switch ethType {
		case 0x0800:
			name = "ip"
			if hasProto {
				if n, ok := map[uint64]string{1: "icmp", 2: "igmp", 6: "tcp", 17: "udp", 132: "sctp"}[proto]; ok {
					name, skipProto = n, true
				}
			}
		case 0x86dd:
			name = "ipv6"
			if hasProto {
				if n, ok := map[uint64]string{58: "icmp6", 6: "tcp6", 17: "udp6", 132: "sctp6"}[proto]; ok {
					name, skipProto = n, true
				}
			}
		case 0x0806:
			name = "arp"
		case 0x8035:
			name = "rarp"
		case 0x8847:
			name = "mpls"
		case 0x8848:
			name = "mplsm"
		}
		if name != "" {
			parts = append(parts, name)
			skipType = true
			mark(OXMFieldEthType)
			if skipProto {
				mark(OXMFieldIPProto)
			}
		}
	}
	for i := 0; i < 16; i++ {
		emit(OXMClassNXM1, NXMFieldReg0+uint8(i))
	}
	emit(OXMClassOpenFlowBasic, OXMFieldTunnelID)
	emit(OXMClassNXM1, NXMFieldTunIPv4Src)
	emit(OXMClassNXM1, NXMFieldTunIPv4Dst)
	emit(OXMClassOpenFlowBasic, OXMFieldMetadata)
	emit(OXMClassOpenFlowBasic, OXMFieldInPort)
	emit(OXMClassOpenFlowBasic, OXMFieldInPhyPort)
	if s, ok := vlanString(m); ok {
		parts = append(parts, s)
		mark(OXMFieldVlanVID)
		mark(OXMFieldVlanPCP)
	}
	emit(OXMClassOpenFlowBasic, OXMFieldEthSrc)
	emit(OXMClassOpenFlowBasic, OXMFieldEthDst)
	if !skipType {
		emit(OXMClassOpenFlowBasic, OXMFieldEthType)
	}
	for _, f := range []uint8{OXMFieldIPv6Src, OXMFieldIPv6Dst, OXMFieldIPv6FLabel,
		OXMFieldARPSpa, OXMFieldARPTpa, OXMFieldIPv4Src, OXMFieldIPv4Dst} {
		emit(OXMClassOpenFlowBasic, f)
	}
	if !skipProto {
		emit(OXMClassOpenFlowBasic, OXMFieldIPProto)
	}
	for _, f := range []uint8{OXMFieldARPOp, OXMFieldARPSha, OXMFieldARPTha} {
		emit(OXMClassOpenFlowBasic, f)
	}
	if o, ok := bf(OXMFieldIPDSCP); ok && len(o.Value) == 1 && !o.HasMask {
		parts = append(parts, fmt.Sprintf("nw_tos=%d", (o.Value[0]&0x3f)<<2))
		mark(OXMFieldIPDSCP)
	}
	for _, f := range []uint8{OXMFieldIPECN, OXMFieldMPLSLabel, OXMFieldMPLSTC, OXMFieldMPLSBOS,
		OXMFieldICMPv4Type, OXMFieldICMPv4Code, OXMFieldICMPv6Type, OXMFieldICMPv6Code,
		OXMFieldIPv6NDTarget, OXMFieldIPv6NDSLL, OXMFieldIPv6NDTLL,
		OXMFieldTCPSrc, OXMFieldUDPSrc, OXMFieldSCTPSrc, OXMFieldTCPDst, OXMFieldUDPDst, OXMFieldSCTPDst,
		OXMFieldTCPFlags} {
		emit(OXMClassOpenFlowBasic, f)
	}
	emitKey(fieldKey(OXMClassExperimenter, ONFExperimenterID, OXMFieldTCPFlags))
	// Anything left (unknown fields, pbb_isid, exthdr, duplicates) in wire order.
	for _, o := range m.Fields {
		if !used[o.key()] {
			parts = append(parts, o.String())
		}
	}
	return strings.Join(parts, ",")
}

// vlanString follows OVS: OXM vlan_vid/vlan_pcp are folded into an 802.1Q TCI and
// printed as dl_vlan/dl_vlan_pcp when exact, vlan_tci=value[/mask] otherwise.
func vlanString(m Match) (string, bool) {
	vid, okV := m.Basic(OXMFieldVlanVID)
	pcp, okP := m.Basic(OXMFieldVlanPCP)
	if !okV && !okP {
		return "", false
	}
	var tci, mask uint16
	if okV && len(vid.Value) == 2 {
		v := uint16(vid.Uint())
		vm := uint16(0x1fff)
		if vid.HasMask && len(vid.Mask) == 2 {
			vm = uint16(beUint(vid.Mask)) & 0x1fff
		}
		tci, mask = v&vm&0x1fff, vm
	}
	if okP && len(pcp.Value) == 1 {
		tci |= uint16(pcp.Value[0]&7)<<13 | 0x1000
		mask |= 0xe000 | 0x1000
	}
	vidMask, pcpMask := mask&0x0fff, mask&0xe000
	if mask&0x1000 != 0 && tci&0x1000 != 0 && (vidMask == 0 || vidMask == 0x0fff) &&
		(pcpMask == 0 || pcpMask == 0xe000) && (vidMask != 0 || pcpMask != 0) {
		var p []string
		if vidMask != 0 {
			p = append(p, fmt.Sprintf("dl_vlan=%d", tci&0xfff))
		}
		if pcpMask != 0 {
			p = append(p, fmt.Sprintf("dl_vlan_pcp=%d", tci>>13))
		}
		return strings.Join(p, ","), true
	}
	if mask == 0xffff {
		return fmt.Sprintf("vlan_tci=0x%04x", tci), true
	}
	return fmt.Sprintf("vlan_tci=0x%04x/0x%04x", tci, mask), true
}

// ---- actions ----

func (a ActionOutput) String() string {
	switch {
	case a.Port == OFPPController:
		return fmt.Sprintf("CONTROLLER:%d", a.MaxLen)
	case a.Port < OFPPMax:
		return fmt.Sprintf("output:%d", a.Port)
	}
	return PortString(a.Port)
}
func (ActionCopyTTLOut) String() string   { return "copy_ttl_out" }
func (ActionCopyTTLIn) String() string    { return "copy_ttl_in" }
func (ActionDecMPLSTTL) String() string   { return "dec_mpls_ttl" }
func (ActionPopVLAN) String() string      { return "pop_vlan" }
func (ActionDecNwTTL) String() string     { return "dec_ttl" }
func (ActionPopPBB) String() string       { return "pop_pbb" }
func (a ActionSetMPLSTTL) String() string { return fmt.Sprintf("set_mpls_ttl(%d)", a.TTL) }
func (a ActionSetNwTTL) String() string   { return fmt.Sprintf("mod_nw_ttl:%d", a.TTL) }
func (a ActionPushVLAN) String() string   { return fmt.Sprintf("push_vlan:0x%04x", a.EtherType) }
func (a ActionPushMPLS) String() string   { return fmt.Sprintf("push_mpls:0x%04x", a.EtherType) }
func (a ActionPopMPLS) String() string    { return fmt.Sprintf("pop_mpls:0x%04x", a.EtherType) }
func (a ActionPushPBB) String() string    { return fmt.Sprintf("push_pbb:0x%04x", a.EtherType) }
func (a ActionSetQueue) String() string   { return fmt.Sprintf("set_queue:%d", a.QueueID) }
func (a ActionGroup) String() string      { return fmt.Sprintf("group:%d", a.GroupID) }
func (a ActionSetField) String() string {
	d := a.Field.Def()
	if d == nil {
		return "set_field:" + a.Field.String()
	}
	return "set_field:" + valueString(d, a.Field) + "->" + d.Name
}
func (a ActionUnknown) String() string {
	return fmt.Sprintf("unknown_action(type=%d,body=0x%x)", a.Type, a.Body)
}

// ActionsString renders an action list ("drop" when empty).
func ActionsString(acts []Action) string {
	if len(acts) == 0 {
		return "drop"
	}
	return joinActions(acts)
}

func joinActions(acts []Action) string {
	s := make([]string, len(acts))
	for i, a := range acts {
		s[i] = a.String()
	}
	return strings.Join(s, ",")
}

// ---- instructions ----

func (i InstrGotoTable) String() string { return fmt.Sprintf("goto_table:%d", i.TableID) }
func (i InstrWriteMetadata) String() string {
	if i.Mask == ^uint64(0) {
		return "write_metadata:" + cHex(i.Metadata)
	}
	return "write_metadata:" + cHex(i.Metadata) + "/" + cHex(i.Mask)
}
func (i InstrApplyActions) String() string { return joinActions(i.Actions) }
func (i InstrWriteActions) String() string { return "write_actions(" + joinActions(i.Actions) + ")" }
func (InstrClearActions) String() string   { return "clear_actions" }
func (i InstrMeter) String() string        { return fmt.Sprintf("meter:%d", i.MeterID) }
func (i InstrUnknown) String() string {
	return fmt.Sprintf("unknown_instruction(type=%d,body=0x%x)", i.Type, i.Body)
}

// instrOrder is the order in which OVS prints instructions, whatever the wire order.
var instrOrder = map[uint16]int{OFPITMeter: 0, OFPITApplyActions: 1, OFPITClearActions: 2,
	OFPITWriteActions: 3, OFPITWriteMetadata: 4, OFPITGotoTable: 5}

// InstructionsString renders instructions as the text after "actions=" in a dump
// ("drop" when there is nothing to do).
func InstructionsString(ins []Instruction) string {
	var parts []string
	for rank := 0; rank <= 6; rank++ {
		for _, in := range ins {
			r, ok := instrOrder[in.InstructionType()]
			if !ok {
				r = 6
			}
			if r != rank {
				continue
			}
			if s := in.String(); s != "" {
				parts = append(parts, s)
			}
		}
	}
	if len(parts) == 0 {
		return "drop"
	}
	return strings.Join(parts, ",")
}

// flowString is ovs-ofctl --no-stats dump-flows syntax for one flow.
func flowString(cookie uint64, table uint8, idle, hard uint16, m Match, prio uint16, ins []Instruction) string {
	var s strings.Builder
	if cookie != 0 {
		fmt.Fprintf(&s, "cookie=%#x, ", cookie)
	}
	if table != 0 {
		fmt.Fprintf(&s, "table=%d, ", table)
	}
	if idle != 0 {
		fmt.Fprintf(&s, "idle_timeout=%d, ", idle)
	}
	if hard != 0 {
		fmt.Fprintf(&s, "hard_timeout=%d, ", hard)
	}
	ms := MatchString(m, prio)
	s.WriteString(ms)
	if ms != "" {
		s.WriteByte(' ')
	}
	s.WriteString("actions=")
	s.WriteString(InstructionsString(ins))
	return s.String()
}

// String renders the flow as `ovs-ofctl --no-stats dump-flows` prints it once installed
// (cookie and table only when non-zero), e.g.
// "table=1, priority=100,in_port=3 actions=write_metadata:0x100/0xff00,goto_table:2".
// The command, cookie mask, flags and buffer/out_port fields are not shown.
func (m *FlowMod) String() string {
	return flowString(m.Cookie, m.TableID, m.IdleTimeout, m.HardTimeout, m.Match, m.Priority, m.Instructions)
}

// String renders a flow-stats entry like `ovs-ofctl --no-stats dump-flows`.
func (f *FlowStats) String() string {
	return flowString(f.Cookie, f.TableID, f.IdleTimeout, f.HardTimeout, f.Match, f.Priority, f.Instructions)
}

var groupTypeNames = map[uint8]string{GroupTypeAll: "all", GroupTypeSelect: "select",
	GroupTypeIndirect: "indirect", GroupTypeFastFailover: "ff"}

func groupString(id uint32, typ uint8, buckets []Bucket) string {
	tn, ok := groupTypeNames[typ]
	if !ok {
		tn = fmt.Sprintf("%d", typ)
	}
	s := fmt.Sprintf("group_id=%d,type=%s", id, tn)
	for _, b := range buckets {
		s += ",bucket="
		if b.Weight != 0 || typ == GroupTypeSelect {
			s += fmt.Sprintf("weight:%d,", b.Weight)
		}
		if b.WatchPort != OFPPAny {
			s += "watch_port:" + PortString(b.WatchPort) + ","
		}
		if b.WatchGroup != OFPGAny {
			s += fmt.Sprintf("watch_group:%d,", b.WatchGroup)
		}
		s += "actions=" + ActionsString(b.Actions)
	}
	return s
}

// String renders the group like `ovs-ofctl -O OpenFlow13 dump-groups`.
func (m *GroupMod) String() string { return groupString(m.GroupID, m.GroupType, m.Buckets) }

// String renders a group-desc entry like `ovs-ofctl -O OpenFlow13 dump-groups`.
func (g *GroupDesc) String() string { return groupString(g.GroupID, g.GroupType, g.Buckets) }
