// Package openflow13 is a small, stdlib-only OpenFlow 1.3 codec (wire version 4) with
// the OVS extensions the Contiv pipelines need (docs/dataplane.md §2, §7): the TCP_FLAGS OXM
// (OF1.5 field 42 in the basic class) and the NXM_NX tunnel-address and register
// fields for decoding. No Nicira actions or vendor messages are modelled (§2.9 uses
// none); they decode as ActionUnknown / Experimenter and re-encode byte for byte.
//
// # Messages
//
// Every message is a pointer to a struct that embeds Header and implements Message:
//
//	type Message interface {
//		MsgHeader() *Header            // Version, Type, Length, Xid
//		MsgType() uint8                // TypeFlowMod, ...
//		MarshalBinary() ([]byte, error) // whole framed message
//		UnmarshalBinary([]byte) error   // whole framed message
//	}
//
// On encoding only Header.Xid (and Version, 0 meaning 4) is taken from the struct; type
// and length are computed. Modelled: Hello, ErrorMsg (implements error), EchoRequest,
// EchoReply, Experimenter, FeaturesRequest, FeaturesReply, GetConfigRequest,
// GetConfigReply, SetConfig, PacketIn, FlowRemoved, PortStatus, PacketOut, FlowMod,
// GroupMod, MultipartRequest, MultipartReply, BarrierRequest, BarrierReply, RoleRequest,
// RoleReply. Any other type decodes to *Unknown.
//
// # Sending a flow
//
//	fm := openflow13.NewFlowMod(1, 100, cookie) // ADD, NO_BUFFER, out_port/group ANY
//	fm.Xid = nextXid()
//	fm.Match = openflow13.NewMatch(                // sorted prerequisites-first
//		openflow13.OXMInPort(3),
//		openflow13.OXMEthType(0x0800),
//	)
//	fm.Instructions = []openflow13.Instruction{
//		openflow13.InstrWriteMetadata{Metadata: 0x100050000, Mask: 0xff7fff0000},
//		openflow13.InstrApplyActions{Actions: []openflow13.Action{
//			openflow13.ActionPushVLAN{EtherType: 0x8100},
//			openflow13.ActionSetField{Field: openflow13.OXMVlanVID(1)},
//			openflow13.ActionOutput{Port: openflow13.OFPPController, MaxLen: openflow13.OFPCMLNoBuffer},
//		}},
//		openflow13.InstrGotoTable{TableID: 3},
//	}
//	err := openflow13.WriteMessage(conn, fm) // or fm.MarshalBinary()
//	fmt.Println(fm) // "cookie=0x5, table=1, priority=100,ip,in_port=3 actions=..."
//
// Use FlowModifyStrict to change a flow's actions, NewFlowDeleteByCookie to remove one,
// GroupMod{Command: GroupModify, GroupType: GroupTypeAll, GroupID: id, Buckets:
// []Bucket{NewBucket(actions...)}} for floods, NewPacketOut(frame, actions...) for
// packet-outs, NewFlowStatsRequest(table, cookie, mask) for statistics, NewHello(1, 4)
// for the handshake (bitmap 0x12) and NewEchoReply(req) for keepalives.
//
// Match fields keep the order given when encoded; NewMatch sorts them into the field
// table's emission order (prerequisites first, as OVS validates in TLV order) and
// Match.CheckPrereqs verifies an order. The field table (FieldDefs, LookupField) gives
// each field's OVS name, class, id, length, maskability and prerequisites.
//
// # Receiving
//
//	for {
//		msg, err := openflow13.ReadMessage(conn) // handles partial reads
//		var pe *openflow13.ParseError
//		if errors.As(err, &pe) {
//			log(pe)   // bad body; the stream is still in sync
//			continue
//		} else if err != nil {
//			return err // I/O error or length < 8: drop the connection
//		}
//		switch m := msg.(type) {
//		case *openflow13.EchoRequest:
//			openflow13.WriteMessage(conn, openflow13.NewEchoReply(m))
//		case *openflow13.PacketIn:
//			port, _ := m.Match.InPort()
//			tun, ok := m.Match.Basic(openflow13.OXMFieldTunnelID) // tun.Uint()
//		case *openflow13.ErrorMsg:
//			log(m) // "openflow error OFPET_BAD_MATCH/OFPBMC_BAD_PREREQ (xid=0x5) for OFPT_FLOW_MOD"
//		case *openflow13.MultipartReply: // m.Flows / m.Ports / m.Groups by m.MPType
//		}
//	}
//
// Parse decodes one complete frame. Decoders never panic and never trust a length:
// unknown messages, OXM fields, actions, instructions and multipart bodies are kept raw
// (Unknown, OXM with Def()==nil, ActionUnknown, InstrUnknown, MultipartReply.Body).
//
// # Text
//
// FlowMod.String, FlowStats.String, MatchString, InstructionsString, ActionsString,
// GroupMod.String and GroupDesc.String render in the syntax of
// `ovs-ofctl -O OpenFlow13 --no-stats dump-flows` / `dump-groups` of OVS 3.1 (OVS's field
// order and protocol shorthands, not wire order), so unit tests and integration tests
// can compare the same strings.
package openflow13
