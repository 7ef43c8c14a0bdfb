package controllers_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
)

// TestEdgeRefusals covers the refusals of docs/rest-errors.md: each bad
// request answers its client-error status with a message naming the
// field, key or object at fault, and leaves the store byte-identical
// (env.failStatus compares full dumps).
func TestEdgeRefusals(t *testing.T) {
	e := newEnv(t)
	e.CreateNet("default", "web", "vlan", "10.1.1.0/24", "10.1.1.254", 100)
	e.CreateNet("default", "db", "vlan", "10.1.2.0/24", "", 0)
	e.CreateEPG("default", "front", "web", "")
	e.CreateEPG("default", "store", "db", "")
	e.OK("POST", "/api/v1/tenants/victim/", `{"tenantName":"victim"}`)
	netPath := func(name string) string { return "/api/v1/networks/default:" + name + "/" }
	v6Net := func(name, v6subnet, v6gw string) string {
		return fmt.Sprintf(`{"tenantName":"default","networkName":%q,"encap":"vlan","subnet":"10.9.1.0/24","ipv6Subnet":%q,"ipv6Gateway":%q}`,
			name, v6subnet, v6gw)
	}

	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		msg                      string
	}{
		// Item 4: gateways.
		{"gateway at the network address", "POST", netPath("g1"), mastertest.NetBody("default", "g1", "vlan", "10.3.1.0/24", "10.3.1.0", 0),
			400, "gateway 10.3.1.0 is the network address of subnet 10.3.1.0/24"},
		{"gateway at the broadcast address", "POST", netPath("g1"), mastertest.NetBody("default", "g1", "vlan", "10.3.1.0/24", "10.3.1.255", 0),
			400, "gateway 10.3.1.255 is the broadcast address of subnet 10.3.1.0/24"},
		{"gateway outside the subnet", "POST", netPath("g1"), mastertest.NetBody("default", "g1", "vlan", "10.3.1.0/24", "10.3.2.1", 0),
			400, "gateway 10.3.2.1 is outside subnet 10.3.1.0/24"},
		{"gateway outside a range subnet", "POST", netPath("g1"), mastertest.NetBody("default", "g1", "vlan", "10.3.1.10-10.3.1.20/24", "10.3.1.5", 0),
			400, "gateway 10.3.1.5 is outside the range 10.3.1.10-10.3.1.20 of subnet 10.3.1.10-10.3.1.20/24"},
		{"ipv6Gateway without ipv6Subnet", "POST", netPath("g6"), v6Net("g6", "", "2001:db8::1"),
			400, "ipv6Gateway 2001:db8::1 given without ipv6Subnet"},
		{"ipv6Gateway outside ipv6Subnet", "POST", netPath("g6"), v6Net("g6", "2001:db8:1::/64", "2001:db8:2::1"),
			400, "ipv6Gateway 2001:db8:2::1 is outside ipv6Subnet 2001:db8:1::/64"},
		// Item 4: createEndpoint.
		{"group of another network", "POST", "/plugin/createEndpoint", mastertest.CreateEP("default", "web", "store", "c1", ""),
			400, "ConfigEP.ServiceName: group store of tenant default belongs to network db, not web"},
		{"createEndpoint without ConfigEP", "POST", "/plugin/createEndpoint", `{"TenantName":"default","NetworkName":"web"}`,
			400, "ConfigEP.Container is required"},
		{"createEndpoint with only a host", "POST", "/plugin/createEndpoint", `{"TenantName":"default","NetworkName":"web","ConfigEP":{"Host":"h1"}}`,
			400, "ConfigEP.Container is required"},
		{"empty createEndpoint", "POST", "/plugin/createEndpoint", `{}`, 400, "TenantName is required"},
		// Item 4: bodies.
		{"invalid UTF-8 in a model body", "POST", "/api/v1/tenants/t9/", "{\"tenantName\":\"t9\",\"defaultNetwork\":\"a\xffb\"}",
			400, "request body is not valid UTF-8 (byte 38)"},
		{"invalid UTF-8 in a plugin body", "POST", "/plugin/createEndpoint", "{\"TenantName\":\"default\xc3\",\"NetworkName\":\"web\"}",
			400, "request body is not valid UTF-8 (byte 22)"},
		{"body above the limit", "POST", "/api/v1/tenants/t9/", `{"tenantName":"t9","x":"` + strings.Repeat("a", 4<<20) + `"}`,
			413, "request body exceeds 4194304 bytes"},
		{"plugin body above the limit", "POST", "/plugin/allocAddress", `{"NetworkID":"` + strings.Repeat("a", 4<<20) + `"}`,
			413, "request body exceeds 4194304 bytes"},
		{"malformed plugin body", "POST", "/plugin/allocAddress", `{"NetworkID":7}`,
			400, "decode request: json: cannot unmarshal number into Go struct field AddressAllocRequest.NetworkID of type string"},
		// Item 5: keys are checked, never cleaned.
		{"encoded slash and dot-dot", "DELETE", "/api/v1/tenants/t1%2F..%2Fvictim/", "",
			400, `invalid key "t1/../victim" in URL: contains "/"`},
		{"dot-dot key", "DELETE", "/api/v1/tenants/%2e%2e/", "", 400, `invalid key ".." in URL: a relative path element`},
		{"dot-dot segments", "DELETE", "/api/v1/tenants/x/../victim/", "", 404, "404 page not found"},
		{"bad key on /service", "GET", "/service/a%2Fb", "", 200, "null"},
		// Item 7: messages.
		{"missing tenant on /plugin", "POST", "/plugin/createEndpoint", mastertest.CreateEP("nosuch", "web", "", "c1", ""),
			404, "network web.nosuch not found"},
		{"missing network on /plugin", "POST", "/plugin/createEndpoint", mastertest.CreateEP("default", "nonet", "", "c1", ""),
			404, "network nonet.default not found"},
		{"missing group on /plugin", "POST", "/plugin/createEndpoint", mastertest.CreateEP("default", "web", "nogroup", "c1", ""),
			404, "group nogroup:default not found"},
		{"missing endpoint on /plugin", "POST", "/plugin/deleteEndpoint", mastertest.DeleteEP("default", "web", "", "zz"),
			404, "endpoint web.default-zz not found"},
		{"empty deleteEndpoint", "POST", "/plugin/deleteEndpoint", `{}`, 400, "TenantName is required"},
		{"malformed pool", "POST", "/plugin/allocAddress", `{"AddressPool":"10.1.1.0"}`,
			400, `AddressPool "10.1.1.0" is not <subnet>/<length> or <subnet>/<length>:<tenant>`},
		{"no network or pool", "POST", "/plugin/allocAddress", `{}`, 400, "NetworkID or AddressPool is required"},
		{"pool of no network", "POST", "/plugin/allocAddress", `{"AddressPool":"10.7.0.0/16"}`,
			404, "AddressPool 10.7.0.0/16: no network has subnet 10.7.0.0/16"},
		{"reversed vlan range", "POST", "/api/v1/globals/global/", mastertest.GlobalBody("default", "100-1", "1-10000", "bridge", "proxy", "172.19.0.0/16"),
			400, "vlans: invalid range 100-1, min is greater than max"},
		{"vxlan range too high", "POST", "/api/v1/globals/global/", mastertest.GlobalBody("default", "1-4094", "1-70000", "bridge", "proxy", "172.19.0.0/16"),
			400, "vxlans: invalid range 1-70000, vxlan values exceed 65535 max allowed"},
		{"Invalid Key", "POST", netPath("other"), mastertest.NetBody("default", "x", "vlan", "10.3.1.0/24", "", 0),
			400, `Invalid Key: URL key "default:other" differs from "default:x" (tenantName:networkName in the body)`},
		// Item 6: statuses.
		{"get of a missing object", "GET", "/api/v1/networks/default:nosuch/", "", 404, "network not found"},
		{"inspect of a missing object", "GET", "/api/v1/inspect/networks/default:nosuch/", "", 404, "network not found"},
		{"delete of a missing object", "DELETE", netPath("nosuch"), "", 409, "network not found"},
		{"state conflict", "DELETE", "/api/v1/tenants/default/", "", 409, "cannot delete default has 2 endpoint groups"},
		{"update refused", "POST", netPath("web"), mastertest.NetBody("default", "web", "vlan", "10.1.1.0/24", "10.1.1.254", 100),
			409, "Cant change network parameters after its created"},
		{"tag taken", "POST", netPath("n2"), mastertest.NetBody("default", "n2", "vlan", "10.5.1.0/24", "", 100),
			409, "requested vlan not available - vlan:100"},
		{"no controller", "POST", "/api/v1/volumes/default:v/", `{"tenantName":"default","volumeName":"v"}`, 400, "Invalid object type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.Dump()
			code, body := e.Do(tc.method, tc.path, tc.body)
			if code != tc.status || strings.TrimSuffix(body, "\n") != tc.msg {
				t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, code, body, tc.status, tc.msg)
			}
			if d := mastertest.DiffDumps(before, e.Dump()); d != "" {
				t.Errorf("%s %s refused but changed the store:\n%s", tc.method, tc.path, d)
			}
		})
	}
	// The victim of the encoded path is still there.
	e.OK("GET", "/api/v1/tenants/victim/", "")
}

// TestTruncatedBody: a body shorter than its Content-Length is refused
// once the client stops sending, and nothing of it is processed.
func TestTruncatedBody(t *testing.T) {
	e := newEnv(t)
	addr := e.Srv.Listener.Addr().String()
	for _, tc := range []struct{ path, body string }{
		{"/api/v1/tenants/t7/", `{"tenantName":"t7"}`},
		{"/plugin/allocAddress", `{"NetworkID":"x.default"}`},
	} {
		before := e.Dump()
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			tc.path, len(tc.body)+50, tc.body)
		conn.(*net.TCPConn).CloseWrite()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		b := make([]byte, 512)
		n, _ := resp.Body.Read(b)
		resp.Body.Close()
		conn.Close()
		want := fmt.Sprintf("request body ends after %d of its %d bytes (Content-Length)\n", len(tc.body), len(tc.body)+50)
		if resp.StatusCode != http.StatusBadRequest || string(b[:n]) != want {
			t.Errorf("%s: %d %q, want 400 %q", tc.path, resp.StatusCode, b[:n], want)
		}
		if d := mastertest.DiffDumps(before, e.Dump()); d != "" {
			t.Errorf("%s: truncated body changed the store:\n%s", tc.path, d)
		}
	}
}
