package controllers_test

import (
	"strings"
	"testing"
)

const aciGwPath = "/api/v1/aciGws/aciGw/"

func aciGwBody(extra string) string {
	b := `{"name":"aciGw","enforcePolicies":"yes","includeCommonTenant":"no","physicalDomain":"phys1"`
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

type aciGwInspect struct {
	Oper struct {
		NumAppProfiles int `json:"numAppProfiles"`
	} `json:"Oper"`
}

func TestAciGw(t *testing.T) {
	e := newEnv(t)
	// 29: bindings accepted and read back exactly.
	paths := "topology/pod-1/paths-101/pathep-[eth1/14],topology/pod-1/paths-102/pathep-[eth1/2]"
	e.OK("POST", aciGwPath, aciGwBody(`"pathBindings":"`+paths+`","nodeBindings":"topology/pod-1/node-101"`))
	b := e.OK("GET", aciGwPath, "")
	for _, want := range []string{`"pathBindings":"` + paths + `"`, `"nodeBindings":"topology/pod-1/node-101"`, `"physicalDomain":"phys1"`} {
		if !strings.Contains(b, want) {
			t.Fatalf("aciGw %s lacks %s", b, want)
		}
	}
	e.Fail("POST", aciGwPath, aciGwBody(`"pathBindings":"pod-1/paths-101/pathep-[eth1/14]"`), "")
	e.Fail("POST", aciGwPath, aciGwBody(`"pathBindings":"topology/pod-1/paths-101/pathep-[eth1/14],bad"`), "")
	e.Fail("POST", aciGwPath, aciGwBody(`"nodeBindings":"topology/tor-1/node-101"`), "")

	// Update replaces the settings.
	e.OK("POST", aciGwPath, `{"name":"aciGw","enforcePolicies":"no","includeCommonTenant":"yes","physicalDomain":"phys2","nodeBindings":"topology/pod-2/node-7"}`)
	b = e.OK("GET", aciGwPath, "")
	for _, want := range []string{`"enforcePolicies":"no"`, `"includeCommonTenant":"yes"`, `"physicalDomain":"phys2"`, `"nodeBindings":"topology/pod-2/node-7"`} {
		if !strings.Contains(b, want) {
			t.Fatalf("updated aciGw %s lacks %s", b, want)
		}
	}
	if strings.Contains(b, "pathBindings") {
		t.Fatalf("updated aciGw kept path bindings: %s", b)
	}

	// Delete refused while app profiles exist; oper counts them.
	e.OK("POST", "/api/v1/appProfiles/default:a1/", `{"tenantName":"default","appProfileName":"a1"}`)
	e.OK("POST", "/api/v1/appProfiles/default:a2/", `{"tenantName":"default","appProfileName":"a2"}`)
	var op aciGwInspect
	e.Inspect("aciGws/aciGw/", &op)
	if op.Oper.NumAppProfiles != 2 {
		t.Fatalf("numAppProfiles %d, want 2", op.Oper.NumAppProfiles)
	}
	e.Fail("DELETE", aciGwPath, "", "2 App-Profiles found. Delete them first")
	e.OK("DELETE", "/api/v1/appProfiles/default:a1/", "")
	e.Fail("DELETE", aciGwPath, "", "1 App-Profiles found. Delete them first")
	e.OK("DELETE", "/api/v1/appProfiles/default:a2/", "")
	e.OK("DELETE", aciGwPath, "")
	if code, _ := e.Do("GET", aciGwPath, ""); code == 200 {
		t.Fatalf("aciGw still readable after delete")
	}
	// Creating while app profiles exist is allowed.
	e.OK("POST", "/api/v1/appProfiles/default:a3/", `{"tenantName":"default","appProfileName":"a3"}`)
	e.OK("POST", aciGwPath, aciGwBody(""))
}
