package state

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// MaxBitsetBits bounds a stored bitset: the largest is a /8 network's
// address map (2^24 bits, docs/daemons.md §3.6). The bitset library
// allocates what a value's 8-byte header claims before it reads the
// words, so a corrupt header could ask for exabytes; the types holding
// bitsets check their headers first (checkBitsets).
const MaxBitsetBits = 1 << 24

// checkBitsets checks the header of each named bitset field of the JSON
// object data: at most MaxBitsetBits, and the words it claims present.
func checkBitsets(data []byte, fields ...string) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return err
	}
	for _, f := range fields {
		raw, ok := obj[f]
		if !ok {
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return fmt.Errorf("bitset %q: %w", f, err)
		}
		if err := checkBitsetHeader(s); err != nil {
			return fmt.Errorf("bitset %q: %w", f, err)
		}
	}
	return nil
}

func checkBitsetHeader(s string) error {
	if len(s) < 12 {
		return fmt.Errorf("%d characters: no 8-byte header", len(s))
	}
	head, err := base64.URLEncoding.DecodeString(s[:12])
	if err != nil {
		return err
	}
	if len(head) < 8 {
		return fmt.Errorf("%q: no 8-byte header", s[:12])
	}
	n := binary.BigEndian.Uint64(head)
	if n > MaxBitsetBits {
		return fmt.Errorf("header claims %d bits, more than %d", n, MaxBitsetBits)
	}
	if have, need := uint64(base64.URLEncoding.DecodedLen(len(s))), 8+(n+63)/64*8; have < need {
		return fmt.Errorf("truncated: header claims %d bits, %d bytes present", n, have)
	}
	return nil
}

// UnmarshalJSON checks the bitset header before decoding.
func (v *VlanResource) UnmarshalJSON(data []byte) error {
	if err := checkBitsets(data, "vlans"); err != nil {
		return fmt.Errorf("vlan resource: %w", err)
	}
	type plain VlanResource
	return json.Unmarshal(data, (*plain)(v))
}

// UnmarshalJSON checks the bitset header before decoding.
func (v *VlanResourceOper) UnmarshalJSON(data []byte) error {
	if err := checkBitsets(data, "freeVLANs"); err != nil {
		return fmt.Errorf("vlan resource oper: %w", err)
	}
	type plain VlanResourceOper
	return json.Unmarshal(data, (*plain)(v))
}

// UnmarshalJSON checks the bitset headers before decoding.
func (v *VxlanResource) UnmarshalJSON(data []byte) error {
	if err := checkBitsets(data, "vxlans", "LocalVLANs"); err != nil {
		return fmt.Errorf("vxlan resource: %w", err)
	}
	type plain VxlanResource
	return json.Unmarshal(data, (*plain)(v))
}

// UnmarshalJSON checks the bitset headers before decoding.
func (v *VxlanResourceOper) UnmarshalJSON(data []byte) error {
	if err := checkBitsets(data, "freeVXLANs", "freeLocalVLANs"); err != nil {
		return fmt.Errorf("vxlan resource oper: %w", err)
	}
	type plain VxlanResourceOper
	return json.Unmarshal(data, (*plain)(v))
}

// UnmarshalJSON checks the bitset header before decoding.
func (v *Network) UnmarshalJSON(data []byte) error {
	if err := checkBitsets(data, "ipAllocMap"); err != nil {
		return fmt.Errorf("network: %w", err)
	}
	type plain Network
	return json.Unmarshal(data, (*plain)(v))
}

// UnmarshalJSON checks the bitset header before decoding.
func (v *EndpointGroup) UnmarshalJSON(data []byte) error {
	if err := checkBitsets(data, "epgIpAllocMap"); err != nil {
		return fmt.Errorf("endpoint group: %w", err)
	}
	type plain EndpointGroup
	return json.Unmarshal(data, (*plain)(v))
}
