package ovsdb

import "sort"

// Typed accessors. They accept a column stored as a bare atom or as a set
// of one element, and return zero values for missing or mistyped columns.

// UUID returns the row's _uuid.
func (r Row) UUID() UUID {
	u, _ := r.atom("_uuid").(UUID)
	return u
}

func (r Row) atom(col string) any {
	v := r[col]
	if s, ok := v.(Set); ok {
		if len(s) != 1 {
			return nil
		}
		return s[0]
	}
	return v
}

// String returns a string column ("" when absent or empty).
func (r Row) String(col string) string {
	s, _ := r.atom(col).(string)
	return s
}

// Int returns an integer column; ok is false when the column is empty or
// not an integer.
func (r Row) Int(col string) (int64, bool) {
	i, ok := r.atom(col).(int64)
	return i, ok
}

// Ref returns a column holding one UUID.
func (r Row) Ref(col string) (UUID, bool) {
	u, ok := r.atom(col).(UUID)
	return u, ok
}

// Strings returns a set-of-strings column, sorted.
func (r Row) Strings(col string) []string {
	var out []string
	for _, e := range r.elems(col) {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// UUIDs returns a set-of-uuids column, sorted.
func (r Row) UUIDs(col string) []UUID {
	var out []UUID
	for _, e := range r.elems(col) {
		if u, ok := e.(UUID); ok {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (r Row) elems(col string) Set {
	switch v := r[col].(type) {
	case Set:
		return v
	case nil, Map:
		return nil
	default:
		return Set{v}
	}
}

// StringMap returns a string→string map column (never nil).
func (r Row) StringMap(col string) map[string]string {
	out := map[string]string{}
	m, _ := r[col].(Map)
	for k, v := range m {
		ks, ok1 := k.(string)
		vs, ok2 := v.(string)
		if ok1 && ok2 {
			out[ks] = vs
		}
	}
	return out
}

// Clone returns a copy of the row whose sets and maps are copied too.
func (r Row) Clone() Row {
	out := make(Row, len(r))
	for k, v := range r {
		switch x := v.(type) {
		case Set:
			out[k] = append(Set(nil), x...)
		case Map:
			m := make(Map, len(x))
			for mk, mv := range x {
				m[mk] = mv
			}
			out[k] = m
		default:
			out[k] = v
		}
	}
	return out
}
