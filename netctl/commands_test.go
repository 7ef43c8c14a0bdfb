package netctl

import (
	"reflect"
	"strings"
	"testing"
)

const (
	tenantGET = "GET /api/v1/tenants/spectest/"
	tenantOK  = `{"key":"spectest","tenantName":"spectest","link-sets":{}}`
)

// cmdCase runs args against a fake netmaster answering routes and checks
// the requests sent, stdout, and the exit code.
type cmdCase struct {
	name     string
	args     string
	routes   map[string]string
	wantReqs []string
	wantOut  string
	wantErr  string // stderr, when set
	wantCode int
}

func (tc cmdCase) check(t *testing.T) {
	t.Helper()
	f := newFake(t, tc.routes)
	r := f.run(t, strings.Fields(tc.args)...)
	if r.code != tc.wantCode {
		t.Errorf("exit code %d, want %d (stderr %q)", r.code, tc.wantCode, r.stderr)
	}
	if got := f.requests(); !reflect.DeepEqual(got, tc.wantReqs) && !(len(got) == 0 && len(tc.wantReqs) == 0) {
		t.Errorf("requests\n got %q\nwant %q", got, tc.wantReqs)
	}
	if r.stdout != tc.wantOut {
		t.Errorf("stdout\n got %q\nwant %q", r.stdout, tc.wantOut)
	}
	if tc.wantErr != "" && r.stderr != tc.wantErr {
		t.Errorf("stderr\n got %q\nwant %q", r.stderr, tc.wantErr)
	}
	if tc.wantErr == "" && tc.wantCode == 0 && r.stderr != "" {
		t.Errorf("unexpected stderr %q", r.stderr)
	}
}

func runCases(t *testing.T, cases []cmdCase) {
	for _, tc := range cases {
		t.Run(tc.name, tc.check)
	}
}

func TestTenant(t *testing.T) {
	list := `[{"key":"default","tenantName":"default","link-sets":{}},{"key":"spectest","tenantName":"spectest","link-sets":{"Networks":{"spectest:n1":{"type":"network","key":"spectest:n1"}}}}]`
	runCases(t, []cmdCase{
		{name: "create", args: "tenant create spectest",
			wantReqs: []string{`POST /api/v1/tenants/spectest/ {"tenantName":"spectest","link-sets":{}}`},
			wantOut:  "Creating tenant: spectest\n"},
		{name: "rm", args: "tenant rm spectest", wantReqs: []string{"DELETE /api/v1/tenants/spectest/"},
			wantOut: "Deleting tenant spectest\n"},
		{name: "delete alias", args: "tenant delete spectest", wantReqs: []string{"DELETE /api/v1/tenants/spectest/"},
			wantOut: "Deleting tenant spectest\n"},
		{name: "rm fails after announcing", args: "tenant rm spectest",
			routes:   map[string]string{"DELETE /api/v1/tenants/spectest/": "500:cannot delete spectest, has 1 app profiles\nstack line 1\nstack line 2\n"},
			wantReqs: []string{"DELETE /api/v1/tenants/spectest/"},
			wantOut:  "Deleting tenant spectest\n", wantErr: errLine("cannot delete spectest, has 1 app profiles"), wantCode: 3},
		{name: "inspect", args: "tenant inspect spectest",
			routes:   map[string]string{"GET /api/v1/inspect/tenants/spectest/": `{"Config":{"tenantName":"spectest","key":"spectest","link-sets":{}},"Oper":{"totalNetworks":2,"networks":[{"pktTag":5}]}}`},
			wantReqs: []string{"GET /api/v1/inspect/tenants/spectest/"},
			wantOut:  "{\n  \"Config\": {\n    \"key\": \"spectest\",\n    \"tenantName\": \"spectest\",\n    \"link-sets\": {}\n  },\n  \"Oper\": {\n    \"networks\": [\n      {\n        \"pktTag\": 5\n      }\n    ],\n    \"totalNetworks\": 2\n  }\n}\n"},
		{name: "ls empty", args: "tenant ls", routes: map[string]string{"GET /api/v1/tenants/": `[]`},
			wantReqs: []string{"GET /api/v1/tenants/"}, wantOut: "Name    \n------  \n"},
		{name: "ls populated", args: "tenant ls", routes: map[string]string{"GET /api/v1/tenants/": list},
			wantReqs: []string{"GET /api/v1/tenants/"},
			wantOut:  "Name      \n------    \ndefault   \nspectest  \n"},
		{name: "ls quiet", args: "tenant ls -q", routes: map[string]string{"GET /api/v1/tenants/": list},
			wantReqs: []string{"GET /api/v1/tenants/"}, wantOut: "default\nspectest\n"},
		{name: "ls quiet empty", args: "tenant ls -q", routes: map[string]string{"GET /api/v1/tenants/": `[]`},
			wantReqs: []string{"GET /api/v1/tenants/"}, wantOut: ""},
		{name: "ls json wins over quiet", args: "tenant ls -q -j", routes: map[string]string{"GET /api/v1/tenants/": list},
			wantReqs: []string{"GET /api/v1/tenants/"},
			wantOut:  "[\n  {\n    \"key\": \"default\",\n    \"tenantName\": \"default\",\n    \"link-sets\": {}\n  },\n  {\n    \"key\": \"spectest\",\n    \"tenantName\": \"spectest\",\n    \"link-sets\": {\n      \"Networks\": {\n        \"spectest:n1\": {\n          \"type\": \"network\",\n          \"key\": \"spectest:n1\"\n        }\n      }\n    }\n  }\n]\n"},
		{name: "ls json empty", args: "tenant ls --json", routes: map[string]string{"GET /api/v1/tenants/": `[]`},
			wantReqs: []string{"GET /api/v1/tenants/"}, wantOut: "[]\n"},
	})
}

func TestNetwork(t *testing.T) {
	nets := `[
 {"key":"spectest:snet1","encap":"vxlan","gateway":"10.77.1.254","networkName":"snet1","nwType":"data","subnet":"10.77.1.0/24","tenantName":"spectest","link-sets":{},"links":{"Tenant":{"type":"tenant","key":"spectest"}}},
 {"key":"other:o1","encap":"vxlan","networkName":"o1","nwType":"data","subnet":"10.9.1.0/24","tenantName":"other","link-sets":{},"links":{"Tenant":{}}},
 {"key":"spectest:snet2","cfgdTag":"stag2","encap":"vlan","ipv6Gateway":"2001:db8:77::1","ipv6Subnet":"2001:db8:77::/64","networkName":"snet2","nwType":"data","pktTag":1077,"subnet":"10.77.2.0/24","tenantName":"spectest","link-sets":{},"links":{"Tenant":{}}},
 {"key":"spectest:snet3","encap":"vxlan","networkName":"snet3","nwType":"infra","subnet":"10.77.3.0/24","tenantName":"spectest","unknownField":1,"link-sets":{},"links":{"Tenant":{}}}]`
	lsRoutes := map[string]string{tenantGET: tenantOK, "GET /api/v1/networks/": nets}
	lsReqs := []string{tenantGET, "GET /api/v1/networks/"}
	runCases(t, []cmdCase{
		{name: "create full", args: "net create -t spectest -n infra -e vlan -p 12 -s 10.1.1.0/24 -g 10.1.1.1 --s6 2001::/64 --g6 2001::1 --tag T n1",
			wantReqs: []string{`POST /api/v1/networks/spectest:n1/ {"cfgdTag":"T","encap":"vlan","gateway":"10.1.1.1","ipv6Gateway":"2001::1","ipv6Subnet":"2001::/64","networkName":"n1","nwType":"infra","pktTag":12,"subnet":"10.1.1.0/24","tenantName":"spectest","link-sets":{},"links":{"Tenant":{}}}`},
			wantOut:  "Creating network spectest:n1\n"},
		{name: "create minimal, name first", args: "network create n1 -s 10.1.1.0/24 -t spectest",
			wantReqs: []string{`POST /api/v1/networks/spectest:n1/ {"encap":"vxlan","networkName":"n1","nwType":"data","subnet":"10.1.1.0/24","tenantName":"spectest","link-sets":{},"links":{"Tenant":{}}}`},
			wantOut:  "Creating network spectest:n1\n"},
		{name: "create name between options", args: "net create -s 10.1.1.0/24 n1 -t spectest",
			wantReqs: []string{`POST /api/v1/networks/spectest:n1/ {"encap":"vxlan","networkName":"n1","nwType":"data","subnet":"10.1.1.0/24","tenantName":"spectest","link-sets":{},"links":{"Tenant":{}}}`},
			wantOut:  "Creating network spectest:n1\n"},
		{name: "create go-flag spellings", args: "net create --tenant=spectest -subnet=10.1.1.0/24 -pkt-tag 0x10 n1",
			wantReqs: []string{`POST /api/v1/networks/spectest:n1/ {"encap":"vxlan","networkName":"n1","nwType":"data","pktTag":16,"subnet":"10.1.1.0/24","tenantName":"spectest","link-sets":{},"links":{"Tenant":{}}}`},
			wantOut:  "Creating network spectest:n1\n"},
		{name: "create trailing double dash", args: "net create n1 -s 1.1.1.0/24 --",
			wantReqs: []string{`POST /api/v1/networks/default:n1/ {"encap":"vxlan","networkName":"n1","nwType":"data","subnet":"1.1.1.0/24","tenantName":"default","link-sets":{},"links":{"Tenant":{}}}`},
			wantOut:  "Creating network default:n1\n"},
		{name: "create server error", args: "net create -s 10.77.1.0/24 snet9",
			routes:   map[string]string{"POST /api/v1/networks/default:snet9/": "500:network snet1 conflicts with subnet 10.77.1.0/24\n"},
			wantReqs: []string{`POST /api/v1/networks/default:snet9/ {"encap":"vxlan","networkName":"snet9","nwType":"data","subnet":"10.77.1.0/24","tenantName":"default","link-sets":{},"links":{"Tenant":{}}}`},
			wantErr:  errLine("network snet1 conflicts with subnet 10.77.1.0/24"), wantCode: 3},
		{name: "rm", args: "net rm -t spectest n1", wantReqs: []string{"DELETE /api/v1/networks/spectest:n1/"},
			wantOut: "Deleting network spectest:n1\n"},
		{name: "rm not found", args: "net rm -t spectest nosuch",
			routes:   map[string]string{"DELETE /api/v1/networks/spectest:nosuch/": "500:network not found\n"},
			wantReqs: []string{"DELETE /api/v1/networks/spectest:nosuch/"},
			wantOut:  "Deleting network spectest:nosuch\n", wantErr: errLine("network not found"), wantCode: 3},
		{name: "rm 404 is success", args: "net rm n1",
			routes:   map[string]string{"DELETE /api/v1/networks/default:n1/": "404:gone"},
			wantReqs: []string{"DELETE /api/v1/networks/default:n1/"}, wantOut: "Deleting network default:n1\n"},
		{name: "inspect", args: "net inspect -t spectest snet2",
			routes:   map[string]string{"GET /api/v1/inspect/networks/spectest:snet2/": `{"Config":{"key":"spectest:snet2","networkName":"snet2","tenantName":"spectest","link-sets":{},"links":{"Tenant":{"type":"tenant","key":"spectest"}}},"Oper":{"pktTag":1077,"networkTag":"stag2"}}`},
			wantReqs: []string{"GET /api/v1/inspect/networks/spectest:snet2/"},
			wantOut:  "{\n  \"Config\": {\n    \"key\": \"spectest:snet2\",\n    \"networkName\": \"snet2\",\n    \"tenantName\": \"spectest\",\n    \"link-sets\": {},\n    \"links\": {\n      \"Tenant\": {\n        \"type\": \"tenant\",\n        \"key\": \"spectest\"\n      }\n    }\n  },\n  \"Oper\": {\n    \"networkTag\": \"stag2\",\n    \"pktTag\": 1077\n  }\n}\n"},
		{name: "ls empty", args: "net ls -t spectest", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/networks/": `[]`},
			wantReqs: lsReqs,
			wantOut: "Tenant  Network  Nw Type  Encap type  Packet tag  Subnet   Gateway  IPv6Subnet  IPv6Gateway  Cfgd Tag \n" +
				"------  -------  -------  ----------  ----------  -------  ------   ----------  -----------  ---------\n"},
		{name: "ls populated", args: "net ls -t spectest", routes: lsRoutes, wantReqs: lsReqs,
			wantOut: "Tenant    Network  Nw Type  Encap type  Packet tag  Subnet        Gateway      IPv6Subnet        IPv6Gateway     Cfgd Tag \n" +
				"------    -------  -------  ----------  ----------  -------       ------       ----------        -----------     ---------\n" +
				"spectest  snet1    data     vxlan       0           10.77.1.0/24  10.77.1.254                                    \n" +
				"spectest  snet2    data     vlan        1077        10.77.2.0/24               2001:db8:77::/64  2001:db8:77::1  stag2\n" +
				"spectest  snet3    infra    vxlan       0           10.77.3.0/24                                                 \n"},
		{name: "ls quiet", args: "net ls -t spectest -q", routes: lsRoutes, wantReqs: lsReqs, wantOut: "snet1\nsnet2\nsnet3\n"},
		{name: "ls all", args: "net ls -t spectest -a -q", routes: lsRoutes, wantReqs: lsReqs, wantOut: "snet1\no1\nsnet2\nsnet3\n"},
		{name: "ls json", args: "net list -t spectest -j -q", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/networks/": `[{"key":"spectest:a","networkName":"a","tenantName":"spectest","zzz":"dropped","link-sets":{},"links":{"Tenant":{}}}]`},
			wantReqs: lsReqs,
			wantOut:  "[\n  {\n    \"key\": \"spectest:a\",\n    \"networkName\": \"a\",\n    \"tenantName\": \"spectest\",\n    \"link-sets\": {},\n    \"links\": {\n      \"Tenant\": {}\n    }\n  }\n]\n"},
		{name: "ls json empty", args: "net ls -t spectest -j", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/networks/": `[]`},
			wantReqs: lsReqs, wantOut: "[]\n"},
		{name: "ls unknown tenant", args: "net ls -t nosuch",
			routes:   map[string]string{"GET /api/v1/tenants/nosuch/": "500:tenant not found\n"},
			wantReqs: []string{"GET /api/v1/tenants/nosuch/"}, wantErr: errLine("tenant not found"), wantCode: 3},
	})
}

func TestGroup(t *testing.T) {
	groups := `[
 {"key":"spectest:sgrp1","cfgdTag":"gtag1","groupName":"sgrp1","netProfile":"sprof1","networkName":"snet1","policies":["spol1","spol2"],"tenantName":"spectest","link-sets":{},"links":{}},
 {"key":"spectest:sgrp2","groupName":"sgrp2","ipPool":"10.77.1.10-10.77.1.20","networkName":"snet1","tenantName":"spectest","link-sets":{},"links":{}},
 {"key":"spectest:sgrp3","groupName":"sgrp3","networkName":"snet2","tenantName":"spectest","link-sets":{},"links":{}}]`
	lsReqs := []string{tenantGET, "GET /api/v1/endpointGroups/"}
	runCases(t, []cmdCase{
		{name: "create full", args: "group create -t spectest -p p1 -p p2 -n np -e ec1 --external-contract ec2 -r 10.1.1.1-10.1.1.5 --tag gt n1 g1",
			wantReqs: []string{`POST /api/v1/endpointGroups/spectest:g1/ {"cfgdTag":"gt","extContractsGrps":["ec1","ec2"],"groupName":"g1","ipPool":"10.1.1.1-10.1.1.5","netProfile":"np","networkName":"n1","policies":["p1","p2"],"tenantName":"spectest","link-sets":{},"links":{"AppProfile":{},"NetProfile":{},"Network":{},"Tenant":{}}}`},
			wantOut:  "Creating EndpointGroup spectest:g1\n"},
		{name: "create keeps argument order", args: "group create n1 -t t1 g1",
			wantReqs: []string{`POST /api/v1/endpointGroups/t1:g1/ {"groupName":"g1","networkName":"n1","tenantName":"t1","link-sets":{},"links":{"AppProfile":{},"NetProfile":{},"Network":{},"Tenant":{}}}`},
			wantOut:  "Creating EndpointGroup t1:g1\n"},
		{name: "inspect", args: "group inspect -t spectest sgrp1",
			routes:   map[string]string{"GET /api/v1/inspect/endpointGroups/spectest:sgrp1/": `{"Config":{"key":"spectest:sgrp1","groupName":"sgrp1"},"Oper":{"groupTag":"gtag1","pktTag":2}}`},
			wantReqs: []string{"GET /api/v1/inspect/endpointGroups/spectest:sgrp1/"},
			wantOut:  "{\n  \"Config\": {\n    \"key\": \"spectest:sgrp1\",\n    \"groupName\": \"sgrp1\",\n    \"link-sets\": {},\n    \"links\": {\n      \"AppProfile\": {},\n      \"NetProfile\": {},\n      \"Network\": {},\n      \"Tenant\": {}\n    }\n  },\n  \"Oper\": {\n    \"groupTag\": \"gtag1\",\n    \"pktTag\": 2\n  }\n}\n"},
		{name: "rm", args: "group rm -t spectest g1", wantReqs: []string{"DELETE /api/v1/endpointGroups/spectest:g1/"}},
		{name: "ls empty", args: "group ls -t spectest", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/endpointGroups/": `[]`},
			wantReqs: lsReqs,
			wantOut:  "Tenant  Group  Network  IP Pool  CfgdTag  Policies  Network profile\n------  -----  -------  -------  -------  --------  ---------------\n"},
		{name: "ls populated", args: "group ls -t spectest", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/endpointGroups/": groups},
			wantReqs: lsReqs,
			wantOut: "Tenant    Group  Network  IP Pool                CfgdTag  Policies     Network profile\n" +
				"------    -----  -------  -------                -------  --------     ---------------\n" +
				"spectest  sgrp1  snet1                           gtag1    spol1,spol2  sprof1\n" +
				"spectest  sgrp2  snet1    10.77.1.10-10.77.1.20                        \n" +
				"spectest  sgrp3  snet2                                                 \n"},
		{name: "ls quiet", args: "group ls -t spectest -q", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/endpointGroups/": groups},
			wantReqs: lsReqs, wantOut: "sgrp1\nsgrp2\nsgrp3\n"},
		{name: "ls json empty", args: "group ls -t spectest -j", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/endpointGroups/": `[]`},
			wantReqs: lsReqs, wantOut: "[]\n"},
	})
}

func TestPolicy(t *testing.T) {
	pols := `[{"key":"spectest:spol2","policyName":"spol2","tenantName":"spectest","link-sets":{},"links":{}},{"key":"x:y","policyName":"y","tenantName":"x"},{"key":"spectest:spol1","policyName":"spol1","tenantName":"spectest"}]`
	rules := `[
 {"key":"spectest:spol1:2","direction":"in","fromIpAddress":"10.1.1.0/24","policyName":"spol1","port":53,"priority":5,"protocol":"udp","ruleId":"2","action":"deny","tenantName":"spectest"},
 {"key":"spectest:spol1:3","direction":"out","toEndpointGroup":"sgrp3","policyName":"spol1","port":443,"priority":1,"protocol":"tcp","ruleId":"3","action":"allow","tenantName":"spectest"},
 {"key":"spectest:other:9","direction":"in","policyName":"other","priority":1,"ruleId":"9","action":"allow","tenantName":"spectest"},
 {"key":"spectest:spol1:1","direction":"in","fromEndpointGroup":"sgrp2","policyName":"spol1","port":80,"priority":1,"protocol":"tcp","ruleId":"1","action":"allow","tenantName":"spectest"},
 {"key":"spectest:spol1:4","direction":"out","toNetwork":"snet2","toIpAddress":"10.77.2.0/24","policyName":"spol1","priority":3,"ruleId":"4","action":"deny","tenantName":"spectest"},
 {"key":"spectest:spol1:5","direction":"in","fromNetwork":"snet2","fromIpAddress":"10.77.2.0/24","policyName":"spol1","priority":2,"ruleId":"5","action":"allow","tenantName":"spectest"}]`
	ruleRoutes := map[string]string{tenantGET: tenantOK, "GET /api/v1/policys/spectest:spol1/": `{"policyName":"spol1"}`, "GET /api/v1/rules/": rules}
	ruleReqs := []string{tenantGET, "GET /api/v1/policys/spectest:spol1/", "GET /api/v1/rules/"}
	lsReqs := []string{tenantGET, "GET /api/v1/policys/"}
	runCases(t, []cmdCase{
		{name: "create", args: "policy create -t spectest p1",
			wantReqs: []string{`POST /api/v1/policys/spectest:p1/ {"policyName":"p1","tenantName":"spectest","link-sets":{},"links":{"Tenant":{}}}`},
			wantOut:  "Creating policy spectest:p1\n"},
		{name: "rm", args: "policy rm -t spectest p1", wantReqs: []string{"DELETE /api/v1/policys/spectest:p1/"},
			wantOut: "Deleting policy spectest:p1\n"},
		{name: "inspect", args: "policy inspect p1",
			routes:   map[string]string{"GET /api/v1/inspect/policys/default:p1/": `{"Config":{"key":"default:p1","policyName":"p1","tenantName":"default"},"Oper":{}}`},
			wantReqs: []string{"GET /api/v1/inspect/policys/default:p1/"},
			wantOut:  "{\n  \"Config\": {\n    \"key\": \"default:p1\",\n    \"policyName\": \"p1\",\n    \"tenantName\": \"default\",\n    \"link-sets\": {},\n    \"links\": {\n      \"Tenant\": {}\n    }\n  },\n  \"Oper\": {}\n}\n"},
		{name: "ls empty", args: "policy ls -t spectest", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/policys/": `[]`},
			wantReqs: lsReqs, wantOut: "Tenant  Policy\n------  ------\n"},
		{name: "ls populated", args: "policy ls -t spectest", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/policys/": pols},
			wantReqs: lsReqs, wantOut: "Tenant    Policy\n------    ------\nspectest  spol2\nspectest  spol1\n"},
		{name: "ls quiet", args: "policy ls -t spectest -q", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/policys/": pols},
			wantReqs: lsReqs, wantOut: "spol2\nspol1\n"},
		{name: "ls json", args: "policy ls -t spectest -j", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/policys/": `[{"key":"spectest:gpol","policyName":"gpol","tenantName":"spectest","link-sets":{"Rules":{"spectest:gpol:1":{"type":"rule","key":"spectest:gpol:1"}}},"links":{"Tenant":{"type":"tenant","key":"spectest"}}}]`},
			wantReqs: lsReqs,
			wantOut:  "[\n  {\n    \"key\": \"spectest:gpol\",\n    \"policyName\": \"gpol\",\n    \"tenantName\": \"spectest\",\n    \"link-sets\": {\n      \"Rules\": {\n        \"spectest:gpol:1\": {\n          \"type\": \"rule\",\n          \"key\": \"spectest:gpol:1\"\n        }\n      }\n    },\n    \"links\": {\n      \"Tenant\": {\n        \"type\": \"tenant\",\n        \"key\": \"spectest\"\n      }\n    }\n  }\n]\n"},
		{name: "rule-add full", args: "policy rule-add -t spectest -p 3 -d out -e g2 -s 1.2.3.0/24 -l tcp -P 8080 -j deny p1 r2",
			wantReqs: []string{`POST /api/v1/rules/spectest:p1:r2/ {"action":"deny","direction":"out","policyName":"p1","port":8080,"priority":3,"protocol":"tcp","ruleId":"r2","tenantName":"spectest","toEndpointGroup":"g2","toIpAddress":"1.2.3.0/24","link-sets":{},"links":{"MatchEndpointGroup":{}}}`}},
		{name: "rule-add defaults", args: "policy rule-add -t spectest p1 r1",
			wantReqs: []string{`POST /api/v1/rules/spectest:p1:r1/ {"action":"allow","direction":"in","policyName":"p1","priority":1,"ruleId":"r1","tenantName":"spectest","link-sets":{},"links":{"MatchEndpointGroup":{}}}`}},
		{name: "rule-rm", args: "policy rule-rm -t spectest p1 1", wantReqs: []string{"DELETE /api/v1/rules/spectest:p1:1/"}},
		{name: "rule-rm missing", args: "policy rule-rm -t spectest spol1 99",
			routes:   map[string]string{"DELETE /api/v1/rules/spectest:spol1:99/": "500:rule not found\n"},
			wantReqs: []string{"DELETE /api/v1/rules/spectest:spol1:99/"}, wantErr: errLine("rule not found"), wantCode: 3},
		{name: "rule-ls empty", args: "policy rule-ls -t spectest spol1",
			routes:   map[string]string{tenantGET: tenantOK, "GET /api/v1/policys/spectest:spol1/": `{}`, "GET /api/v1/rules/": `[]`},
			wantReqs: ruleReqs,
			wantOut: "Incoming Rules:\n" +
				"Rule  Priority  From EndpointGroup  From Network  From IpAddress  To IpAddress  Protocol  Port  Action\n" +
				"----  --------  ------------------  ------------  ---------       ------------  --------  ----  ------\n" +
				"Outgoing Rules:\n" +
				"Rule  Priority  To EndpointGroup  To Network  To IpAddress  Protocol  Port  Action\n" +
				"----  --------  ----------------  ----------  ---------     --------  ----  ------\n"},
		{name: "rule-ls populated", args: "policy rule-ls -t spectest spol1", routes: ruleRoutes, wantReqs: ruleReqs,
			wantOut: "Incoming Rules:\n" +
				"Rule  Priority  From EndpointGroup  From Network  From IpAddress  To IpAddress  Protocol  Port  Action\n" +
				"----  --------  ------------------  ------------  ---------       ------------  --------  ----  ------\n" +
				"1     1         sgrp2                                                           tcp       80    allow\n" +
				"5     2                             snet2         10.77.2.0/24                            0     allow\n" +
				"2     5                                           10.1.1.0/24                   udp       53    deny\n" +
				"Outgoing Rules:\n" +
				"Rule  Priority  To EndpointGroup  To Network  To IpAddress  Protocol  Port  Action\n" +
				"----  --------  ----------------  ----------  ---------     --------  ----  ------\n" +
				"3     1         sgrp3                                       tcp       443   allow\n" +
				"4     3                           snet2       10.77.2.0/24            0     deny\n"},
		{name: "rule-ls quiet after name", args: "policy rule-ls -t spectest spol1 -q", routes: ruleRoutes, wantReqs: ruleReqs,
			wantOut: "3\n1\n5\n4\n2\n"},
		{name: "rule-ls json", args: "policy rule-ls -t spectest -j spol1",
			routes:   map[string]string{tenantGET: tenantOK, "GET /api/v1/policys/spectest:spol1/": `{}`, "GET /api/v1/rules/": `[{"ruleId":"1","policyName":"spol1","tenantName":"spectest","priority":1}]`},
			wantReqs: ruleReqs,
			wantOut:  "[\n  {\n    \"policyName\": \"spol1\",\n    \"priority\": 1,\n    \"ruleId\": \"1\",\n    \"tenantName\": \"spectest\",\n    \"link-sets\": {},\n    \"links\": {\n      \"MatchEndpointGroup\": {}\n    }\n  }\n]\n"},
		{name: "rule-ls json empty", args: "policy rule-ls -t spectest -j spol1",
			routes:   map[string]string{tenantGET: tenantOK, "GET /api/v1/policys/spectest:spol1/": `{}`, "GET /api/v1/rules/": `[]`},
			wantReqs: ruleReqs, wantOut: "[]\n"},
		{name: "rule-ls missing policy", args: "policy rule-ls -t spectest nopol",
			routes:   map[string]string{tenantGET: tenantOK, "GET /api/v1/policys/spectest:nopol/": "500:policy not found\n"},
			wantReqs: []string{tenantGET, "GET /api/v1/policys/spectest:nopol/"}, wantErr: errLine("policy not found"), wantCode: 3},
	})
}

func TestRuleAddValidation(t *testing.T) {
	for args, msg := range map[string]string{
		"-d in -e g p r":                     "Cant specify to-group for incoming rule",
		"-d in -o n p r":                     "Cant specify to-network for incoming rule",
		"-d in -g g -n n p r":                "Can't specify both from-group argument and -from-network ",
		"-d out -g g p r":                    "Cant specify from-group for outgoing rule",
		"-d out -n n p r":                    "Cant specify from-network for outgoing rule",
		"-d out -i 1.1.1.1 p r":              "Cant specify from-ip-address for outgoing rule",
		"-d out -e g -o n p r":               "Can't specify both -to-group and -to-network",
		"-d sideways p r":                    "Unknown direction",
		"--direction=out --from-group=g p r": "Cant specify from-group for outgoing rule",
	} {
		tc := cmdCase{name: args, args: "policy rule-add " + args, wantErr: errLine(msg), wantCode: 1}
		t.Run(args, tc.check)
	}
	// to-ip-address is accepted for incoming rules
	cmdCase{args: "policy rule-add -s 1.1.1.0/24 p r",
		wantReqs: []string{`POST /api/v1/rules/default:p:r/ {"action":"allow","direction":"in","policyName":"p","priority":1,"ruleId":"r","tenantName":"default","toIpAddress":"1.1.1.0/24","link-sets":{},"links":{"MatchEndpointGroup":{}}}`}}.check(t)
}

func TestNetprofile(t *testing.T) {
	profs := `[
 {"key":"spectest:sprof1","DSCP":5,"bandwidth":"10mbps","burst":100,"profileName":"sprof1","tenantName":"spectest"},
 {"key":"spectest:sprof2","profileName":"sprof2","tenantName":"spectest"},
 {"key":"spectest:sprof3","bandwidth":"2Gbps","profileName":"sprof3","tenantName":"spectest"}]`
	lsReqs := []string{tenantGET, "GET /api/v1/netprofiles/"}
	runCases(t, []cmdCase{
		{name: "create plain", args: "netprofile create -t spectest -b 10mbps -d 3 -s 64 np1",
			wantReqs: []string{`POST /api/v1/netprofiles/spectest:np1/ {"DSCP":3,"bandwidth":"10mbps","burst":64,"profileName":"np1","tenantName":"spectest","link-sets":{},"links":{"Tenant":{}}}`},
			wantOut:  "Creating netprofile spectest:np1\n"},
		{name: "rm", args: "netprofile rm -t spectest np1", wantReqs: []string{"DELETE /api/v1/netprofiles/spectest:np1/"}},
		{name: "inspect", args: "netprofile inspect -t spectest sprof1",
			routes:   map[string]string{"GET /api/v1/inspect/netprofiles/spectest:sprof1/": `{"Config":{"key":"spectest:sprof1","DSCP":5,"bandwidth":"10mbps","burst":100,"profileName":"sprof1","tenantName":"spectest","link-sets":{},"links":{"Tenant":{"type":"tenant","key":"spectest"}}}}`},
			wantReqs: []string{"GET /api/v1/inspect/netprofiles/spectest:sprof1/"},
			wantOut:  "{\n  \"Config\": {\n    \"key\": \"spectest:sprof1\",\n    \"DSCP\": 5,\n    \"bandwidth\": \"10mbps\",\n    \"burst\": 100,\n    \"profileName\": \"sprof1\",\n    \"tenantName\": \"spectest\",\n    \"link-sets\": {},\n    \"links\": {\n      \"Tenant\": {\n        \"type\": \"tenant\",\n        \"key\": \"spectest\"\n      }\n    }\n  }\n}\n"},
		{name: "ls empty", args: "netprofile ls -t spectest", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/netprofiles/": `[]`},
			wantReqs: lsReqs, wantOut: "Name    Tenant  Bandwidth  DSCP      burst size\n------  ------  ---------  --------  ----------\n"},
		{name: "ls populated", args: "netprofile ls -t spectest", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/netprofiles/": profs},
			wantReqs: lsReqs,
			wantOut: "Name    Tenant    Bandwidth  DSCP      burst size\n" +
				"------  ------    ---------  --------  ----------\n" +
				"sprof1  spectest  10Mbps     5         100\n" +
				"sprof2  spectest             0\n" +
				"sprof3  spectest  2Gbps      0  0\n"},
		{name: "ls quiet", args: "netprofile ls -t spectest -q", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/netprofiles/": profs},
			wantReqs: lsReqs, wantOut: "sprof1\nsprof2\nsprof3\n"},
		{name: "ls json empty", args: "netprofile ls -t spectest -j", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/netprofiles/": `[]`},
			wantReqs: lsReqs, wantOut: "[]\n"},
	})
}

func TestFormatBandwidth(t *testing.T) {
	for _, c := range []struct{ bw, prev, cell, unit string }{
		{"10mbps", "", "10Mbps", "Mbps"},
		{"2Gbps", "", "2Gbps", "Gbps"},
		{"100 kbps", "", "100Kbps", "Kbps"},
		{"1|x", "", "1Gbps", "Gbps"},
		{"100", "Mbps", "100Mbps", "Mbps"},
		{"100", "", "100", ""},
		{"fast", "Kbps", "fast", "Kbps"},
	} {
		cell, unit := formatBandwidth(c.bw, c.prev)
		if cell != c.cell || unit != c.unit {
			t.Errorf("%q/%q: %q %q", c.bw, c.prev, cell, unit)
		}
	}
}

func TestAppProfile(t *testing.T) {
	aps := `[{"key":"spectest:sapp1","appProfileName":"sapp1","endpointGroups":["sgrp1","sgrp2"],"tenantName":"spectest"},{"key":"spectest:sapp2","appProfileName":"sapp2","tenantName":"spectest"}]`
	lsReqs := []string{tenantGET, "GET /api/v1/appProfiles/"}
	runCases(t, []cmdCase{
		{name: "create", args: "app-profile create -t spectest -g a,b ap",
			wantReqs: []string{`POST /api/v1/appProfiles/spectest:ap/ {"appProfileName":"ap","endpointGroups":["a","b"],"tenantName":"spectest","link-sets":{},"links":{"Tenant":{}}}`},
			wantOut:  "Creating AppProfile spectest:ap\n"},
		{name: "update clears groups", args: "app-profile update -t spectest ap",
			wantReqs: []string{`POST /api/v1/appProfiles/spectest:ap/ {"appProfileName":"ap","tenantName":"spectest","link-sets":{},"links":{"Tenant":{}}}`}},
		{name: "rm", args: "app-profile rm -t spectest ap", wantReqs: []string{"DELETE /api/v1/appProfiles/spectest:ap/"}},
		{name: "ls empty", args: "app-profile ls -t spectest", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/appProfiles/": `[]`},
			wantReqs: lsReqs, wantOut: "Tenant  AppProfile  Groups\n------  ----------  ------\n"},
		{name: "ls populated", args: "app-profile ls -t spectest", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/appProfiles/": aps},
			wantReqs: lsReqs,
			wantOut:  "Tenant    AppProfile  Groups\n------    ----------  ------\nspectest  sapp1       sgrp1,sgrp2\nspectest  sapp2       \n"},
		{name: "ls quiet", args: "app-profile ls -t spectest -q", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/appProfiles/": aps},
			wantReqs: lsReqs, wantOut: "sapp1\nsapp2\n"},
		{name: "ls json empty", args: "app-profile ls -t spectest -j", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/appProfiles/": `[]`},
			wantReqs: lsReqs, wantOut: "[]\n"},
		{name: "group-ls", args: "app-profile group-ls -t spectest sapp1",
			routes:   map[string]string{"GET /api/v1/appProfiles/spectest:sapp1/": `{"appProfileName":"sapp1","endpointGroups":["sgrp1","sgrp2"],"tenantName":"spectest"}`},
			wantReqs: []string{"GET /api/v1/appProfiles/spectest:sapp1/"}, wantOut: "sgrp1,sgrp2"},
		{name: "group-ls empty", args: "app-profile group-list -t spectest sapp2",
			routes:   map[string]string{"GET /api/v1/appProfiles/spectest:sapp2/": `{"appProfileName":"sapp2","tenantName":"spectest"}`},
			wantReqs: []string{"GET /api/v1/appProfiles/spectest:sapp2/"}, wantOut: ""},
		{name: "group-ls json", args: "app-profile group-ls -j sapp2",
			routes:   map[string]string{"GET /api/v1/appProfiles/default:sapp2/": `{"appProfileName":"sapp2","tenantName":"default"}`},
			wantReqs: []string{"GET /api/v1/appProfiles/default:sapp2/"},
			wantOut:  "{\n  \"appProfileName\": \"sapp2\",\n  \"tenantName\": \"default\",\n  \"link-sets\": {},\n  \"links\": {\n    \"Tenant\": {}\n  }\n}\n"},
	})
}

func TestExternalContracts(t *testing.T) {
	ecs := `[{"key":"spectest:sext1","contracts":["uni/tn-common/brc-default","uni/tn-common/brc-icmp"],"contractsGroupName":"sext1","contractsType":"consumed","tenantName":"spectest"},{"key":"spectest:sext2","contracts":["uni/tn-common/brc-web"],"contractsGroupName":"sext2","contractsType":"provided","tenantName":"spectest"}]`
	lsReqs := []string{tenantGET, "GET /api/v1/extContractsGroups/"}
	runCases(t, []cmdCase{
		{name: "create", args: "external-contracts create -t spectest -c -a x -a y ec",
			wantReqs: []string{`POST /api/v1/extContractsGroups/spectest:ec/ {"contracts":["x","y"],"contractsGroupName":"ec","contractsType":"consumed","tenantName":"spectest","link-sets":{}}`},
			wantOut:  "Creating ExternalContracts spectest:ec\n"},
		{name: "create provided", args: "external-contracts create --provided --contract x ec",
			wantReqs: []string{`POST /api/v1/extContractsGroups/default:ec/ {"contracts":["x"],"contractsGroupName":"ec","contractsType":"provided","tenantName":"default","link-sets":{}}`},
			wantOut:  "Creating ExternalContracts default:ec\n"},
		{name: "create both", args: "external-contracts create -t spectest -p -c -a x sext3",
			wantErr: errLine("Cannot use both provided and consumed"), wantCode: 1},
		{name: "create neither", args: "external-contracts create -a x sext3",
			wantErr: errLine("Either provided or consumed must be specified"), wantCode: 1},
		{name: "create no contracts", args: "external-contracts create -p sext3",
			wantErr: errLine("Contracts not provided"), wantCode: 1},
		{name: "rm", args: "external-contracts rm -t spectest ec", wantReqs: []string{"DELETE /api/v1/extContractsGroups/spectest:ec/"},
			wantOut: "Deleting external contracts group ec in tenant spectest\n"},
		{name: "ls empty", args: "external-contracts ls -t spectest", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/extContractsGroups/": `[]`},
			wantReqs: lsReqs, wantOut: "Tenant  Name      Type      Contracts\n------  ------    ------    -------\n"},
		{name: "ls populated", args: "external-contracts ls -t spectest", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/extContractsGroups/": ecs},
			wantReqs: lsReqs,
			wantOut: "Tenant    Name      Type        Contracts\n------    ------    ------      -------\n" +
				"spectest  sext1     consumed  [uni/tn-common/brc-default uni/tn-common/brc-icmp]\n" +
				"spectest  sext2     provided  [uni/tn-common/brc-web]\n"},
		{name: "ls quiet", args: "external-contracts ls -t spectest -q", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/extContractsGroups/": ecs},
			wantReqs: lsReqs, wantOut: "sext1\nsext2\n"},
		{name: "ls json empty", args: "external-contracts ls -t spectest -j", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/extContractsGroups/": `[]`},
			wantReqs: lsReqs, wantOut: "[]\n"},
	})
}

func TestService(t *testing.T) {
	svcs := `[{"key":"spectest:ssvc1","networkName":"snet1","selectors":["app=web","tier=fe"],"serviceName":"ssvc1","tenantName":"spectest"},{"key":"spectest:ssvc2","networkName":"snet1","selectors":["app=db"],"serviceName":"ssvc2","tenantName":"spectest"}]`
	lsReqs := []string{tenantGET, "GET /api/v1/serviceLBs/"}
	runCases(t, []cmdCase{
		{name: "create", args: "service create -s n1 -l a=b -p 80:8080:TCP --ip 1.1.1.1 svc",
			wantReqs: []string{`POST /api/v1/serviceLBs/default:svc/ {"ipAddress":"1.1.1.1","networkName":"n1","ports":["80:8080:TCP"],"selectors":["a=b"],"serviceName":"svc","tenantName":"default","links":{"Network":{},"Tenant":{}}}`},
			wantOut:  "Creating ServiceLB default:svc\n"},
		{name: "rm", args: "service rm -t spectest svc", wantReqs: []string{"DELETE /api/v1/serviceLBs/spectest:svc/"},
			wantOut: "Deleting Service  svc,spectest\n"},
		{name: "rm default tenant", args: "service delete svc", wantReqs: []string{"DELETE /api/v1/serviceLBs/default:svc/"},
			wantOut: "Deleting Service  svc,default\n"},
		{name: "inspect", args: "service inspect -t spectest svc",
			routes:   map[string]string{"GET /api/v1/inspect/serviceLBs/spectest:svc/": `{"Config":{"serviceName":"svc"},"Oper":{"serviceVip":"1.1.1.1"}}`},
			wantReqs: []string{"GET /api/v1/inspect/serviceLBs/spectest:svc/"},
			wantOut:  "{\n  \"Config\": {\n    \"serviceName\": \"svc\",\n    \"links\": {\n      \"Network\": {},\n      \"Tenant\": {}\n    }\n  },\n  \"Oper\": {\n    \"serviceVip\": \"1.1.1.1\"\n  }\n}\n"},
		{name: "ls empty", args: "service ls -t spectest", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/serviceLBs/": `[]`},
			wantReqs: lsReqs, wantOut: "ServiceName  Tenant    Network  Selectors\n---------    --------  -------  -------\n"},
		{name: "ls populated", args: "service ls -t spectest", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/serviceLBs/": svcs},
			wantReqs: lsReqs,
			wantOut: "ServiceName  Tenant    Network  Selectors\n---------    --------  -------  -------\n" +
				"ssvc1        spectest  snet1    [app=web tier=fe]  \n" +
				"ssvc2        spectest  snet1    [app=db]           \n"},
		{name: "ls empty tenant is default", args: "service ls -t= -q", routes: map[string]string{"GET /api/v1/tenants/default/": `{}`, "GET /api/v1/serviceLBs/": `[{"serviceName":"a","tenantName":"default"}]`},
			wantReqs: []string{"GET /api/v1/tenants/default/", "GET /api/v1/serviceLBs/"}, wantOut: "a\n"},
		{name: "ls quiet", args: "service ls -t spectest -q", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/serviceLBs/": svcs},
			wantReqs: lsReqs, wantOut: "ssvc1\nssvc2\n"},
		{name: "ls json empty", args: "service ls -t spectest -j", routes: map[string]string{tenantGET: tenantOK, "GET /api/v1/serviceLBs/": `[]`},
			wantReqs: lsReqs, wantOut: "[]\n"},
	})
}

func TestBgp(t *testing.T) {
	bgps := `[{"key":"spectest-host","as":"65002","hostname":"spectest-host","neighbor":"50.1.1.2","neighbor-as":"500","routerip":"50.1.1.1/24"}]`
	runCases(t, []cmdCase{
		{name: "create", args: "bgp create --router-ip 50.1.1.1/24 --as 65002 --neighbor-as 500 --neighbor 50.1.1.2 h1",
			wantReqs: []string{`POST /api/v1/Bgps/h1/ {"as":"65002","hostname":"h1","neighbor":"50.1.1.2","neighbor-as":"500","routerip":"50.1.1.1/24"}`}},
		{name: "rm", args: "bgp rm h1", wantReqs: []string{"DELETE /api/v1/Bgps/h1/"}, wantOut: "Deleting Bgp router config: h1\n"},
		{name: "inspect", args: "bgp inspect h1",
			routes:   map[string]string{"GET /api/v1/inspect/Bgps/h1/": `{"Config":{"hostname":"h1"},"Oper":{"numRoutes":2}}`},
			wantReqs: []string{"GET /api/v1/inspect/Bgps/h1/"},
			wantOut:  "{\n  \"Config\": {\n    \"hostname\": \"h1\"\n  },\n  \"Oper\": {\n    \"numRoutes\": 2\n  }\n}\n"},
		{name: "ls empty", args: "bgp ls", routes: map[string]string{"GET /api/v1/Bgps/": `[]`},
			wantReqs: []string{"GET /api/v1/Bgps/"},
			wantOut:  "HostName   RouterIP  AS       Neighbor  NeighborAS\n---------  --------  -------  --------  -------\n"},
		{name: "ls populated", args: "bgp ls", routes: map[string]string{"GET /api/v1/Bgps/": bgps},
			wantReqs: []string{"GET /api/v1/Bgps/"},
			wantOut: "HostName       RouterIP     AS       Neighbor  NeighborAS\n---------      --------     -------  --------  -------\n" +
				"spectest-host  50.1.1.1/24  65002    50.1.1.2  500\n"},
		{name: "ls quiet is honoured", args: "bgp ls -q", routes: map[string]string{"GET /api/v1/Bgps/": bgps},
			wantReqs: []string{"GET /api/v1/Bgps/"}, wantOut: "spectest-host\n"},
		{name: "ls json", args: "bgp ls -j", routes: map[string]string{"GET /api/v1/Bgps/": bgps},
			wantReqs: []string{"GET /api/v1/Bgps/"},
			wantOut:  "[\n  {\n    \"key\": \"spectest-host\",\n    \"as\": \"65002\",\n    \"hostname\": \"spectest-host\",\n    \"neighbor\": \"50.1.1.2\",\n    \"neighbor-as\": \"500\",\n    \"routerip\": \"50.1.1.1/24\"\n  }\n]\n"},
		{name: "ls json empty", args: "bgp ls -j", routes: map[string]string{"GET /api/v1/Bgps/": `[]`},
			wantReqs: []string{"GET /api/v1/Bgps/"}, wantOut: "[]\n"},
	})
	for args, msg := range map[string]string{
		"bgp create":                                             "Host name required",
		"bgp create --router-ip 1.1.1.1 h":                       "Wrong CIDR format. Enter in x.x.x.x/len format",
		"bgp create --router-ip 1.1.1.1/24 h":                    "Wrong IP format. Enter in x.x.x.x format",
		"bgp create --router-ip 1.1.1.1/24 --neighbor 2.2.2.2 h": "Missing attributes",
	} {
		r := runNetctl(t, runOpts{env: map[string]string{"NETMASTER": "http://127.0.0.1:1"}}, strings.Fields(args)...)
		if r.code != 1 || r.stderr != errLine(msg) || !strings.HasPrefix(r.stdout, "NAME:\n   netctl bgp create - Add BGP configuration.\n") {
			t.Errorf("%s: %d %q %q", args, r.code, r.stderr, r.stdout)
		}
	}
}

func TestGlobal(t *testing.T) {
	glist := `[{"key":"global","arpMode":"proxy","fwdMode":"bridge","name":"global","networkInfraType":"default","pvtSubnet":"172.19.0.0/16","vlans":"1-4094","vxlans":"1-10000"}]`
	gobj := `{"key":"global","arpMode":"proxy","fwdMode":"bridge","name":"global","networkInfraType":"default","pvtSubnet":"172.30.0.0/16","vlans":"1-4094","vxlans":"1-10000"}`
	runCases(t, []cmdCase{
		{name: "info", args: "global info", routes: map[string]string{"GET /api/v1/globals/": glist},
			wantReqs: []string{"GET /api/v1/globals/"},
			wantOut:  "Fabric mode: default\nForward mode: bridge\nARP mode: proxy\nVlan Range: 1-4094\nVxlan range: 1-10000\nPrivate subnet: 172.19.0.0/16\n"},
		{name: "info empty", args: "global info", routes: map[string]string{"GET /api/v1/globals/": `[]`},
			wantReqs: []string{"GET /api/v1/globals/"}, wantOut: ""},
		{name: "info json", args: "global info -j", routes: map[string]string{"GET /api/v1/globals/": `[{"key":"global","name":"global"}]`},
			wantReqs: []string{"GET /api/v1/globals/"}, wantOut: "[\n  {\n    \"key\": \"global\",\n    \"name\": \"global\"\n  }\n]\n"},
		{name: "info json empty", args: "global info -j", routes: map[string]string{"GET /api/v1/globals/": `[]`},
			wantReqs: []string{"GET /api/v1/globals/"}, wantOut: "[]\n"},
		{name: "inspect", args: "global inspect",
			routes:   map[string]string{"GET /api/v1/inspect/globals/global/": `{"Config":{"key":"global","name":"global"},"Oper":{"clusterMode":"test","numNetworks":4,"vlansInUse":"1077","vxlansInUse":"1-3"}}`},
			wantReqs: []string{"GET /api/v1/inspect/globals/global/"},
			wantOut:  "{\n  \"Config\": {\n    \"key\": \"global\",\n    \"name\": \"global\"\n  },\n  \"Oper\": {\n    \"clusterMode\": \"test\",\n    \"numNetworks\": 4,\n    \"vlansInUse\": \"1077\",\n    \"vxlansInUse\": \"1-3\"\n  }\n}\n"},
		{name: "set all", args: "global set -f aci -v 100-200 -x 1000-2000 -b routing -a flood -s 172.20.0.0/16",
			routes: map[string]string{"GET /api/v1/globals/global/": gobj},
			wantReqs: []string{"GET /api/v1/globals/global/",
				`POST /api/v1/globals/global/ {"key":"global","arpMode":"flood","fwdMode":"routing","name":"global","networkInfraType":"aci","pvtSubnet":"172.20.0.0/16","vlans":"100-200","vxlans":"1000-2000"}`}},
		{name: "set keeps private subnet unless given", args: "global set -b routing",
			routes: map[string]string{"GET /api/v1/globals/global/": gobj},
			wantReqs: []string{"GET /api/v1/globals/global/",
				`POST /api/v1/globals/global/ {"key":"global","arpMode":"proxy","fwdMode":"routing","name":"global","networkInfraType":"default","pvtSubnet":"172.30.0.0/16","vlans":"1-4094","vxlans":"1-10000"}`}},
		{name: "set read fails", args: "global set -b routing",
			routes:   map[string]string{"GET /api/v1/globals/global/": "500:global not found\n"},
			wantReqs: []string{"GET /api/v1/globals/global/"}, wantErr: errLine("global not found"), wantCode: 3},
	})
}

func TestAciGw(t *testing.T) {
	runCases(t, []cmdCase{
		{name: "info empty", args: "aci-gw info", routes: map[string]string{"GET /api/v1/aciGws/": `[]`},
			wantReqs: []string{"GET /api/v1/aciGws/"}, wantOut: ""},
		{name: "info populated", args: "aci-gw info", routes: map[string]string{"GET /api/v1/aciGws/": `[{"key":"aciGw","enforcePolicies":"yes","includeCommonTenant":"no","name":"aciGw","pathBindings":"topology/pod-1/paths-101/pathep-[eth1/14]","physicalDomain":"containerDom"}]`},
			wantReqs: []string{"GET /api/v1/aciGws/"},
			wantOut:  "Path bindings: topology/pod-1/paths-101/pathep-[eth1/14]\nNode bindings: \nPhysical domain: containerDom\nEnforce policies: yes\nInclude Common-Tenant: no\n"},
		{name: "info json empty", args: "aci-gw info -j", routes: map[string]string{"GET /api/v1/aciGws/": `[]`},
			wantReqs: []string{"GET /api/v1/aciGws/"}, wantOut: "[]\n"},
		{name: "info json", args: "aci-gw info -j", routes: map[string]string{"GET /api/v1/aciGws/": `[{"key":"aciGw","name":"aciGw"}]`},
			wantReqs: []string{"GET /api/v1/aciGws/"}, wantOut: "[\n  {\n    \"key\": \"aciGw\",\n    \"name\": \"aciGw\"\n  }\n]\n"},
		{name: "inspect missing", args: "aci-gw inspect",
			routes:   map[string]string{"GET /api/v1/inspect/aciGws/aciGw/": "500:aciGw not found\n"},
			wantReqs: []string{"GET /api/v1/inspect/aciGws/aciGw/"}, wantErr: errLine("aciGw not found"), wantCode: 3},
		{name: "inspect", args: "aci-gw inspect",
			routes:   map[string]string{"GET /api/v1/inspect/aciGws/aciGw/": `{"Config":{"name":"aciGw"},"Oper":{"numAppProfiles":1}}`},
			wantReqs: []string{"GET /api/v1/inspect/aciGws/aciGw/"},
			wantOut:  "{\n  \"Config\": {\n    \"name\": \"aciGw\"\n  },\n  \"Oper\": {\n    \"numAppProfiles\": 1\n  }\n}\n"},
		{name: "set defaults", args: "aci-gw set",
			wantReqs: []string{"GET /api/v1/aciGws/aciGw/", `POST /api/v1/aciGws/aciGw/ {"enforcePolicies":"yes","includeCommonTenant":"no","name":"aciGw"}`}},
		{name: "set all", args: "aci-gw set -p topology/pod-1/paths-101/pathep-[eth1/14] -n topology/pod-1/node-101 -d containerDom -e no -i yes",
			wantReqs: []string{"GET /api/v1/aciGws/aciGw/", `POST /api/v1/aciGws/aciGw/ {"enforcePolicies":"no","includeCommonTenant":"yes","name":"aciGw","nodeBindings":"topology/pod-1/node-101","pathBindings":"topology/pod-1/paths-101/pathep-[eth1/14]","physicalDomain":"containerDom"}`}},
	})
}

func TestEndpoint(t *testing.T) {
	runCases(t, []cmdCase{
		{name: "inspect", args: "endpoint inspect abc",
			routes:   map[string]string{"GET /api/v1/inspect/endpoints/abc/": `{"Oper":{"key":"abc","containerID":"abc","ipAddress":["10.1.1.2",""],"network":"n1.default"}}`},
			wantReqs: []string{"GET /api/v1/inspect/endpoints/abc/"},
			wantOut:  "{\n  \"Oper\": {\n    \"containerID\": \"abc\",\n    \"ipAddress\": [\n      \"10.1.1.2\",\n      \"\"\n    ],\n    \"network\": \"n1.default\"\n  }\n}\n"},
		{name: "alias", args: "ep inspect abc",
			routes:   map[string]string{"GET /api/v1/inspect/endpoints/abc/": `{"Oper":{}}`},
			wantReqs: []string{"GET /api/v1/inspect/endpoints/abc/"}, wantOut: "{\n  \"Oper\": {}\n}\n"},
		{name: "missing", args: "ep inspect nope",
			routes:   map[string]string{"GET /api/v1/inspect/endpoints/nope/": "500:endpoint not found\n"},
			wantReqs: []string{"GET /api/v1/inspect/endpoints/nope/"}, wantErr: errLine("endpoint not found"), wantCode: 3},
	})
}

func TestVersionCommand(t *testing.T) {
	runCases(t, []cmdCase{
		{name: "ok", args: "version", routes: map[string]string{"GET /version": `{"GitCommit":"c1","Version":"v2","BuildTime":"t3"}`},
			wantReqs: []string{"GET /version"},
			wantOut:  "Client Version:\nVersion: \nGitCommit: \nBuildTime: \n\nServer Version:\nVersion: v2\nGitCommit: c1\nBuildTime: t3\n"},
		{name: "non-200", args: "version", routes: map[string]string{"GET /version": "503:busy"},
			wantReqs: []string{"GET /version"}, wantErr: "busy" + errLine("Status 503 in request response"), wantCode: 3},
		{name: "bad json", args: "version", routes: map[string]string{"GET /version": "nope"},
			wantReqs: []string{"GET /version"}, wantErr: errLine("invalid character 'o' in literal null (expecting 'u')"), wantCode: 2},
	})
}
