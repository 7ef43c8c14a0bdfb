package resources

import (
	"strconv"
	"strings"
)

// TagKind says which tag space a range list is for.
type TagKind int

const (
	VLAN TagKind = iota
	VXLAN
)

func (k TagKind) String() string {
	if k == VXLAN {
		return "vxlan"
	}
	return "vlan"
}

// Limits of the tag spaces.
const (
	MaxVLAN        = 4095
	MaxVXLAN       = 65535
	MaxVXLANWidth  = 16000 // max - min of the VXLAN range
	vlanBits       = 4096
	vxlanBits      = 16384
	firstLocalVLAN = 1
	lastLocalVLAN  = 4094
)

// TagRange is an inclusive range of tags.
type TagRange struct{ Min, Max uint }

// ParseTagRanges parses a range list (docs/daemons.md §4.5): a comma
// separated list of "min-max" (spaces trimmed; a single number n is n-n);
// min ≥ 1 and min ≤ max; VLAN max 4095; VXLAN a single range, max 65535,
// max-min ≤ 16000. The empty string is the one range 0-0. Errors carry the
// original's messages.
func ParseTagRanges(s string, kind TagKind) ([]TagRange, error) {
	rs, err := splitRanges(s, kind)
	if err != nil {
		return nil, err
	}
	if err := checkRanges(s, rs, kind); err != nil {
		return nil, err
	}
	return rs, nil
}

// splitRanges is the syntax half of ParseTagRanges.
func splitRanges(s string, kind TagKind) ([]TagRange, error) {
	if strings.TrimSpace(s) == "" {
		return []TagRange{{0, 0}}, nil
	}
	var out []TagRange
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		lo, hi, isRange := strings.Cut(item, "-")
		if !isRange {
			hi = lo
		}
		min, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 32)
		max, err2 := strconv.ParseUint(strings.TrimSpace(hi), 10, 32)
		if err1 != nil || err2 != nil {
			return nil, userErr(ErrInvalidRange, "invalid range %s", item)
		}
		out = append(out, TagRange{uint(min), uint(max)})
	}
	if kind == VXLAN && len(out) > 1 {
		return nil, userErr(ErrInvalidRange, "invalid range %s, only one vxlan range is allowed", s)
	}
	return out, nil
}

// checkRanges is the semantic half of ParseTagRanges.
func checkRanges(s string, rs []TagRange, kind TagKind) error {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	items := strings.Split(s, ",")
	for i, r := range rs {
		item := strings.TrimSpace(items[i])
		switch {
		case r.Min > r.Max:
			return userErr(ErrInvalidRange, "invalid range %s, min is greater than max", item)
		case r.Min < 1:
			return userErr(ErrInvalidRange, "invalid range %s, values less than 1", item)
		case kind == VLAN && r.Max > MaxVLAN:
			return userErr(ErrInvalidRange, "invalid range %s, vlan values exceed %d max allowed", item, MaxVLAN)
		case kind == VXLAN && r.Max > MaxVXLAN:
			return userErr(ErrInvalidRange, "invalid range %s, vxlan values exceed %d max allowed", item, MaxVXLAN)
		case kind == VXLAN && r.Max-r.Min > MaxVXLANWidth:
			return userErr(ErrInvalidRange, "does not allow vxlan range to exceed %d range %s", MaxVXLANWidth, item)
		}
	}
	return nil
}

func (r TagRange) contains(t uint) bool { return t >= r.Min && t <= r.Max }

func inRanges(rs []TagRange, t uint) bool {
	for _, r := range rs {
		if r.contains(t) {
			return true
		}
	}
	return false
}

// FormatTags renders ascending tags as "1-3, 7" ("" when empty).
func FormatTags(tags []uint) string {
	var b strings.Builder
	for i := 0; i < len(tags); {
		j := i
		for j+1 < len(tags) && tags[j+1] == tags[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatUint(uint64(tags[i]), 10))
		if j > i {
			b.WriteString("-")
			b.WriteString(strconv.FormatUint(uint64(tags[j]), 10))
		}
		i = j + 1
	}
	return b.String()
}
