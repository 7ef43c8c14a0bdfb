package ovsdb

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
)

// OVSDB values (RFC 7047 §5.1) are represented in Go as:
//
//	string, int64, float64, bool   atoms
//	UUID                           ["uuid", "<36-char uuid>"]
//	NamedUUID                      ["named-uuid", "<name>"] (only in requests)
//	Set                            ["set", [atom, ...]]
//	Map                            ["map", [[key, value], ...]]
//
// Decoded values always use exactly these types. When encoding, the
// convenience types int, int32, uint16, []string, []UUID, map[string]string
// are accepted as well and converted.

// UUID is an OVSDB row UUID.
type UUID string

// NamedUUID refers to a row inserted earlier in the same transaction by its
// "uuid-name".
type NamedUUID string

// Set is an OVSDB set of atoms.
type Set []any

// Map is an OVSDB map. Keys are atoms (string, int64, float64, bool, UUID).
type Map map[any]any

// ErrBadValue is wrapped by every error about a malformed OVSDB value.
var ErrBadValue = errors.New("ovsdb: malformed value")

var (
	uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	// idRE is the RFC 7047 <id>: named-uuid names and json-value ids.
	idRE = regexp.MustCompile(`^[_A-Za-z][_A-Za-z0-9]*$`)
)

// ValidUUID reports whether s is a 36-character UUID.
func ValidUUID(s string) bool { return uuidRE.MatchString(s) }

// MarshalJSON encodes ["uuid", u].
func (u UUID) MarshalJSON() ([]byte, error) {
	if !ValidUUID(string(u)) {
		return nil, fmt.Errorf("%w: invalid uuid %q", ErrBadValue, string(u))
	}
	return json.Marshal([]string{"uuid", string(u)})
}

// MarshalJSON encodes ["named-uuid", n].
func (n NamedUUID) MarshalJSON() ([]byte, error) {
	if !idRE.MatchString(string(n)) {
		return nil, fmt.Errorf("%w: invalid named-uuid %q", ErrBadValue, string(n))
	}
	return json.Marshal([]string{"named-uuid", string(n)})
}

// MarshalJSON encodes ["set", [...]].
func (s Set) MarshalJSON() ([]byte, error) {
	elems := make([]any, 0, len(s))
	for _, e := range s {
		a, err := encodeAtom(e)
		if err != nil {
			return nil, err
		}
		elems = append(elems, a)
	}
	return json.Marshal([]any{"set", elems})
}

// MarshalJSON encodes ["map", [[k, v], ...]], pairs sorted by key.
func (m Map) MarshalJSON() ([]byte, error) {
	pairs := make([][2]any, 0, len(m))
	for k, v := range m {
		ek, err := encodeAtom(k)
		if err != nil {
			return nil, err
		}
		ev, err := encodeAtom(v)
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, [2]any{ek, ev})
	}
	sort.Slice(pairs, func(i, j int) bool { return atomLess(pairs[i][0], pairs[j][0]) })
	return json.Marshal([]any{"map", pairs})
}

// atomLess orders atoms of one type (mixed types by type name) so encoded
// maps are deterministic.
func atomLess(a, b any) bool {
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return x < y
		}
	case int64:
		if y, ok := b.(int64); ok {
			return x < y
		}
	case float64:
		if y, ok := b.(float64); ok {
			return x < y
		}
	case UUID:
		if y, ok := b.(UUID); ok {
			return x < y
		}
	case NamedUUID:
		if y, ok := b.(NamedUUID); ok {
			return x < y
		}
	case bool:
		if y, ok := b.(bool); ok {
			return !x && y
		}
	}
	return fmt.Sprintf("%T", a) < fmt.Sprintf("%T", b)
}

// encodeAtom converts a Go atom to its canonical type.
func encodeAtom(v any) (any, error) {
	switch x := v.(type) {
	case string, bool, UUID, NamedUUID:
		return x, nil
	case int64:
		return x, nil
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%w: real %v", ErrBadValue, x)
		}
		return x, nil
	}
	return nil, fmt.Errorf("%w: %T is not an atom", ErrBadValue, v)
}

// Encode converts a Go value to one of the canonical value types (atom, Set,
// Map), accepting the convenience types listed above.
func Encode(v any) (any, error) {
	switch x := v.(type) {
	case Set:
		for _, e := range x {
			if _, err := encodeAtom(e); err != nil {
				return nil, err
			}
		}
		return x, nil
	case Map:
		for k, e := range x {
			if _, err := encodeAtom(k); err != nil {
				return nil, err
			}
			if _, err := encodeAtom(e); err != nil {
				return nil, err
			}
		}
		return x, nil
	case []string:
		s := make(Set, len(x))
		for i, e := range x {
			s[i] = e
		}
		return s, nil
	case []UUID:
		s := make(Set, len(x))
		for i, e := range x {
			s[i] = e
		}
		return s, nil
	case []NamedUUID:
		s := make(Set, len(x))
		for i, e := range x {
			s[i] = e
		}
		return s, nil
	case []int64:
		s := make(Set, len(x))
		for i, e := range x {
			s[i] = e
		}
		return s, nil
	case map[string]string:
		m := make(Map, len(x))
		for k, e := range x {
			m[k] = e
		}
		return m, nil
	}
	return encodeAtom(v)
}

// DecodeValue decodes an OVSDB <value> without schema knowledge: a JSON
// string, number, boolean, ["uuid",…], ["named-uuid",…], ["set",[…]] or
// ["map",[[k,v],…]]. Integral numbers decode to int64, others to float64.
// It never panics; malformed input gives an error wrapping ErrBadValue.
func DecodeValue(data []byte) (any, error) {
	v, err := parseJSON(data)
	if err != nil {
		return nil, err
	}
	return valueFromJSON(v)
}

// parseJSON decodes one JSON value keeping numbers exact.
func parseJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadValue, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data", ErrBadValue)
	}
	return v, nil
}

// valueFromJSON converts a generic JSON value (numbers as json.Number) to
// an OVSDB value.
func valueFromJSON(v any) (any, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) != 2 {
		return atomFromJSON(v)
	}
	tag, _ := arr[0].(string)
	switch tag {
	case "set":
		elems, ok := arr[1].([]any)
		if !ok {
			return nil, fmt.Errorf("%w: set elements are not an array", ErrBadValue)
		}
		s := make(Set, 0, len(elems))
		for _, e := range elems {
			a, err := atomFromJSON(e)
			if err != nil {
				return nil, err
			}
			s = append(s, a)
		}
		return s, nil
	case "map":
		pairs, ok := arr[1].([]any)
		if !ok {
			return nil, fmt.Errorf("%w: map pairs are not an array", ErrBadValue)
		}
		m := make(Map, len(pairs))
		for _, p := range pairs {
			kv, ok := p.([]any)
			if !ok || len(kv) != 2 {
				return nil, fmt.Errorf("%w: map pair is not [key, value]", ErrBadValue)
			}
			k, err := atomFromJSON(kv[0])
			if err != nil {
				return nil, err
			}
			val, err := atomFromJSON(kv[1])
			if err != nil {
				return nil, err
			}
			m[k] = val
		}
		return m, nil
	}
	return atomFromJSON(v)
}

// atomFromJSON converts a JSON value to an atom.
func atomFromJSON(v any) (any, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return x, nil
	case json.Number:
		return numberAtom(x)
	case float64: // from decoders without UseNumber
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%w: real %v", ErrBadValue, x)
		}
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), nil
		}
		return x, nil
	case []any:
		if len(x) == 2 {
			tag, _ := x[0].(string)
			s, ok := x[1].(string)
			switch {
			case tag == "uuid" && ok:
				if !ValidUUID(s) {
					return nil, fmt.Errorf("%w: invalid uuid %q", ErrBadValue, s)
				}
				return UUID(s), nil
			case tag == "named-uuid" && ok:
				if !idRE.MatchString(s) {
					return nil, fmt.Errorf("%w: invalid named-uuid %q", ErrBadValue, s)
				}
				return NamedUUID(s), nil
			}
		}
		return nil, fmt.Errorf("%w: array is not an atom", ErrBadValue)
	}
	return nil, fmt.Errorf("%w: %T is not an atom", ErrBadValue, v)
}

func numberAtom(n json.Number) (any, error) {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, fmt.Errorf("%w: number %q out of range", ErrBadValue, string(n))
	}
	if f == 0 {
		f = 0 // -0 would encode as "-0" and decode again as integer 0
	}
	return f, nil
}

// conform converts a decoded value to the shape of its column: sets for
// columns that may hold other than exactly one value, maps for map columns,
// bare atoms otherwise; integers for integer columns.
func conform(ct *ColumnType, v any) (any, error) {
	if ct == nil {
		return v, nil
	}
	if ct.Value != nil {
		m, ok := v.(Map)
		if !ok {
			if s, isSet := v.(Set); isSet && len(s) == 0 { // tolerate empty set for empty map
				return Map{}, nil
			}
			return nil, fmt.Errorf("%w: %T for a map column", ErrBadValue, v)
		}
		out := make(Map, len(m))
		for k, e := range m {
			ck, err := conformAtom(ct.Key, k)
			if err != nil {
				return nil, err
			}
			ce, err := conformAtom(*ct.Value, e)
			if err != nil {
				return nil, err
			}
			out[ck] = ce
		}
		return out, nil
	}
	if ct.Scalar() {
		if s, ok := v.(Set); ok {
			if len(s) != 1 {
				return nil, fmt.Errorf("%w: %d values for a scalar column", ErrBadValue, len(s))
			}
			v = s[0]
		}
		return conformAtom(ct.Key, v)
	}
	var elems Set
	switch x := v.(type) {
	case Set:
		elems = x
	case Map:
		return nil, fmt.Errorf("%w: map for a set column", ErrBadValue)
	default:
		elems = Set{x}
	}
	out := make(Set, 0, len(elems))
	for _, e := range elems {
		ce, err := conformAtom(ct.Key, e)
		if err != nil {
			return nil, err
		}
		out = append(out, ce)
	}
	return out, nil
}

func conformAtom(bt BaseType, v any) (any, error) {
	switch bt.Type {
	case "integer":
		switch x := v.(type) {
		case int64:
			return x, nil
		case float64:
			if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
				return int64(x), nil
			}
		}
	case "real":
		switch x := v.(type) {
		case float64:
			return x, nil
		case int64:
			return float64(x), nil
		}
	case "boolean":
		if x, ok := v.(bool); ok {
			return x, nil
		}
	case "string":
		if x, ok := v.(string); ok {
			return x, nil
		}
	case "uuid":
		switch x := v.(type) {
		case UUID, NamedUUID:
			return x, nil
		}
	default:
		return v, nil // unknown base type: keep as decoded
	}
	return nil, fmt.Errorf("%w: %T for a %s", ErrBadValue, v, bt.Type)
}
