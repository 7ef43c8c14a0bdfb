package ovsdb

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"
)

const testUUID = "2f8f2d4c-6a8e-4e9b-9d57-0c1f7a5b3e21"

func TestEncodeValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		want string
	}{
		{"string", "a", `"a"`},
		{"int", 5, `5`},
		{"int64", int64(-7), `-7`},
		{"uint16", uint16(4789), `4789`},
		{"real", 1.5, `1.5`},
		{"bool", true, `true`},
		{"uuid", UUID(testUUID), `["uuid","` + testUUID + `"]`},
		{"named-uuid", NamedUUID("row1"), `["named-uuid","row1"]`},
		{"empty set", Set{}, `["set",[]]`},
		{"set", Set{"a", int64(1), UUID(testUUID)}, `["set",["a",1,["uuid","` + testUUID + `"]]]`},
		{"string slice", []string{"OpenFlow10", "OpenFlow13"}, `["set",["OpenFlow10","OpenFlow13"]]`},
		{"uuid slice", []UUID{testUUID}, `["set",[["uuid","` + testUUID + `"]]]`},
		{"named slice", []NamedUUID{"a", "b"}, `["set",[["named-uuid","a"],["named-uuid","b"]]]`},
		{"empty map", Map{}, `["map",[]]`},
		{"string map sorted", map[string]string{"b": "2", "a": "1", "c": "3"}, `["map",[["a","1"],["b","2"],["c","3"]]]`},
		{"int map sorted", Map{int64(2): "x", int64(1): "y"}, `["map",[[1,"y"],[2,"x"]]]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Encode(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
			// Round trip (named-uuid decodes as such; int → int64).
			back, err := DecodeValue(got)
			if err != nil {
				t.Fatal(err)
			}
			again, err := json.Marshal(back)
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != tc.want {
				t.Errorf("round trip %s → %s", got, again)
			}
		})
	}
}

func TestEncodeRejects(t *testing.T) {
	for name, in := range map[string]any{
		"bad uuid":        UUID("nope"),
		"bad named":       NamedUUID("1abc"),
		"named with dash": NamedUUID("a-b"),
		"nan":             math.NaN(),
		"inf":             math.Inf(1),
		"nested set":      Set{Set{"a"}},
		"struct":          struct{}{},
		"map value":       Map{"a": []string{"x"}},
		"nil":             nil,
	} {
		t.Run(name, func(t *testing.T) {
			if v, err := Encode(in); err == nil {
				if _, err := json.Marshal(v); err == nil {
					t.Errorf("%#v encoded without error", in)
				}
			}
		})
	}
}

func TestOperationJSON(t *testing.T) {
	where := []Condition{Eq("name", "br0")}
	for _, tc := range []struct {
		op   Operation
		want string
	}{
		{Insert("Bridge", Row{"name": "br0", "protocols": []string{"OpenFlow13"}}, "br"),
			`{"op":"insert","row":{"name":"br0","protocols":["set",["OpenFlow13"]]},"table":"Bridge","uuid-name":"br"}`},
		{Insert("Controller", Row{"target": "tcp:127.0.0.1:6633"}, ""),
			`{"op":"insert","row":{"target":"tcp:127.0.0.1:6633"},"table":"Controller"}`},
		{Update("Port", Row{"tag": int64(5)}, where...),
			`{"op":"update","row":{"tag":5},"table":"Port","where":[["name","==","br0"]]}`},
		{Mutate("Bridge", where, MutateInsert("ports", Set{NamedUUID("p")}), MutateDelete("external_ids", Set{"k"})),
			`{"mutations":[["ports","insert",["set",[["named-uuid","p"]]]],["external_ids","delete",["set",["k"]]]],"op":"mutate","table":"Bridge","where":[["name","==","br0"]]}`},
		{Delete("Interface", Eq("_uuid", UUID(testUUID))),
			`{"op":"delete","table":"Interface","where":[["_uuid","==",["uuid","` + testUUID + `"]]]}`},
		{Delete("Interface"), `{"op":"delete","table":"Interface","where":[]}`},
		{Select("Interface", []string{"ofport"}, Eq("name", "p1")),
			`{"columns":["ofport"],"op":"select","table":"Interface","where":[["name","==","p1"]]}`},
		{Select("Interface", nil), `{"op":"select","table":"Interface","where":[]}`},
		{Wait("Bridge", where, []string{"name"}, "==", []Row{{"name": "br0"}}, 0),
			`{"columns":["name"],"op":"wait","rows":[{"name":"br0"}],"table":"Bridge","timeout":0,"until":"==","where":[["name","==","br0"]]}`},
		{Comment("hi"), `{"comment":"hi","op":"comment"}`},
		{Operation{Op: "commit", Durable: true}, `{"durable":true,"op":"commit"}`},
		{Operation{Op: "abort"}, `{"op":"abort"}`},
	} {
		got, err := json.Marshal(tc.op)
		if err != nil {
			t.Errorf("%s: %v", tc.op.Op, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.op.Op, got, tc.want)
		}
	}
	for _, bad := range []Operation{
		{Op: "frobnicate"},
		Insert("Bridge", Row{}, "bad-name"),
		Insert("Bridge", Row{"x": struct{}{}}, ""),
		Update("Bridge", Row{}, Eq("x", math.NaN())),
	} {
		if _, err := json.Marshal(bad); err == nil {
			t.Errorf("%+v encoded without error", bad)
		}
	}
}

func TestDecodeValue(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want any
	}{
		{`"x"`, "x"},
		{`42`, int64(42)},
		{`-1`, int64(-1)},
		{`2.5`, 2.5},
		{`1e2`, 100.0},
		{`false`, false},
		{`["uuid","` + testUUID + `"]`, UUID(testUUID)},
		{`["named-uuid","a_1"]`, NamedUUID("a_1")},
		{`["set",[]]`, Set{}},
		{`["set",[1,"a"]]`, Set{int64(1), "a"}},
		{`["map",[["a","b"],[1,true]]]`, Map{"a": "b", int64(1): true}},
		{` "x" `, "x"},
	} {
		got, err := DecodeValue([]byte(tc.in))
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %#v, want %#v", tc.in, got, tc.want)
		}
	}
	for _, in := range []string{
		``, `null`, `{}`, `[]`, `["set"]`, `["set",{}]`, `["set",[["set",[]]]]`,
		`["map",[["a"]]]`, `["map",[[["set",[]],1]]]`, `["map",{}]`, `["uuid","x"]`,
		`["uuid",1]`, `["named-uuid","1x"]`, `["other",1]`, `1e400`, `"a" "b"`, `[1,2,3]`,
		`["set",[null]]`, `{"a":1}`,
	} {
		if v, err := DecodeValue([]byte(in)); err == nil || !errors.Is(err, ErrBadValue) {
			t.Errorf("%q: got %#v, %v; want ErrBadValue", in, v, err)
		}
	}
}

func TestConform(t *testing.T) {
	scalarInt := &ColumnType{Key: BaseType{Type: "integer"}, Min: 1, Max: 1}
	optInt := &ColumnType{Key: BaseType{Type: "integer"}, Min: 0, Max: 1}
	strSet := &ColumnType{Key: BaseType{Type: "string"}, Min: 0, Max: Unlimited}
	strMap := &ColumnType{Key: BaseType{Type: "string"}, Value: &BaseType{Type: "string"}, Min: 0, Max: Unlimited}
	real := &ColumnType{Key: BaseType{Type: "real"}, Min: 1, Max: 1}
	for _, tc := range []struct {
		ct   *ColumnType
		in   any
		want any
	}{
		{scalarInt, int64(3), int64(3)},
		{scalarInt, Set{int64(3)}, int64(3)},
		{scalarInt, 3.0, int64(3)},
		{optInt, int64(3), Set{int64(3)}},
		{optInt, Set{}, Set{}},
		{strSet, "a", Set{"a"}},
		{strMap, Map{"k": "v"}, Map{"k": "v"}},
		{strMap, Set{}, Map{}},
		{real, int64(2), 2.0},
	} {
		got, err := conform(tc.ct, tc.in)
		if err != nil {
			t.Errorf("conform(%+v, %#v): %v", tc.ct, tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("conform(%+v, %#v) = %#v, want %#v", tc.ct, tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		ct *ColumnType
		in any
	}{
		{scalarInt, "x"}, {scalarInt, Set{}}, {scalarInt, 1.5}, {strSet, Map{}},
		{strMap, "x"}, {strMap, Map{int64(1): "v"}}, {optInt, Set{"x"}},
	} {
		if got, err := conform(tc.ct, tc.in); err == nil {
			t.Errorf("conform(%+v, %#v) = %#v, want error", tc.ct, tc.in, got)
		}
	}
}

func TestRowAccessors(t *testing.T) {
	r := Row{
		"_uuid":        UUID(testUUID),
		"name":         "br0",
		"fail_mode":    Set{"secure"},
		"tag":          Set{},
		"ofport":       Set{int64(3)},
		"protocols":    Set{"OpenFlow13", "OpenFlow10"},
		"external_ids": Map{"a": "1", int64(2): "ignored"},
		"ports":        Set{UUID(testUUID)},
	}
	if r.UUID() != testUUID || r.String("name") != "br0" || r.String("fail_mode") != "secure" || r.String("missing") != "" {
		t.Errorf("string accessors wrong")
	}
	if _, ok := r.Int("tag"); ok {
		t.Errorf("empty tag reported as set")
	}
	if n, ok := r.Int("ofport"); !ok || n != 3 {
		t.Errorf("ofport = %d %v", n, ok)
	}
	if got := r.Strings("protocols"); !reflect.DeepEqual(got, []string{"OpenFlow10", "OpenFlow13"}) {
		t.Errorf("protocols = %v", got)
	}
	if got := r.StringMap("external_ids"); !reflect.DeepEqual(got, map[string]string{"a": "1"}) {
		t.Errorf("external_ids = %v", got)
	}
	if got := r.UUIDs("ports"); len(got) != 1 {
		t.Errorf("ports = %v", got)
	}
	c := r.Clone()
	c["protocols"].(Set)[0] = "changed"
	if r["protocols"].(Set)[0] == "changed" {
		t.Errorf("Clone shares sets")
	}
}

func TestDecodeTxnResult(t *testing.T) {
	s := testSchema(t)
	ops := []Operation{Insert("Bridge", Row{"name": "b"}, ""), Select("Bridge", nil), Delete("Bridge")}
	res, err := decodeTxnResult(s, ops, json.RawMessage(`[{"uuid":["uuid","`+testUUID+`"]},{"rows":[{"name":"b","ports":["set",[]],"fail_mode":"secure"}]},{"count":2}]`))
	if err != nil {
		t.Fatal(err)
	}
	if res[0].UUID != testUUID || res[2].Count != 2 || len(res[1].Rows) != 1 {
		t.Fatalf("results %+v", res)
	}
	if fm, ok := res[1].Rows[0]["fail_mode"].(Set); !ok || len(fm) != 1 {
		t.Errorf("optional column not typed as set: %#v", res[1].Rows[0]["fail_mode"])
	}

	for _, tc := range []struct {
		raw   string
		index int
		op    string
		temp  bool
	}{
		{`[{},{"error":"timed out","details":"x"},null]`, 1, "select", true},
		{`[{"uuid":["uuid","` + testUUID + `"]},{},{},{"error":"constraint violation"}]`, 3, "", false},
		{`[{"error":"referential integrity violation"},null,null]`, 0, "insert", false},
	} {
		_, err := decodeTxnResult(s, ops, json.RawMessage(tc.raw))
		var te *TxnError
		if !errors.As(err, &te) {
			t.Errorf("%s: %v is not a *TxnError", tc.raw, err)
			continue
		}
		if te.Index != tc.index || te.Op != tc.op || te.Temporary() != tc.temp || IsTemporary(err) != tc.temp {
			t.Errorf("%s: got %+v", tc.raw, te)
		}
	}
	for _, raw := range []string{`{}`, `[{}]`, `[1,2,3]`, `[{"uuid":"x"},{},{}]`, `[{"rows":[1]},{},{}]`} {
		if _, err := decodeTxnResult(s, ops, json.RawMessage(raw)); err == nil {
			t.Errorf("%s accepted", raw)
		}
	}
}

func TestParseSchema(t *testing.T) {
	s := testSchema(t)
	br := s.Tables["Bridge"]
	if br == nil {
		t.Fatal("no Bridge table")
	}
	if ct := br.Columns["name"]; !ct.Scalar() || ct.Key.Type != "string" {
		t.Errorf("Bridge.name = %+v", ct)
	}
	if ct := br.Columns["ports"]; ct.Scalar() || ct.Key.RefTable != "Port" || ct.Max != Unlimited || ct.Min != 0 {
		t.Errorf("Bridge.ports = %+v", ct)
	}
	if ct := br.Columns["external_ids"]; !ct.IsMap() {
		t.Errorf("Bridge.external_ids = %+v", ct)
	}
	if ct := s.Tables["Port"].Columns["tag"]; ct.Max != 1 || ct.Min != 0 || ct.Key.Type != "integer" {
		t.Errorf("Port.tag = %+v", ct)
	}
	if !s.Tables["Open_vSwitch"].IsRoot {
		t.Errorf("Open_vSwitch not root")
	}
	for _, bad := range []string{`{}`, `[]`, `{"name":"x","tables":{"t":{"columns":{"c":{"type":{"key":{}}}}}}}`,
		`{"name":"x","tables":{"t":{"columns":{"c":{"type":{"key":"string","max":"lots"}}}}}}`} {
		if _, err := ParseSchema([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
