package ovsdb

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"testing"
)

// FuzzDecodeValue: decoding never panics, a decoded value re-encodes, and
// encoding is stable (encode(decode(encode(v))) == encode(v)). Every
// column type of the test schema is applied to the value too.
func FuzzDecodeValue(f *testing.F) {
	for _, s := range []string{
		`"a"`, `1`, `-1.5`, `true`, `["uuid","` + testUUID + `"]`, `["named-uuid","x"]`,
		`["set",[]]`, `["set",["a","b"]]`, `["map",[["a","1"]]]`, `["map",[[1,2.5]]]`,
	} {
		f.Add([]byte(s))
	}
	schema := testSchema(f)
	var types []*ColumnType
	for _, ts := range schema.Tables {
		for _, ct := range ts.Columns {
			types = append(types, ct)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := DecodeValue(data)
		if err != nil {
			return
		}
		for _, ct := range types {
			conform(ct, v)
		}
		enc, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("decoded %#v does not encode: %v", v, err)
		}
		v2, err := DecodeValue(enc)
		if err != nil {
			t.Fatalf("%s does not decode again: %v", enc, err)
		}
		enc2, err := json.Marshal(v2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("unstable encoding: %s → %s (%v)", enc, enc2, err)
		}
		if _, ok := v.(float64); !ok && !reflect.DeepEqual(v, v2) {
			if _, isSet := v.(Set); !isSet {
				if _, isMap := v.(Map); !isMap {
					t.Fatalf("round trip changed %#v to %#v", v, v2)
				}
			}
		}
	})
}

// FuzzRPCMessage feeds a byte stream to the same decoding the reader
// goroutine does, then decodes any result as every reply the client
// understands (transact results, table updates, schemas). Nothing may
// panic.
func FuzzRPCMessage(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"result":["Open_vSwitch"],"error":null}`,
		`{"method":"echo","params":[],"id":"echo"}`,
		`{"method":"update","params":["netplugin",{"Bridge":{"` + testUUID + `":{"new":{"name":"br0","ports":["set",[]],"fail_mode":"secure"}}}}],"id":null}`,
		`{"method":"update","params":["netplugin",{"Port":{"` + testUUID + `":{"old":{"tag":1},"new":{"name":"p","tag":["set",[]]}}}}],"id":null}`,
		`{"id":2,"result":[{"uuid":["uuid","` + testUUID + `"]},{"count":1},{"rows":[{"ofport":3}]}],"error":null}`,
		`{"id":3,"result":[{"error":"constraint violation","details":"dup"}],"error":null}`,
		`{"id":4,"result":null,"error":{"error":"unknown database","details":"x"}}`,
		`{"id":5,"result":null,"error":"not leader"}`,
		`{"id":6,"result":{"name":"S","tables":{"T":{"columns":{"c":{"type":{"key":"integer","min":0,"max":"unlimited"}}}}}},"error":null}`,
	} {
		f.Add([]byte(s))
	}
	schema := testSchema(f)
	ops := []Operation{Insert("Bridge", Row{}, ""), Mutate("Bridge", nil), Select("Interface", nil)}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		for i := 0; i < 16; i++ {
			var m message
			if err := dec.Decode(&m); err != nil {
				if err == io.EOF {
					return
				}
				return
			}
			kind, err := m.classify()
			if err != nil {
				continue
			}
			switch kind {
			case kindResponse:
				responseID(m.ID)
				if responseError("x", &m) == nil {
					decodeTxnResult(schema, ops, m.Result)
					decodeTxnResult(nil, ops, m.Result)
					decodeTableUpdates(schema, m.Result)
					ParseSchema(m.Result)
				}
			case kindNotification, kindRequest:
				var p []json.RawMessage
				if json.Unmarshal(m.Params, &p) == nil && len(p) == 2 {
					decodeTableUpdates(schema, p[1])
					decodeTableUpdates(nil, p[1])
				}
			}
		}
	})
}

// TestMonitorSyncBadUpdate checks that an undecodable update after the
// initial sync drops the connection (so a reconnect rebuilds the cache)
// instead of leaving the cache silently wrong.
func TestMonitorSyncBadUpdate(t *testing.T) {
	c := newCache()
	ms := &monitorSync{cache: c, schema: testSchema(t)}
	var failed error
	ms.setFail(func(err error) { failed = err })
	if err := ms.synced([]string{"Bridge"}, nil); err != nil {
		t.Fatal(err)
	}
	ms.notify("update", json.RawMessage(`["netplugin",{"Bridge":{"`+testUUID+`":{"new":{"name":"b"}}}}]`))
	if n := len(c.Rows("Bridge")); n != 1 || failed != nil {
		t.Fatalf("good update: %d rows, %v", n, failed)
	}
	ms.notify("update", json.RawMessage(`["netplugin",{"Bridge":{"`+testUUID+`":{"new":{"name":5}}}}]`))
	if failed == nil {
		t.Fatal("bad update did not fail the connection")
	}
	ms.notify("update", json.RawMessage(`["other",{"Bridge":{"`+testUUID+`":{}}}]`))
	if n := len(c.Rows("Bridge")); n != 1 {
		t.Fatalf("update of another monitor applied")
	}
	// A delete.
	ms.notify("update", json.RawMessage(`["netplugin",{"Bridge":{"`+testUUID+`":{"old":{"name":"b"}}}}]`))
	if n := len(c.Rows("Bridge")); n != 0 {
		t.Fatalf("delete not applied")
	}
}
