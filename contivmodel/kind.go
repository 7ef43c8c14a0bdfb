package contivmodel

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
)

// Kind describes one object type of the model once: its names, key, field
// table and links. The generic collection, validator, HTTP handlers and the
// client all work from it; nothing is written per type beyond this table.
type Kind[T any] struct {
	// Name is the type name: link "type" string, modeldb directory and the
	// "<Name> not found" message (docs/rest-api.md §1.4).
	Name string
	// Plural is the URL segment: /api/v1/<Plural>/.
	Plural string
	// KeyFields are the JSON names whose values, joined by ":", form the
	// key. Empty for inspect-only kinds.
	KeyFields []string
	// Fields is the validation table, in evaluation order (ASCII order of
	// the JSON names, docs/rest-api.md §1.9). Every config field of T is listed, even
	// those without a rule.
	Fields []Field
	// LinkSets and Links name the members of T's "link-sets" and "links"
	// structs and the type each points at.
	LinkSets []LinkDef
	Links    []LinkDef
	// HasOper says inspect answers {"Config":…, "Oper":…}; otherwise only
	// {"Config":…}.
	HasOper bool
	// InspectOnly kinds (endpoint) have no stored objects and only the
	// inspect route, which answers {"Oper":…}.
	InspectOnly bool
	// New returns an empty object; new(T) when nil.
	New func() *T
}

// Field is one row of a kind's field table. The checks run in this order:
// Default (applied when the value is zero), MaxLen, Format, Range.
type Field struct {
	JSON    string         // JSON member name
	MaxLen  int            // >0: "<JSON> string too long" when longer (bytes)
	Format  *regexp.Regexp // full match required: "<JSON> string invalid format"
	Range   *Range         // int bounds: "<JSON> Value Out of bound"
	Default any            // string or int applied to a zero value
}

// Range is an inclusive integer range.
type Range struct{ Min, Max int }

// LinkDef names one link or link set and the type of its targets.
type LinkDef struct {
	Name string // JSON member name inside "links" / "link-sets"
	Type string // target type name
}

// schema is a Kind resolved against T by reflection once, at registration.
type schema struct {
	name        string
	plural      string
	goType      reflect.Type
	keyIdx      []int   // Key field
	keyFields   [][]int // fields forming the composite key
	keyNames    []string
	checks      []check
	configIdx   [][]int // every config field (for CopyConfig)
	linkSetsIdx []int   // nil when the type has no "link-sets"
	linksIdx    []int   // nil when the type has no "links"
	hasOper     bool
	inspectOnly bool
}

type check struct {
	Field
	idx  []int
	kind reflect.Kind // reflect.String, reflect.Int or reflect.Slice
}

// jsonName returns the JSON member name of a struct field ("" if skipped).
func jsonName(f reflect.StructField) string {
	tag, ok := f.Tag.Lookup("json")
	if !ok {
		return f.Name
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "-" {
		return ""
	}
	if name == "" {
		return f.Name
	}
	return name
}

// compile resolves k against T and checks that the table and the struct
// agree: every config field listed exactly once, rules matching the Go
// type, links and link sets matching the struct members.
func (k *Kind[T]) compile() (*schema, error) {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("kind %q: %v is not a struct", k.Name, t)
	}
	if k.Name == "" || k.Plural == "" {
		return nil, fmt.Errorf("kind %v: empty name or plural", t)
	}
	s := &schema{name: k.Name, plural: k.Plural, goType: t, hasOper: k.HasOper, inspectOnly: k.InspectOnly}
	byJSON := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := jsonName(f)
		switch name {
		case "":
			continue
		case "key":
			s.keyIdx = f.Index
		case "link-sets":
			s.linkSetsIdx = f.Index
		case "links":
			s.linksIdx = f.Index
		default:
			byJSON[name] = f
		}
	}
	if s.keyIdx == nil || t.FieldByIndex(s.keyIdx).Type.Kind() != reflect.String {
		return nil, fmt.Errorf("kind %q: %v has no string \"key\" field", k.Name, t)
	}
	seen := map[string]bool{}
	for _, fd := range k.Fields {
		f, ok := byJSON[fd.JSON]
		if !ok {
			return nil, fmt.Errorf("kind %q: field %q not in %v", k.Name, fd.JSON, t)
		}
		if seen[fd.JSON] {
			return nil, fmt.Errorf("kind %q: field %q listed twice", k.Name, fd.JSON)
		}
		seen[fd.JSON] = true
		c := check{Field: fd, idx: f.Index, kind: f.Type.Kind()}
		if err := c.verify(); err != nil {
			return nil, fmt.Errorf("kind %q: field %q: %w", k.Name, fd.JSON, err)
		}
		s.checks = append(s.checks, c)
		s.configIdx = append(s.configIdx, f.Index)
	}
	for name := range byJSON {
		if !seen[name] {
			return nil, fmt.Errorf("kind %q: field %q of %v missing from the field table", k.Name, name, t)
		}
	}
	for _, kf := range k.KeyFields {
		f, ok := byJSON[kf]
		if !ok || f.Type.Kind() != reflect.String {
			return nil, fmt.Errorf("kind %q: key field %q is not a string field", k.Name, kf)
		}
		s.keyFields = append(s.keyFields, f.Index)
		s.keyNames = append(s.keyNames, kf)
	}
	if len(s.keyFields) == 0 && !k.InspectOnly {
		return nil, fmt.Errorf("kind %q: no key fields", k.Name)
	}
	if err := checkLinkStruct(t, s.linkSetsIdx, k.LinkSets, reflect.TypeFor[LinkSet]()); err != nil {
		return nil, fmt.Errorf("kind %q link-sets: %w", k.Name, err)
	}
	if err := checkLinkStruct(t, s.linksIdx, k.Links, reflect.TypeFor[Link]()); err != nil {
		return nil, fmt.Errorf("kind %q links: %w", k.Name, err)
	}
	return s, nil
}

func (c check) verify() error {
	switch c.kind {
	case reflect.String:
		if c.Range != nil {
			return fmt.Errorf("range on a string field")
		}
		if c.Default != nil {
			if _, ok := c.Default.(string); !ok {
				return fmt.Errorf("default %v is not a string", c.Default)
			}
		}
	case reflect.Int:
		if c.MaxLen != 0 || c.Format != nil {
			return fmt.Errorf("length or format on an int field")
		}
		if c.Default != nil {
			if _, ok := c.Default.(int); !ok {
				return fmt.Errorf("default %v is not an int", c.Default)
			}
		}
	case reflect.Slice:
		if c.MaxLen != 0 || c.Format != nil || c.Range != nil || c.Default != nil {
			return fmt.Errorf("rules on a list field")
		}
	default:
		return fmt.Errorf("unsupported Go kind %v", c.kind)
	}
	return nil
}

// checkLinkStruct verifies that the struct at idx has exactly the members
// defs names, each of type want.
func checkLinkStruct(t reflect.Type, idx []int, defs []LinkDef, want reflect.Type) error {
	if idx == nil {
		if len(defs) > 0 {
			return fmt.Errorf("%v has no such member", t)
		}
		return nil
	}
	st := t.FieldByIndex(idx).Type
	if st.Kind() != reflect.Struct || st.NumField() != len(defs) {
		return fmt.Errorf("%v does not have the %d members defined", st, len(defs))
	}
	for i, d := range defs {
		f := st.Field(i)
		if jsonName(f) != d.Name || f.Type != want || d.Type == "" {
			return fmt.Errorf("%v member %d is %q %v, want %q %v", st, i, jsonName(f), f.Type, d.Name, want)
		}
	}
	return nil
}

// compositeKey joins the key fields of v with ":".
func (s *schema) compositeKey(v reflect.Value) string {
	parts := make([]string, len(s.keyFields))
	for i, idx := range s.keyFields {
		parts[i] = v.FieldByIndex(idx).String()
	}
	return strings.Join(parts, ":")
}

func (s *schema) key(v reflect.Value) string { return v.FieldByIndex(s.keyIdx).String() }

func (s *schema) setKey(v reflect.Value, key string) { v.FieldByIndex(s.keyIdx).SetString(key) }

// clearLinks drops client-supplied links and link sets (docs/rest-api.md §1.5).
func (s *schema) clearLinks(v reflect.Value) {
	for _, idx := range [][]int{s.linkSetsIdx, s.linksIdx} {
		if idx != nil {
			f := v.FieldByIndex(idx)
			f.SetZero()
		}
	}
}

// validate runs the key check and then the field table on v (a settable
// struct value), applying defaults. It returns the first failure.
func (s *schema) validate(v reflect.Value) error {
	if built := s.compositeKey(v); built != s.key(v) {
		// "Invalid Key" first: the original's whole message.
		return invalidf("Invalid Key: URL key %q differs from %q (%s in the body)",
			s.key(v), built, strings.Join(s.keyNames, ":"))
	}
	for _, c := range s.checks {
		f := v.FieldByIndex(c.idx)
		switch c.kind {
		case reflect.String:
			if c.Default != nil && f.String() == "" {
				f.SetString(c.Default.(string))
			}
			val := f.String()
			if c.MaxLen > 0 && len(val) > c.MaxLen {
				return invalidf("%s string too long", c.JSON)
			}
			if c.Format != nil && !c.Format.MatchString(val) {
				return invalidf("%s string invalid format", c.JSON)
			}
		case reflect.Int:
			if c.Default != nil && f.Int() == 0 {
				f.SetInt(int64(c.Default.(int)))
			}
			if c.Range != nil && (f.Int() < int64(c.Range.Min) || f.Int() > int64(c.Range.Max)) {
				return invalidf("%s Value Out of bound", c.JSON)
			}
		}
	}
	return nil
}

// copyConfig copies every config field (not key, links, link sets) from
// src to dst.
func (s *schema) copyConfig(dst, src reflect.Value) {
	for _, idx := range s.configIdx {
		dst.FieldByIndex(idx).Set(src.FieldByIndex(idx))
	}
}
