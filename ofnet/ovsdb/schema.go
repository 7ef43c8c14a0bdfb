package ovsdb

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
)

// Schema is the part of a database schema (RFC 7047 §3.2) the client
// needs: tables, their columns and the columns' types.
type Schema struct {
	Name    string
	Version string
	Tables  map[string]*TableSchema
}

// TableSchema describes one table.
type TableSchema struct {
	Name    string
	Columns map[string]*ColumnType
	IsRoot  bool
	Indexes [][]string
}

// ColumnType is a column's <type>: a key base type, an optional value base
// type (map columns) and the number of elements allowed.
type ColumnType struct {
	Key   BaseType
	Value *BaseType
	Min   int
	// Max is the maximum number of elements; Unlimited for "unlimited".
	Max int
}

// Unlimited is ColumnType.Max for "max": "unlimited".
const Unlimited = math.MaxInt32

// BaseType is a <base-type>: an atomic type name ("integer", "real",
// "boolean", "string", "uuid") and, for uuids, the referenced table.
type BaseType struct {
	Type     string
	RefTable string
}

// Scalar reports whether the column holds exactly one atom.
func (c *ColumnType) Scalar() bool { return c.Value == nil && c.Min == 1 && c.Max == 1 }

// IsMap reports whether the column is a map.
func (c *ColumnType) IsMap() bool { return c.Value != nil }

// ColumnNames returns the table's column names, sorted.
func (t *TableSchema) ColumnNames() []string {
	names := make([]string, 0, len(t.Columns))
	for n := range t.Columns {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// column returns a column's type, including the implicit _uuid and
// _version columns.
func (t *TableSchema) column(name string) (*ColumnType, bool) {
	switch name {
	case "_uuid", "_version":
		return &ColumnType{Key: BaseType{Type: "uuid"}, Min: 1, Max: 1}, true
	}
	c, ok := t.Columns[name]
	return c, ok
}

// ParseSchema decodes a <database-schema>.
func ParseSchema(data []byte) (*Schema, error) {
	var raw struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		Tables  map[string]struct {
			Columns map[string]struct {
				Type json.RawMessage `json:"type"`
			} `json:"columns"`
			IsRoot  bool       `json:"isRoot"`
			Indexes [][]string `json:"indexes"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("ovsdb: parse schema: %w", err)
	}
	if raw.Name == "" {
		return nil, fmt.Errorf("ovsdb: parse schema: no name")
	}
	s := &Schema{Name: raw.Name, Version: raw.Version, Tables: make(map[string]*TableSchema, len(raw.Tables))}
	for tn, rt := range raw.Tables {
		ts := &TableSchema{Name: tn, Columns: make(map[string]*ColumnType, len(rt.Columns)), IsRoot: rt.IsRoot, Indexes: rt.Indexes}
		for cn, rc := range rt.Columns {
			ct, err := parseColumnType(rc.Type)
			if err != nil {
				return nil, fmt.Errorf("ovsdb: parse schema: column %s.%s: %w", tn, cn, err)
			}
			ts.Columns[cn] = ct
		}
		s.Tables[tn] = ts
	}
	return s, nil
}

func parseColumnType(data json.RawMessage) (*ColumnType, error) {
	var atomic string
	if err := json.Unmarshal(data, &atomic); err == nil {
		return &ColumnType{Key: BaseType{Type: atomic}, Min: 1, Max: 1}, nil
	}
	var raw struct {
		Key   json.RawMessage `json:"key"`
		Value json.RawMessage `json:"value"`
		Min   *int            `json:"min"`
		Max   json.RawMessage `json:"max"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	ct := &ColumnType{Min: 1, Max: 1}
	key, err := parseBaseType(raw.Key)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	ct.Key = key
	if len(raw.Value) > 0 {
		v, err := parseBaseType(raw.Value)
		if err != nil {
			return nil, fmt.Errorf("value: %w", err)
		}
		ct.Value = &v
	}
	if raw.Min != nil {
		ct.Min = *raw.Min
	}
	if len(raw.Max) > 0 {
		var n int
		var s string
		switch {
		case json.Unmarshal(raw.Max, &n) == nil:
			ct.Max = n
		case json.Unmarshal(raw.Max, &s) == nil && s == "unlimited":
			ct.Max = Unlimited
		default:
			return nil, fmt.Errorf("bad max %s", raw.Max)
		}
	}
	return ct, nil
}

func parseBaseType(data json.RawMessage) (BaseType, error) {
	var atomic string
	if err := json.Unmarshal(data, &atomic); err == nil {
		return BaseType{Type: atomic}, nil
	}
	var raw struct {
		Type     string `json:"type"`
		RefTable string `json:"refTable"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return BaseType{}, err
	}
	if raw.Type == "" {
		return BaseType{}, fmt.Errorf("no type")
	}
	return BaseType{Type: raw.Type, RefTable: raw.RefTable}, nil
}
