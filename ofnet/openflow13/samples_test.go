package openflow13

import "net"

// sampleMessages has one or more instances of every modelled message (xid 1), used by
// round-trip tests, the OVS cross-check and as fuzz seeds.
func sampleMessages() []Message {
	h := Header{Xid: 1}
	port := Port{PortNo: 3, HWAddr: mustMAC("02:02:0a:01:01:05"), Name: "vvport3",
		Config: 1, State: 4, Curr: 0x2820, Advertised: 0, Supported: 0, Peer: 0, CurrSpeed: 10000000, MaxSpeed: 0}
	full := flow(2, 200, f(OXMInPort(1), OXMEthDst(mustMAC("00:00:00:00:00:02")), OXMEthSrc(mustMAC("00:00:00:00:00:01")),
		ethIP, OXMVlanVID(10), OXMIPv4Dst(ip("10.0.0.0"), net.CIDRMask(8, 32)), OXMIPv4Src(ip("10.1.2.3"), nil),
		tcp, OXMIPDSCP(10), OXMTCPSrc(1000), OXMTCPDst(80), OXMTCPFlags(0x2, 0x2), OXMMetadata(7), OXMTunnelID(99)),
		InstrMeter{MeterID: 1},
		apply(ActionOutput{Port: 3, MaxLen: 256}, ActionOutput{Port: OFPPNormal}, ActionOutput{Port: OFPPTable},
			ActionOutput{Port: OFPPInPort}, ActionOutput{Port: OFPPLocal}, ActionOutput{Port: OFPPFlood}, ActionOutput{Port: OFPPAll},
			ActionSetQueue{QueueID: 3}, ActionGroup{GroupID: 4}, ActionDecNwTTL{}, ActionSetNwTTL{TTL: 4},
			pushV, ActionSetField{OXMVlanVID(5)}, ActionSetField{OXMVlanPCP(3)}, ActionSetField{OXMEthSrc(mustMAC("00:11:22:33:44:55"))},
			ActionSetField{OXMIPDSCP(8)}, ActionSetField{OXMIPv4Src(ip("10.0.0.1"), nil)}, ActionSetField{OXMTCPDst(8080)},
			ActionSetField{OXMTunnelID(0)}, ActionSetField{OXMMetadata(5)}, popV,
			ActionPushMPLS{EtherType: 0x8847}, ActionSetMPLSTTL{TTL: 3}, ActionDecMPLSTTL{}, ActionPopMPLS{EtherType: 0x0800}),
		InstrClearActions{},
		InstrWriteActions{Actions: []Action{ActionOutput{Port: 4, MaxLen: 0}}},
		wmd(0x5, 0xff), gotoT(3))
	full.Cookie, full.CookieMask, full.IdleTimeout, full.HardTimeout = 0x1234, 0, 10, 20
	full.Flags = FlowFlagSendFlowRem | FlowFlagCheckOverlap
	v6 := flow(3, 300, f(ethIPv6, OXMIPv6Src(ip("fe80::"), net.CIDRMask(64, 128)), OXMIPv6Dst(ip("::1"), nil), udp, OXMUDPSrc(1), OXMUDPDst(53)),
		apply(ActionSetField{OXMUDPSrc(7)}, ActionSetField{OXMIPv6Src(ip("fe80::1"), nil)}))
	arp := flow(4, 400, f(ethARP, OXMARPOp(2), OXMARPSpa(ip("1.1.1.1"), nil), OXMARPTpa(ip("2.2.2.0"), net.CIDRMask(24, 32))), apply(toCtrl))
	icmp := flow(5, 500, f(ethIP, OXMIPProto(1), OXMICMPv4Type(3), OXMICMPv4Code(1), OXMVlanVIDRaw(0, nil)), apply(ActionOutput{Port: OFPPController, MaxLen: 100}))
	modStrict := flow(9, 100, f(OXMEthDst(mustMAC("02:02:0a:01:01:05")), OXMVlanVID(1)), apply(popV, ActionOutput{Port: 3, MaxLen: 256}))
	modStrict.Command = FlowModifyStrict
	mod := flow(9, 100, nil, apply(ActionOutput{Port: 3}))
	mod.Command = FlowModify
	delS := flow(9, 100, f(OXMInPort(4)))
	delS.Command, delS.OutPort, delS.OutGroup = FlowDeleteStrict, 5, 6
	nx := flow(1, 7, f(OXMReg(1, 5, 0xffffffff), OXMReg(2, 4, 0xff), OXMTunIPv4Src(ip("1.1.1.1")), OXMTunIPv4Dst(ip("2.2.2.2")),
		OXMInPort(3), OXMVlanVID(3), OXMVlanPCP(2), ethIP, OXMIPECN(1), OXMIPProto(47)),
		apply(ActionSetField{OXMReg(3, 1, 0xffffffff)}, ActionSetField{OXMTunIPv4Dst(ip("3.3.3.3"))}, ActionPushVLAN{EtherType: 0x88a8}))
	del := NewFlowDeleteByCookie(3, 42)
	del.Xid = 1

	return []Message{
		NewHello(1, 4),
		&Hello{Header: Header{Version: Version, Xid: 1}},
		&Hello{Header: Header{Version: 1, Xid: 1}},
		&ErrorMsg{Header: h, ErrType: ErrTypeBadMatch, Code: 9, Data: mustMarshal(nil, modStrict)},
		&ErrorMsg{Header: h, ErrType: ErrTypeHelloFailed, Code: 0, Data: []byte("incompatible")},
		&EchoRequest{Header: h, Data: []byte("ping")},
		&EchoReply{Header: h},
		&Experimenter{Header: h, Experimenter: 0x2320, ExpType: 20, Data: []byte{0, 0, 0, 0, 0, 0, 0, 1}},
		&FeaturesRequest{Header: h},
		&FeaturesReply{Header: h, DatapathID: 0x0000aabbccddeeff, NBuffers: 0, NTables: 254, Capabilities: 0x4f},
		&GetConfigRequest{Header: h},
		&GetConfigReply{Header: h, SwitchConfig: SwitchConfig{Flags: 0, MissSendLen: 128}},
		&SetConfig{Header: h, SwitchConfig: SwitchConfig{Flags: 0, MissSendLen: 0xffff}},
		&PacketIn{Header: h, BufferID: OFPNoBuffer, TotalLen: 14, Reason: PacketInReasonAction, TableID: 3, Cookie: 9,
			Match: Match{Fields: []OXM{OXMInPort(7), OXMTunnelID(5000), OXMTunIPv4Src(ip("192.168.2.10")), OXMTunIPv4Dst(ip("192.168.2.11")), OXMMetadataMasked(5, 0xff)}},
			Data:  []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 2, 0xa, 1, 1, 5, 8, 6}},
		&FlowRemoved{Header: h, Cookie: 5, Priority: 100, Reason: 0, TableID: 3, DurationSec: 1, DurationNsec: 2,
			IdleTimeout: 10, HardTimeout: 0, PacketCount: 7, ByteCount: 700, Match: NewMatch(OXMInPort(3))},
		&PortStatus{Header: h, Reason: PortReasonAdd, Desc: port},
		&PacketOut{Header: h, BufferID: OFPNoBuffer, InPort: OFPPAny,
			Actions: []Action{ActionSetField{OXMTunnelID(5000)}, ActionOutput{Port: 7}},
			Data:    []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 2, 0xa, 1, 1, 5, 8, 6}},
		&PacketOut{Header: h, BufferID: OFPNoBuffer, InPort: 3, Actions: []Action{ActionOutput{Port: OFPPTable}},
			Data: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 2, 0xa, 1, 1, 5, 8, 6}},
		full, v6, arp, icmp, nx, modStrict, mod, delS, del, appendixB[17].fm,
		&GroupMod{Header: h, Command: GroupAdd, GroupType: GroupTypeAll, GroupID: 1},
		&GroupMod{Header: h, Command: GroupModify, GroupType: GroupTypeAll, GroupID: 2, Buckets: appendixBGroups[1].gm.Buckets},
		&GroupMod{Header: h, Command: GroupDelete, GroupType: GroupTypeAll, GroupID: OFPGAll},
		&GroupMod{Header: h, Command: GroupAdd, GroupType: GroupTypeSelect, GroupID: 3, Buckets: []Bucket{
			{Weight: 50, WatchPort: OFPPAny, WatchGroup: OFPGAny, Actions: []Action{ActionOutput{Port: 1}}},
			{Weight: 100, WatchPort: OFPPAny, WatchGroup: OFPGAny, Actions: []Action{ActionOutput{Port: 2}}}}},
		&GroupMod{Header: h, Command: GroupAdd, GroupType: GroupTypeIndirect, GroupID: 4, Buckets: []Bucket{NewBucket(ActionOutput{Port: 1})}},
		&GroupMod{Header: h, Command: GroupAdd, GroupType: GroupTypeFastFailover, GroupID: 5, Buckets: []Bucket{
			{WatchPort: 1, WatchGroup: OFPGAny, Actions: []Action{ActionOutput{Port: 1}}},
			{WatchPort: OFPPAny, WatchGroup: 4, Actions: []Action{ActionGroup{GroupID: 4}}}}},
		&MultipartRequest{Header: h, MPType: MultipartFlow, Flow: &FlowStatsRequest{TableID: 3, OutPort: OFPPAny, OutGroup: OFPGAny}},
		&MultipartRequest{Header: h, MPType: MultipartFlow, Flow: &FlowStatsRequest{TableID: OFPTTAll, OutPort: 3, OutGroup: 4,
			Cookie: 5, CookieMask: 0xff, Match: NewMatch(OXMInPort(3), ethIP)}},
		&MultipartRequest{Header: h, MPType: MultipartPortDesc},
		&MultipartRequest{Header: h, MPType: MultipartGroupDesc},
		&MultipartRequest{Header: h, MPType: MultipartDesc},
		&MultipartReply{Header: h, MPType: MultipartFlow, Flows: []FlowStats{
			{TableID: 3, DurationSec: 5, DurationNsec: 6, Priority: 100, Cookie: 9, PacketCount: 1, ByteCount: 64,
				Match: appendixB[13].fm.Match, Instructions: appendixB[13].fm.Instructions},
			{TableID: 0, Priority: 1, IdleTimeout: 5, Instructions: []Instruction{gotoT(1)}}}},
		&MultipartReply{Header: h, MPType: MultipartFlow, Flags: MultipartFlagMore},
		&MultipartReply{Header: h, MPType: MultipartPortDesc, Ports: []Port{port, {PortNo: OFPPLocal, HWAddr: mustMAC("aa:bb:cc:dd:ee:ff"), Name: "br0"}}},
		&MultipartReply{Header: h, MPType: MultipartGroupDesc, Groups: []GroupDesc{
			{GroupType: GroupTypeAll, GroupID: 2, Buckets: appendixBGroups[1].gm.Buckets}, {GroupType: GroupTypeAll, GroupID: 7}}},
		&MultipartReply{Header: h, MPType: MultipartAggregate, Body: make([]byte, 24)},
		&BarrierRequest{Header: h},
		&BarrierReply{Header: h},
		&RoleRequest{Header: h, RoleBody: RoleBody{Role: RoleMaster, GenerationID: 7}},
		&RoleReply{Header: h, RoleBody: RoleBody{Role: RoleSlave, GenerationID: 8}},
	}
}
