package master_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/netmaster/master/mastertest"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/test/nmproc"
)

// view is what a client sees of the model: every list and inspect.
func view(t testing.TB, base string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, plural := range []string{"globals", "tenants", "networks", "endpointGroups"} {
		code, b, _ := mastertest.DoReq(t, base, "GET", "/api/v1/"+plural+"/", "")
		if code != 200 {
			t.Fatalf("list %s: %d %s", plural, code, b)
		}
		out[plural] = b
		var objs []struct {
			Key string `json:"key"`
		}
		_ = json.Unmarshal([]byte(b), &objs)
		for _, o := range objs {
			code, b, _ := mastertest.DoReq(t, base, "GET", "/api/v1/inspect/"+plural+"/"+o.Key+"/", "")
			if code != 200 {
				t.Fatalf("inspect %s %s: %d %s", plural, o.Key, code, b)
			}
			out["inspect "+plural+" "+o.Key] = b
		}
	}
	return out
}

func mustOK(t testing.TB, base, method, path, body string) string {
	t.Helper()
	code, b, _ := mastertest.DoReq(t, base, method, path, body)
	if code != 200 {
		t.Fatalf("%s %s %s: %d %s", method, path, body, code, b)
	}
	return b
}

// TestRestartKeepsEverything restarts a netmaster on its embedded etcd and
// one on an external etcd process: objects, endpoints, allocations and
// group ids are the same afterwards and none is handed out again.
func TestRestartKeepsEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("starts netmaster processes")
	}
	t.Run("embedded etcd", func(t *testing.T) {
		dir := t.TempDir()
		client, peer := nmproc.FreeAddr(t), nmproc.FreeAddr(t)
		restartKeepsEverything(t, "--embedded-etcd-dir", dir, "--etcd-endpoints", "http://"+client,
			"--embedded-etcd-peer-url", "http://"+peer)
	})
	t.Run("external etcd", func(t *testing.T) {
		restartKeepsEverything(t, "--etcd-endpoints", objdbtest.StartEtcdProcess(t).Endpoint)
	})
}

func restartKeepsEverything(t *testing.T, storeFlags ...string) {
	flags := append(storeFlags, "--leader-ttl", "3s")
	p := nmproc.Start(t, "", flags...)
	p.WaitRole("leader", 30*time.Second)
	base := p.URL()
	mustOK(t, base, "POST", "/api/v1/tenants/blue/", `{"tenantName":"blue"}`)
	mustOK(t, base, "POST", "/api/v1/globals/global/", mastertest.GlobalBody("default", "1-2000", "5000-9000", "bridge", "flood", "172.19.0.0/16"))
	mustOK(t, base, "POST", "/api/v1/networks/blue:web/", mastertest.NetBody("blue", "web", "vxlan", "10.1.2.0/24", "10.1.2.254", 0))
	for _, g := range []string{"a", "b", "c"} {
		mustOK(t, base, "POST", "/api/v1/endpointGroups/blue:"+g+"/", mastertest.EPGBody("blue", g, "web", ""))
	}
	mustOK(t, base, "DELETE", "/api/v1/endpointGroups/blue:b/", "")
	mustOK(t, base, "POST", "/api/v1/endpointGroups/blue:p/", mastertest.EPGBody("blue", "p", "web", `"ipPool":"10.1.2.100-10.1.2.110"`))
	for i := 0; i < 5; i++ {
		g := []string{"a", "c", "p", "a", ""}[i]
		mustOK(t, base, "POST", "/plugin/createEndpoint", mastertest.CreateEP("blue", "web", g, fmt.Sprintf("c%d", i), ""))
	}
	mustOK(t, base, "POST", "/plugin/allocAddress", `{"NetworkID":"web.blue"}`)
	before := view(t, base)

	p.Stop()
	p.Restart()
	p.WaitRole("leader", 30*time.Second)
	after := view(t, base)
	if d := mastertest.DiffDumps(before, after); d != "" {
		t.Fatalf("restart changed the model view:\n%s", d)
	}
	// Ids and addresses in use are not handed out again.
	mustOK(t, base, "POST", "/api/v1/endpointGroups/blue:d/", mastertest.EPGBody("blue", "d", "web", ""))
	var gi struct{ Oper struct{ PktTag int } }
	_ = json.Unmarshal([]byte(mustOK(t, base, "GET", "/api/v1/inspect/endpointGroups/blue:d/", "")), &gi)
	var r mastertest.EPResp
	_ = json.Unmarshal([]byte(mustOK(t, base, "POST", "/plugin/createEndpoint", mastertest.CreateEP("blue", "web", "d", "new", ""))), &r)
	if r.EndpointConfig.EndpointGroupID != 4 {
		t.Fatalf("group created after restart got id %d, want 4 (a=1, p=2 reused b's id, c=3)", r.EndpointConfig.EndpointGroupID)
	}
	// c0..c4 took .1-.3 (network), .100 (pool), .4 (network); allocAddress .5.
	if r.EndpointConfig.IPAddress != "10.1.2.6" {
		t.Fatalf("endpoint after restart got %s, want 10.1.2.6", r.EndpointConfig.IPAddress)
	}
	p.Stop()
}

// TestFailover runs two netmasters on one etcd process; the leader is
// killed while 64 endpoint creations spread over both are under way.
func TestFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and netmaster processes")
	}
	etcdSrv := objdbtest.StartEtcdProcess(t)
	flags := []string{"--etcd-endpoints", etcdSrv.Endpoint, "--leader-ttl", "3s"}
	a := nmproc.Start(t, "", flags...)
	a.WaitRole("leader", 30*time.Second)
	b := nmproc.Start(t, "", flags...)
	b.WaitRole("follower", 30*time.Second)

	// Requests to the follower are proxied to the leader.
	mustOK(t, b.URL(), "POST", "/api/v1/tenants/t1/", `{"tenantName":"t1"}`)
	mustOK(t, b.URL(), "POST", "/api/v1/networks/t1:n1/", mastertest.NetBody("t1", "n1", "vlan", "20.1.0.0/16", "20.1.255.254", 0))
	mustOK(t, b.URL(), "POST", "/api/v1/endpointGroups/t1:g1/", mastertest.EPGBody("t1", "g1", "n1", ""))
	mustOK(t, a.URL(), "POST", "/plugin/createEndpoint", mastertest.CreateEP("t1", "n1", "g1", "warmup", ""))
	mustOK(t, b.URL(), "POST", "/plugin/deleteEndpoint", mastertest.DeleteEP("t1", "n1", "g1", "warmup"))
	before := view(t, a.URL())

	const n = 64
	addrs := make([]string, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	succeeded, afterKill := 0, 0
	killed := make(chan time.Duration, 1) // how long until b led
	deadline := time.Now().Add(40 * time.Second)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			body := mastertest.CreateEP("t1", "n1", "g1", fmt.Sprintf("ep%d", i), "")
			target := []*nmproc.Proc{a, b}[i%2]
			time.Sleep(time.Duration(i) * 15 * time.Millisecond)
			for time.Now().Before(deadline) {
				c := http.Client{Timeout: 5 * time.Second}
				resp, err := c.Post(target.URL()+"/plugin/createEndpoint", "application/json", strings.NewReader(body))
				if err == nil {
					var r mastertest.EPResp
					decErr := json.NewDecoder(resp.Body).Decode(&r)
					resp.Body.Close()
					if resp.StatusCode == 200 && decErr == nil {
						mu.Lock()
						addrs[i] = r.EndpointConfig.IPAddress
						succeeded++
						if succeeded > n/3 {
							afterKill++
						}
						if succeeded == n/3 {
							go func() {
								a.Kill()
								at := time.Now()
								for b.Role() != "leader" && time.Since(at) < 10*time.Second {
									time.Sleep(20 * time.Millisecond)
								}
								killed <- time.Since(at)
							}()
						}
						mu.Unlock()
						return
					}
				}
				// The leader is gone or not yet replaced: an agent retries,
				// on the surviving netmaster.
				target = b
				time.Sleep(100 * time.Millisecond)
			}
		}(i)
	}
	wg.Wait()
	var took time.Duration
	select {
	case took = <-killed:
	case <-time.After(15 * time.Second):
		t.Fatal("leader never killed")
	}
	if took > 5*time.Second {
		t.Fatalf("follower took %v to lead (ttl 3s)", took)
	}
	t.Logf("follower led %v after the leader was killed", took.Round(10*time.Millisecond))
	seen := map[string]int{}
	for i, ip := range addrs {
		if ip == "" {
			t.Fatalf("endpoint %d never created", i)
		}
		if j, dup := seen[ip]; dup {
			t.Fatalf("endpoints %d and %d both got %s", j, i, ip)
		}
		seen[ip] = i
	}
	after := view(t, b.URL())
	for k, v := range before {
		if strings.HasPrefix(k, "inspect") {
			continue // counters changed
		}
		if after[k] != v {
			t.Fatalf("%s changed across fail-over:\n before %s\n after  %s", k, v, after[k])
		}
	}
	for i := 0; i < n; i++ {
		mustOK(t, b.URL(), "POST", "/plugin/deleteEndpoint", mastertest.DeleteEP("t1", "n1", "g1", fmt.Sprintf("ep%d", i)))
	}
	// An address the killed leader allocated but never recorded is given
	// back by the new leader's sweep, one lock TTL into its term.
	var ni mastertest.NetInspect
	for sweepBy := time.Now().Add(10 * time.Second); ; {
		ni = mastertest.NetInspect{}
		_ = json.Unmarshal([]byte(mustOK(t, b.URL(), "GET", "/api/v1/inspect/networks/t1:n1/", "")), &ni)
		if ni.Oper.AllocatedIPAddresses == "20.1.255.254" && ni.Oper.NumEndpoints == 0 && ni.Oper.AllocatedAddressesCount == 0 {
			break
		}
		if time.Now().After(sweepBy) {
			t.Fatalf("after deleting every endpoint: %+v", ni.Oper)
		}
		time.Sleep(200 * time.Millisecond)
	}
	ips := make([]string, 0, n)
	for ip := range seen {
		ips = append(ips, ip)
	}
	sort.Strings(ips)
	t.Logf("%d endpoints (%d created after the leader was killed), %d distinct addresses", n, afterKill, len(ips))
	for _, line := range strings.Split(b.Output(), "\n") {
		if strings.Contains(line, "leaked address") || strings.Contains(line, "corrected to") {
			t.Logf("new leader: %s", line)
		}
	}
}

// TestFailoverTime measures how long a killed leader takes to be replaced.
func TestFailoverTime(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and netmaster processes")
	}
	etcdSrv := objdbtest.StartEtcdProcess(t)
	flags := []string{"--etcd-endpoints", etcdSrv.Endpoint, "--leader-ttl", "3s"}
	a := nmproc.Start(t, "", flags...)
	a.WaitRole("leader", 30*time.Second)
	b := nmproc.Start(t, "", flags...)
	b.WaitRole("follower", 30*time.Second)
	mustOK(t, b.URL(), "POST", "/api/v1/tenants/t1/", `{"tenantName":"t1"}`)
	mustOK(t, b.URL(), "POST", "/api/v1/networks/t1:n1/", mastertest.NetBody("t1", "n1", "vxlan", "20.1.0.0/16", "", 0))
	before := view(t, a.URL())
	a.Kill()
	killedAt := time.Now()
	for {
		code, _, _ := mastertest.DoReq(t, b.URL(), "GET", "/api/v1/tenants/", "")
		if code == 200 && b.Role() == "leader" {
			break
		}
		if time.Since(killedAt) > 5*time.Second {
			t.Fatalf("follower did not take over within ttl+2s; output:\n%s", b.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("follower served /api/v1 as leader %v after SIGKILL of the leader (ttl 3s)", time.Since(killedAt).Round(10*time.Millisecond))
	if d := mastertest.DiffDumps(before, view(t, b.URL())); d != "" {
		t.Fatalf("objects changed across fail-over:\n%s", d)
	}
}
