package openflow13_test

import (
	"bytes"
	"fmt"

	of "github.com/contiv/netplugin/ofnet/openflow13"
)

func Example() {
	fm := of.NewFlowMod(1, 100, 5)
	fm.Xid = 7
	fm.Match = of.NewMatch(of.OXMEthType(0x0800), of.OXMInPort(3)) // sorted: in_port first
	fm.Instructions = []of.Instruction{
		of.InstrWriteMetadata{Metadata: 0x100050000, Mask: 0xff7fff0000},
		of.InstrApplyActions{Actions: []of.Action{
			of.ActionSetField{Field: of.OXMIPDSCP(10)},
			of.ActionPushVLAN{EtherType: 0x8100},
			of.ActionSetField{Field: of.OXMVlanVID(1)},
		}},
		of.InstrGotoTable{TableID: 3},
	}
	var conn bytes.Buffer // a net.Conn in real life
	if err := of.WriteMessage(&conn, fm); err != nil {
		panic(err)
	}
	msg, err := of.ReadMessage(&conn)
	if err != nil {
		panic(err)
	}
	got := msg.(*of.FlowMod)
	fmt.Println(got.Xid, got)
	// Output:
	// 7 cookie=0x5, table=1, priority=100,ip,in_port=3 actions=set_field:10->ip_dscp,push_vlan:0x8100,set_field:4097->vlan_vid,write_metadata:0x100050000/0xff7fff0000,goto_table:3
}
