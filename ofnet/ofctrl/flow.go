package ofctrl

import (
	"bytes"
	"fmt"
	"sort"

	of "github.com/contiv/netplugin/ofnet/openflow13"
)

// Flow is one OpenFlow 1.3 flow entry as the controller records and installs it.
// Its identity on the switch (OpenFlow's "strict" identity) is Table + Priority + Match;
// Cookie and Instructions are its content. Timeouts are not modelled: a recorded flow
// lives until it is deleted, so that Resync can always restore it.
//
// Match fields may be given in any order: flow mods are sent with the fields sorted
// into the codec's prerequisite-first order (openflow13.NewMatch).
type Flow struct {
	Table        uint8
	Priority     uint16
	Cookie       uint64
	Match        of.Match
	Instructions []of.Instruction
}

// FlowKey is the exact identity of a flow on a switch: table, priority and the canonical
// encoding of the match (fields sorted by class and id, values AND-ed with their masks,
// all-ones masks dropped and all-zero-mask fields removed, as OVS normalises them). Two
// matches that OVS treats as the same flow have the same key, whatever order or
// redundant masks they were written with. FlowKey is comparable and usable as a map key.
type FlowKey struct {
	Table    uint8
	Priority uint16
	Match    string // canonical OXM TLV bytes
}

// Key returns the flow's identity.
func (f Flow) Key() FlowKey {
	return FlowKey{Table: f.Table, Priority: f.Priority, Match: canonicalMatch(f.Match)}
}

// String renders the flow in ovs-ofctl dump-flows syntax (without statistics).
func (f Flow) String() string { return f.flowMod(of.FlowAdd).String() }

// String renders the key as "table=T, priority=P,<match>" (ovs-ofctl syntax).
func (k FlowKey) String() string {
	m, err := decodeMatchTLVs([]byte(k.Match))
	if err != nil {
		return fmt.Sprintf("table=%d, priority=%d,<bad match: %v>", k.Table, k.Priority, err)
	}
	return fmt.Sprintf("table=%d, %s", k.Table, of.MatchString(m, k.Priority))
}

// FlowFromStats converts one flow-stats entry (from DumpFlows) into a Flow, dropping
// counters, durations, timeouts and flags.
func FlowFromStats(fs *of.FlowStats) Flow {
	return Flow{Table: fs.TableID, Priority: fs.Priority, Cookie: fs.Cookie,
		Match: fs.Match, Instructions: fs.Instructions}
}

// flowMod builds a flow mod for f with the given command (xid is set on sending).
func (f Flow) flowMod(cmd uint8) *of.FlowMod {
	fm := of.NewFlowMod(f.Table, f.Priority, f.Cookie)
	fm.Command = cmd
	fm.Match = of.NewMatch(f.Match.Fields...)
	fm.Instructions = f.Instructions
	return fm
}

// deleteStrict builds an OFPFC_DELETE_STRICT for the flow's identity (any cookie).
func (f Flow) deleteStrict() *of.FlowMod {
	fm := of.NewFlowMod(f.Table, f.Priority, 0)
	fm.Command = of.FlowDeleteStrict
	fm.Match = of.NewMatch(f.Match.Fields...)
	return fm
}

// canonicalMatch encodes the match's fields in the canonical form described at FlowKey.
func canonicalMatch(m of.Match) string {
	fs := make([]of.OXM, 0, len(m.Fields))
	for _, f := range m.Fields {
		f.Value = append([]byte(nil), f.Value...)
		if f.Class == of.OXMClassExperimenter && f.Experimenter == of.ONFExperimenterID {
			// OVS encodes OF1.5 fields (tcp_flags) in OF1.3 replies as ONF experimenter
			// OXMs with the same field number; either encoding is the same field.
			f.Class, f.Experimenter = of.OXMClassOpenFlowBasic, 0
		}
		if f.HasMask && len(f.Mask) == len(f.Value) {
			switch {
			case allBytes(f.Mask, 0xff):
				f.HasMask, f.Mask = false, nil
			case allBytes(f.Mask, 0x00):
				continue // matches anything: OVS drops the field
			default:
				for i := range f.Value {
					f.Value[i] &= f.Mask[i]
				}
			}
		}
		fs = append(fs, f)
	}
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].Class != fs[j].Class {
			return fs[i].Class < fs[j].Class
		}
		if fs[i].Experimenter != fs[j].Experimenter {
			return fs[i].Experimenter < fs[j].Experimenter
		}
		if fs[i].Field != fs[j].Field {
			return fs[i].Field < fs[j].Field
		}
		return bytes.Compare(fs[i].Value, fs[j].Value) < 0
	})
	b, err := of.Match{Fields: fs}.MarshalBinary()
	if err != nil {
		// An unencodable match cannot be installed either; key it by its error so it
		// stays distinct, and let the install report the encoding error.
		return "!" + err.Error()
	}
	return string(b)
}

func decodeMatchTLVs(b []byte) (of.Match, error) {
	var m of.Match
	if len(b) > 0 && b[0] == '!' {
		return m, fmt.Errorf("%s", b[1:])
	}
	err := m.UnmarshalBinary(b)
	return m, err
}

func allBytes(b []byte, v byte) bool {
	for _, c := range b {
		if c != v {
			return false
		}
	}
	return true
}

// instrOrder is the order in which OVS encodes OF1.3 instructions in flow-stats replies.
func instrOrder(t uint16) int {
	switch t {
	case of.OFPITMeter:
		return 0
	case of.OFPITApplyActions:
		return 1
	case of.OFPITClearActions:
		return 2
	case of.OFPITWriteActions:
		return 3
	case of.OFPITWriteMetadata:
		return 4
	case of.OFPITGotoTable:
		return 5
	}
	return 6
}

// canonicalInstructions encodes the instructions in OVS's order, without empty
// apply-actions instructions (OVS does not keep them). Content comparison of a recorded
// flow with a dumped one uses this encoding.
func canonicalInstructions(ins []of.Instruction) string {
	c := make([]of.Instruction, 0, len(ins))
	for _, in := range ins {
		if a, ok := in.(of.InstrApplyActions); ok && len(a.Actions) == 0 {
			continue
		}
		c = append(c, in)
	}
	sort.SliceStable(c, func(i, j int) bool {
		return instrOrder(c[i].InstructionType()) < instrOrder(c[j].InstructionType())
	})
	b, err := of.MarshalInstructions(c)
	if err != nil {
		return "!" + err.Error()
	}
	return string(b)
}

// Group is one OpenFlow group as recorded and installed.
type Group struct {
	ID      uint32
	Type    uint8 // openflow13.GroupTypeAll, ...Select, ...Indirect, ...FastFailover
	Buckets []of.Bucket
}

// String renders the group in ovs-ofctl dump-groups syntax.
func (g Group) String() string { return g.groupMod(of.GroupAdd).String() }

func (g Group) groupMod(cmd uint16) *of.GroupMod {
	gm := &of.GroupMod{Command: cmd, GroupType: g.Type, GroupID: g.ID}
	if cmd != of.GroupDelete {
		gm.Buckets = g.Buckets
	}
	return gm
}

// canonical encodes type and buckets for content comparison.
func (g Group) canonical() string {
	b, err := g.groupMod(of.GroupAdd).MarshalBinary()
	if err != nil {
		return "!" + err.Error()
	}
	return string(b[of.HeaderLen+2:]) // skip command; keep type, pad, id, buckets
}

// GroupFromDesc converts a group-desc entry (from DumpGroups) into a Group.
func GroupFromDesc(d *of.GroupDesc) Group {
	return Group{ID: d.GroupID, Type: d.GroupType, Buckets: d.Buckets}
}

// recFlow is a recorded flow with its precomputed identity and content encodings.
type recFlow struct {
	flow Flow
	ins  string // canonicalInstructions
}

func newRecFlow(f Flow) *recFlow {
	return &recFlow{flow: f, ins: canonicalInstructions(f.Instructions)}
}

// sameContent reports whether a dumped flow with the same key carries the recorded
// cookie and instructions.
func (r *recFlow) sameContent(cookie uint64, ins []of.Instruction) bool {
	return r.flow.Cookie == cookie && r.ins == canonicalInstructions(ins)
}
