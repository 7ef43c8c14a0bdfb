package netctl

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
)

// standIn is a minimal in-memory stand-in for netmaster's object API, just
// enough to replay the golden transcript. It exists to test the golden
// harness itself; it is NOT the golden acceptance, which needs the real
// netmaster (TestGoldenSession).
type standIn struct {
	mu   sync.Mutex
	objs map[string][]map[string]any // collection -> objects in creation order
}

var standInTypes = map[string]string{
	"tenants": "tenant", "networks": "network", "endpointGroups": "endpointGroup", "policys": "policy",
	"rules": "rule", "netprofiles": "netprofile", "appProfiles": "appProfile",
}

func standInKey(coll string, o map[string]any) string {
	s := func(k string) string { v, _ := o[k].(string); return v }
	switch coll {
	case "tenants":
		return s("tenantName")
	case "rules":
		return s("tenantName") + ":" + s("policyName") + ":" + s("ruleId")
	}
	name := map[string]string{"networks": "networkName", "endpointGroups": "groupName", "policys": "policyName",
		"netprofiles": "profileName", "appProfiles": "appProfileName"}[coll]
	return s("tenantName") + ":" + s(name)
}

func (s *standIn) find(coll, key string) int {
	for i, o := range s.objs[coll] {
		if o["key"] == key {
			return i
		}
	}
	return -1
}

// decorate adds the link members the transcript shows for policies.
func (s *standIn) decorate(coll string, o map[string]any) map[string]any {
	if coll != "policys" {
		return o
	}
	c := map[string]any{}
	for k, v := range o {
		c[k] = v
	}
	link := func(typ, key string) map[string]any { return map[string]any{"type": typ, "key": key} }
	ls := map[string]any{}
	groups, rules := map[string]any{}, map[string]any{}
	for _, g := range s.objs["endpointGroups"] {
		for _, p := range g["policies"].([]any) {
			if g["tenantName"] == o["tenantName"] && p == o["policyName"] {
				groups[g["key"].(string)] = link("endpointGroup", g["key"].(string))
			}
		}
	}
	for _, r := range s.objs["rules"] {
		if r["tenantName"] == o["tenantName"] && r["policyName"] == o["policyName"] {
			rules[r["key"].(string)] = link("rule", r["key"].(string))
		}
	}
	if len(groups) > 0 {
		ls["EndpointGroups"] = groups
	}
	if len(rules) > 0 {
		ls["Rules"] = rules
	}
	c["link-sets"] = ls
	c["links"] = map[string]any{"Tenant": link("tenant", o["tenantName"].(string))}
	return c
}

func (s *standIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	serverErr := func(msg string) { w.WriteHeader(http.StatusInternalServerError); _, _ = io.WriteString(w, msg+"\n") }
	parts := strings.Split(strings.Trim(strings.TrimPrefix(r.URL.Path, "/api/v1/"), "/"), "/")
	coll, typ := parts[0], standInTypes[parts[0]]
	if typ == "" {
		http.NotFound(w, r)
		return
	}
	if len(parts) == 1 {
		out := []map[string]any{}
		for _, o := range s.objs[coll] {
			out = append(out, s.decorate(coll, o))
		}
		_ = json.NewEncoder(w).Encode(out)
		return
	}
	key := parts[1]
	i := s.find(coll, key)
	switch r.Method {
	case http.MethodGet:
		if i < 0 {
			serverErr(typ + " not found")
			return
		}
		_ = json.NewEncoder(w).Encode(s.decorate(coll, s.objs[coll][i]))
	case http.MethodPost:
		var o map[string]any
		if err := json.NewDecoder(r.Body).Decode(&o); err != nil {
			serverErr(err.Error())
			return
		}
		if coll != "tenants" && s.find("tenants", o["tenantName"].(string)) < 0 {
			serverErr("tenant not found")
			return
		}
		if coll == "endpointGroups" && o["policies"] == nil {
			o["policies"] = []any{}
		}
		o["key"] = standInKey(coll, o)
		delete(o, "link-sets")
		delete(o, "links")
		if i >= 0 {
			s.objs[coll][i] = o
		} else {
			s.objs[coll] = append(s.objs[coll], o)
		}
	case http.MethodDelete:
		if i < 0 {
			serverErr(typ + " not found")
			return
		}
		if coll == "tenants" {
			var n int
			for _, a := range s.objs["appProfiles"] {
				if a["tenantName"] == key {
					n++
				}
			}
			if n > 0 {
				serverErr("cannot delete " + key + ", has 1 app profiles\nstand-in stack trace line")
				return
			}
		}
		s.objs[coll] = append(s.objs[coll][:i], s.objs[coll][i+1:]...)
	}
}

// TestGoldenHarnessAgainstStandIn replays the golden transcript against the
// stand-in, proving the harness (parsing, normalisation, comparison) works
// end to end before a real netmaster exists.
func TestGoldenHarnessAgainstStandIn(t *testing.T) {
	s := &standIn{objs: map[string][]map[string]any{
		"tenants": {{"key": "default", "tenantName": "default"}},
	}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	replayGolden(t, srv.URL)
	// everything the session created was removed again
	var left []string
	for coll, objs := range s.objs {
		for _, o := range objs {
			left = append(left, coll+":"+o["key"].(string))
		}
	}
	sort.Strings(left)
	if strings.Join(left, ",") != "tenants:default" {
		t.Errorf("left over: %v", left)
	}
}
