package mastertest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// The helpers below drive service load balancers and their providers.

// SvcPath is the REST path of a serviceLB.
func SvcPath(tenant, name string) string { return "/api/v1/serviceLBs/" + tenant + ":" + name + "/" }

// SvcBody is a serviceLB request; ip "" asks for an automatic VIP.
func SvcBody(tenant, name, net, ip string, selectors, ports []string) string {
	b, _ := json.Marshal(map[string]any{"tenantName": tenant, "serviceName": name, "networkName": net,
		"ipAddress": ip, "selectors": selectors, "ports": ports})
	return string(b)
}

// SvcRecord is the persisted service state (docs/daemons.md §3.12).
type SvcRecord struct {
	ID          string            `json:"id"`
	ServiceName string            `json:"servicename"`
	Tenant      string            `json:"tenantname"`
	Network     string            `json:"subnet"`
	Ports       []string          `json:"ports"`
	Selectors   map[string]string `json:"selectors"`
	IPAddress   string            `json:"ipaddress"`
	Providers   map[string]struct {
		IPAddress, ContainerID, Tenant, Network, EpIDKey string
		Labels                                           map[string]string
		Services                                         []string
	} `json:"providers"`
}

// SvcState reads state/serviceLB/<id>; ok is false when absent.
func (e *Env) SvcState(id string) (SvcRecord, bool) {
	e.T.Helper()
	raw, ok := e.Dump()["state/serviceLB/"+id]
	var r SvcRecord
	if ok {
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			e.T.Fatalf("decode service state %s: %v", raw, err)
		}
	}
	return r, ok
}

// Published returns the provider list of state/provider/<id>, or nil and
// false when absent.
func (e *Env) Published(id string) ([]string, bool) {
	e.T.Helper()
	raw, ok := e.Dump()["state/provider/"+id]
	if !ok {
		return nil, false
	}
	var sp struct {
		ID, ServiceName string
		Providers       []string
	}
	if err := json.Unmarshal([]byte(raw), &sp); err != nil || sp.ID != id || sp.ServiceName != id {
		e.T.Fatalf("provider list %s: %v", raw, err)
	}
	return sp.Providers, true
}

func (e *Env) WantPublished(id string, want ...string) {
	e.T.Helper()
	got, ok := e.Published(id)
	if !ok {
		e.T.Fatalf("%s: no provider list, want %v", id, want)
	}
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		e.T.Fatalf("%s providers %v, want %v", id, got, want)
	}
}

type SvcInspect struct {
	Oper struct {
		ServiceVip   string `json:"serviceVip"`
		NumProviders int    `json:"numProviders"`
		Providers    []struct {
			ServiceName string   `json:"serviceName"`
			ContainerID string   `json:"containerID"`
			IPAddress   []string `json:"ipAddress"`
			Labels      string   `json:"labels"`
			Network     string   `json:"network"`
		} `json:"providers"`
	}
}

func StartEvent(tenant, network, endpointID, container, ip string, labels map[string]string) string {
	b, _ := json.Marshal(map[string]any{"IPAddress": ip, "ContainerID": container, "Labels": labels, "Tenant": tenant,
		"Network": network, "Event": "start", "EndpointID": endpointID, "EPCommonName": "/" + container})
	return string(b)
}

func DieEvent(container string) string {
	return fmt.Sprintf(`{"ContainerID":%q,"Event":"die"}`, container)
}
