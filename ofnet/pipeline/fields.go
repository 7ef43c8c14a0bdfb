package pipeline

import (
	"errors"
	"fmt"
)

// Metadata layout (64-bit OpenFlow metadata, docs/dataplane.md §3.0.3):
//
//	bit  0      RxVtep  packet entered from a VTEP             (table 1, VTEP flows)
//	bits 1–15   DstEPG  destination endpoint group id          (table 4)
//	bits 16–30  SrcEPG  source endpoint group id               (table 1)
//	bit  31     unused
//	bits 32–39  VRF     host-local VRF id                      (tables 1, 2)
//	bits 40–63  unused
//
// Example: VRF 1, EPG 5 → table-1 port flow writes 0x100050000/0xff7fff0000.
var (
	RxVtepField = MetadataField{Name: "RxVtep", Shift: 0, Bits: 1}
	DstEPGField = MetadataField{Name: "DstEPG", Shift: 1, Bits: 15}
	SrcEPGField = MetadataField{Name: "SrcEPG", Shift: 16, Bits: 15}
	VRFField    = MetadataField{Name: "VRF", Shift: 32, Bits: 8}
)

// ErrValueTooLarge is returned for a metadata value that does not fit its field (an
// EPG id above 32767, a VRF id above 255): refused, never truncated (quirk A6).
var ErrValueTooLarge = errors.New("pipeline: value does not fit its metadata field")

// MetadataField is a named bit range of the OpenFlow metadata.
type MetadataField struct {
	Name  string
	Shift uint // lowest bit
	Bits  uint // width
}

// Max is the largest value the field holds.
func (f MetadataField) Max() uint64 { return 1<<f.Bits - 1 }

// Mask is the field's bit mask within the metadata.
func (f MetadataField) Mask() uint64 { return f.Max() << f.Shift }

// Value returns v placed in the field, or an error wrapping ErrValueTooLarge.
func (f MetadataField) Value(v uint64) (uint64, error) {
	if v > f.Max() {
		return 0, fmt.Errorf("%s metadata field holds 0..%d, got %d: %w", f.Name, f.Max(), v, ErrValueTooLarge)
	}
	return v << f.Shift, nil
}

// Get extracts the field's value from metadata.
func (f MetadataField) Get(metadata uint64) uint64 { return metadata >> f.Shift & f.Max() }

// Registers (NXM_NX_REG<n>) the pipelines use. They are zero when a packet enters
// the pipeline and survive recirculation through the connection tracker.
//
//	reg0  SvcAffinityIPReg    provider IPv4 address a session-affinity binding names
//	reg1  SvcAffinityPortReg  that provider's port (low 16 bits)
//	reg2  SvcAffinitySrcPortReg  the client's L4 source port (low 16 bits)
//
// reg0 and reg1 are written by the affinity table (learned flows) or a select-group
// bucket and read by the affinity DNAT table; reg2 is written only so that OVS's
// cached datapath flow of a new affinity connection depends on the source port
// (docs/services.md, "Session affinity").
const (
	SvcAffinityIPReg      = 0
	SvcAffinityPortReg    = 1
	SvcAffinitySrcPortReg = 2
)
