package contivmodel

// Link is a reference to another model object, encoded
// {"type":"<type>","key":"<key>"}, or {} when unset (docs/rest-api.md §1.8).
type Link struct {
	ObjType string `json:"type,omitempty"`
	ObjKey  string `json:"key,omitempty"`
}

// NewLink returns a link to the object of type typ (one of the Type*
// constants) with key key.
func NewLink(typ, key string) Link { return Link{ObjType: typ, ObjKey: key} }

// IsSet reports whether the link points at an object.
func (l Link) IsSet() bool { return l.ObjKey != "" }

// LinkSet is a set of links keyed by the target's key. It is omitted from
// JSON when empty.
type LinkSet map[string]Link

// Add puts l into the set (allocating the map when needed).
func (s *LinkSet) Add(l Link) {
	if *s == nil {
		*s = LinkSet{}
	}
	(*s)[l.ObjKey] = l
}

// Remove deletes the link with target key key (no-op when absent). An empty
// set becomes nil again.
func (s *LinkSet) Remove(key string) {
	delete(*s, key)
	if len(*s) == 0 {
		*s = nil
	}
}

// Has reports whether the set holds a link to key.
func (s LinkSet) Has(key string) bool {
	_, ok := s[key]
	return ok
}
