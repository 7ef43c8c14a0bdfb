package netctl

import "testing"

// Populated -j listings: the filtered list, re-encoded in the key order of
// docs/netctl.md §7 (members unknown to the client types dropped, link members
// always present).
func TestJSONListings(t *testing.T) {
	routes := func(coll, body string) map[string]string {
		return map[string]string{tenantGET: tenantOK, "GET /api/v1/" + coll + "/": body}
	}
	reqs := func(coll string) []string { return []string{tenantGET, "GET /api/v1/" + coll + "/"} }
	runCases(t, []cmdCase{
		{name: "group", args: "group ls -t spectest -j",
			routes:   routes("endpointGroups", `[{"tenantName":"spectest","groupName":"g","policies":["p"],"key":"spectest:g","extra":true},{"tenantName":"other","groupName":"x"}]`),
			wantReqs: reqs("endpointGroups"),
			wantOut:  "[\n  {\n    \"key\": \"spectest:g\",\n    \"groupName\": \"g\",\n    \"policies\": [\n      \"p\"\n    ],\n    \"tenantName\": \"spectest\",\n    \"link-sets\": {},\n    \"links\": {\n      \"AppProfile\": {},\n      \"NetProfile\": {},\n      \"Network\": {},\n      \"Tenant\": {}\n    }\n  }\n]\n"},
		{name: "netprofile", args: "netprofile ls -t spectest -j",
			routes:   routes("netprofiles", `[{"tenantName":"spectest","profileName":"p","DSCP":5,"bandwidth":"<1>&"}]`),
			wantReqs: reqs("netprofiles"),
			wantOut:  "[\n  {\n    \"DSCP\": 5,\n    \"bandwidth\": \"\\u003c1\\u003e\\u0026\",\n    \"profileName\": \"p\",\n    \"tenantName\": \"spectest\",\n    \"link-sets\": {},\n    \"links\": {\n      \"Tenant\": {}\n    }\n  }\n]\n"},
		{name: "app-profile", args: "app-profile ls -t spectest -j",
			routes:   routes("appProfiles", `[{"tenantName":"spectest","appProfileName":"a","endpointGroups":["g1","g2"]}]`),
			wantReqs: reqs("appProfiles"),
			wantOut:  "[\n  {\n    \"appProfileName\": \"a\",\n    \"endpointGroups\": [\n      \"g1\",\n      \"g2\"\n    ],\n    \"tenantName\": \"spectest\",\n    \"link-sets\": {},\n    \"links\": {\n      \"Tenant\": {}\n    }\n  }\n]\n"},
		{name: "external-contracts", args: "external-contracts ls -t spectest -j",
			routes:   routes("extContractsGroups", `[{"tenantName":"spectest","contractsGroupName":"e","contractsType":"provided","contracts":["c"]}]`),
			wantReqs: reqs("extContractsGroups"),
			wantOut:  "[\n  {\n    \"contracts\": [\n      \"c\"\n    ],\n    \"contractsGroupName\": \"e\",\n    \"contractsType\": \"provided\",\n    \"tenantName\": \"spectest\",\n    \"link-sets\": {}\n  }\n]\n"},
		{name: "service", args: "service ls -t spectest -j",
			routes:   routes("serviceLBs", `[{"tenantName":"spectest","serviceName":"s","selectors":["a=b"],"ports":["80:80:TCP"]}]`),
			wantReqs: reqs("serviceLBs"),
			wantOut:  "[\n  {\n    \"ports\": [\n      \"80:80:TCP\"\n    ],\n    \"selectors\": [\n      \"a=b\"\n    ],\n    \"serviceName\": \"s\",\n    \"tenantName\": \"spectest\",\n    \"links\": {\n      \"Network\": {},\n      \"Tenant\": {}\n    }\n  }\n]\n"},
		{name: "all tenants", args: "policy ls -t spectest -a -j",
			routes:   routes("policys", `[{"tenantName":"spectest","policyName":"p"},{"tenantName":"other","policyName":"q"}]`),
			wantReqs: reqs("policys"),
			wantOut:  "[\n  {\n    \"policyName\": \"p\",\n    \"tenantName\": \"spectest\",\n    \"link-sets\": {},\n    \"links\": {\n      \"Tenant\": {}\n    }\n  },\n  {\n    \"policyName\": \"q\",\n    \"tenantName\": \"other\",\n    \"link-sets\": {},\n    \"links\": {\n      \"Tenant\": {}\n    }\n  }\n]\n"},
	})
}
