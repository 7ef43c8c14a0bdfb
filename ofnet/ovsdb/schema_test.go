package ovsdb

import (
	"os"
	"testing"
)

// miniSchema is a hand-written subset of the Open_vSwitch schema with the
// column types the client relies on.
const miniSchema = `{
  "name": "Open_vSwitch", "version": "0.0.1",
  "tables": {
    "Open_vSwitch": {"isRoot": true, "maxRows": 1, "columns": {
      "bridges": {"type": {"key": {"type": "uuid", "refTable": "Bridge"}, "min": 0, "max": "unlimited"}},
      "next_cfg": {"type": "integer"},
      "cur_cfg": {"type": "integer"}}},
    "Bridge": {"indexes": [["name"]], "columns": {
      "name": {"type": "string", "mutable": false},
      "datapath_type": {"type": "string"},
      "fail_mode": {"type": {"key": {"type": "string", "enum": ["set", ["standalone", "secure"]]}, "min": 0, "max": 1}},
      "protocols": {"type": {"key": {"type": "string"}, "min": 0, "max": "unlimited"}},
      "ports": {"type": {"key": {"type": "uuid", "refTable": "Port"}, "min": 0, "max": "unlimited"}},
      "controller": {"type": {"key": {"type": "uuid", "refTable": "Controller"}, "min": 0, "max": "unlimited"}},
      "external_ids": {"type": {"key": "string", "value": "string", "min": 0, "max": "unlimited"}}}},
    "Port": {"indexes": [["name"]], "columns": {
      "name": {"type": "string"},
      "tag": {"type": {"key": {"type": "integer", "minInteger": 0, "maxInteger": 4095}, "min": 0, "max": 1}},
      "vlan_mode": {"type": {"key": "string", "min": 0, "max": 1}},
      "interfaces": {"type": {"key": {"type": "uuid", "refTable": "Interface"}, "min": 1, "max": "unlimited"}},
      "external_ids": {"type": {"key": "string", "value": "string", "min": 0, "max": "unlimited"}}}},
    "Interface": {"indexes": [["name"]], "columns": {
      "name": {"type": "string"},
      "type": {"type": "string"},
      "ofport": {"type": {"key": "integer", "min": 0, "max": 1}},
      "options": {"type": {"key": "string", "value": "string", "min": 0, "max": "unlimited"}},
      "statistics": {"type": {"key": "string", "value": "integer", "min": 0, "max": "unlimited"}},
      "ingress_policing_rate": {"type": {"key": {"type": "integer", "minInteger": 0}}},
      "link_speed": {"type": {"key": "integer", "min": 0, "max": 1}},
      "lacp_current": {"type": {"key": "boolean", "min": 0, "max": 1}},
      "error": {"type": {"key": "string", "min": 0, "max": 1}},
      "external_ids": {"type": {"key": "string", "value": "string", "min": 0, "max": "unlimited"}}}},
    "Controller": {"columns": {
      "target": {"type": "string"},
      "max_backoff": {"type": {"key": {"type": "integer", "minInteger": 1000}, "min": 0, "max": 1}},
      "external_ids": {"type": {"key": "string", "value": "string", "min": 0, "max": "unlimited"}}}}
  }
}`

func testSchema(t testing.TB) *Schema {
	t.Helper()
	s, err := ParseSchema([]byte(miniSchema))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseInstalledSchema(t *testing.T) {
	data, err := os.ReadFile("/usr/share/openvswitch/vswitch.ovsschema")
	if err != nil {
		t.Skip("OVS schema not installed")
	}
	s, err := ParseSchema(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, tbl := range []string{"Open_vSwitch", "Bridge", "Port", "Interface", "Controller"} {
		if s.Tables[tbl] == nil {
			t.Errorf("no table %s", tbl)
		}
	}
}
