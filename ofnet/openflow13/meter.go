package openflow13

import "fmt"

// Meter-mod commands, flags and band types (ofp_meter_mod_command, ofp_meter_flags,
// ofp_meter_band_type).
const (
	MeterAdd    uint16 = 0
	MeterModify uint16 = 1
	MeterDelete uint16 = 2

	MeterFlagKbps  uint16 = 1 << 0
	MeterFlagPktps uint16 = 1 << 1
	MeterFlagBurst uint16 = 1 << 2
	MeterFlagStats uint16 = 1 << 3

	MeterBandDrop uint16 = 1

	// MeterAll (OFPM_ALL) names every meter in a DELETE.
	MeterAll uint32 = 0xffffffff
)

// MeterBand is a drop band (ofp_meter_band_drop): type(2)=1 len(2)=16 rate(4)
// burst_size(4) pad(4). Rate is in kbit/s or packets/s, BurstSize in kbit or packets,
// as the meter's flags say. Other band types are refused by the decoder.
type MeterBand struct {
	Rate      uint32
	BurstSize uint32
}

// MeterMod is OFPT_METER_MOD: command(2) flags(2) meter_id(4) bands (DELETE has none).
type MeterMod struct {
	Header
	Command uint16
	Flags   uint16
	MeterID uint32
	Bands   []MeterBand
}

func (*MeterMod) MsgType() uint8 { return TypeMeterMod }
func (m *MeterMod) appendBody(b []byte) ([]byte, error) {
	b = be.AppendUint16(b, m.Command)
	b = be.AppendUint16(b, m.Flags)
	b = be.AppendUint32(b, m.MeterID)
	for _, band := range m.Bands {
		b = be.AppendUint16(b, MeterBandDrop)
		b = be.AppendUint16(b, 16)
		b = be.AppendUint32(b, band.Rate)
		b = be.AppendUint32(b, band.BurstSize)
		b = appendZeros(b, 4)
	}
	return b, nil
}
func (m *MeterMod) decodeBody(r *reader) {
	m.Command = r.u16("command")
	m.Flags = r.u16("flags")
	m.MeterID = r.u32("meter_id")
	for r.left() > 0 && r.err == nil {
		typ, n := r.u16("band type"), r.u16("band len")
		if r.err == nil && (typ != MeterBandDrop || n != 16) {
			r.setErr(fmt.Errorf("%w: meter band type %d length %d (only drop bands of 16 bytes)", ErrBadLength, typ, n))
			return
		}
		band := MeterBand{Rate: r.u32("rate"), BurstSize: r.u32("burst_size")}
		r.skip(4, "pad")
		if r.err == nil {
			m.Bands = append(m.Bands, band)
		}
	}
}
func (m *MeterMod) MarshalBinary() ([]byte, error) { return marshalMsg(m) }
func (m *MeterMod) UnmarshalBinary(b []byte) error { return unmarshalMsg(m, b) }

// String renders the meter in ovs-ofctl's syntax ("meter=1 kbps burst bands=type=drop
// rate=1000 burst_size=100").
func (m *MeterMod) String() string {
	s := fmt.Sprintf("meter=%d", m.MeterID)
	for _, f := range []struct {
		bit  uint16
		name string
	}{{MeterFlagKbps, "kbps"}, {MeterFlagPktps, "pktps"}, {MeterFlagBurst, "burst"}, {MeterFlagStats, "stats"}} {
		if m.Flags&f.bit != 0 {
			s += " " + f.name
		}
	}
	if len(m.Bands) > 0 {
		s += " bands="
	}
	for i, band := range m.Bands {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf("type=drop rate=%d", band.Rate)
		if m.Flags&MeterFlagBurst != 0 {
			s += fmt.Sprintf(" burst_size=%d", band.BurstSize)
		}
	}
	return s
}
