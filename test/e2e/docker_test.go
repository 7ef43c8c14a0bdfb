package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/testbed"
)

// dockerCtr is a docker container with its contiv address.
type dockerCtr struct {
	*testbed.DockerContainer
	ip string
}

// dockerRun starts a container on h's engine attached to network (extra
// docker run options after it) and reads its address.
func dockerRun(t *testing.T, h *testbed.Host, name, network string, opts ...string) *dockerCtr {
	t.Helper()
	c, err := h.DockerRun(name, append([]string{"--network", network}, opts...)...)
	if err != nil {
		t.Fatalf("docker run %s on %s: %v", name, h.Name, err)
	}
	ip, err := c.IPOn(network)
	if err != nil || net.ParseIP(ip) == nil {
		t.Fatalf("address of %s on %s: %q %v", name, network, ip, err)
	}
	return &dockerCtr{DockerContainer: c, ip: ip}
}

// waitDockerNetwork polls until `docker network ls` on h shows name with
// our driver (present) or does not show it (absent).
func waitDockerNetwork(h *testbed.Host, name string, present bool, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		out, err := h.Docker("network", "ls", "--format", "{{.Name}} {{.Driver}}")
		has := err == nil && containsLine(out, name+" "+testbed.PluginName)
		if err == nil && has == present {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("docker network %s on %s: present=%t wanted within %v (%v):\n%s", name, h.Name, present, within, err, out)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func containsLine(out, line string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// reach checks ping, TCP (request/response and a 3 MB transfer) and UDP
// from a to b, at the containers' default interface settings.
func reach(t *testing.T, a, b *dockerCtr) {
	t.Helper()
	if err := a.Ping(b.ip, 1, 15*time.Second); err != nil {
		t.Errorf("ping %s → %s (%s): %v", a.Name, b.Name, b.ip, err)
		return
	}
	if out, err := a.Host.Docker("exec", a.ID, "ping", "-c", "1", "-W", "2", b.ip); err != nil {
		t.Errorf("ping inside %s → %s: %v\n%s", a.Name, b.ip, err, out)
	}
	if err := a.CheckTraffic(b.ip, testbed.TrafficPort, 10*time.Second); err != nil {
		t.Errorf("traffic %s → %s (%s): %v", a.Name, b.Name, b.ip, err)
	}
}

// fetchPage serves a page with busybox httpd inside b and fetches it
// with busybox wget inside a: TCP between the containers' own programs.
// (busybox-static's wget crashes with -T; busybox timeout bounds it.)
func fetchPage(t *testing.T, a, b *dockerCtr, port int) {
	t.Helper()
	page := "page of " + b.Name
	if _, err := b.Host.Docker("exec", b.ID, "sh", "-c", fmt.Sprintf("mkdir -p /tmp/www && echo %s > /tmp/www/index.html", page)); err != nil {
		t.Fatalf("write page in %s: %v", b.Name, err)
	}
	if _, err := b.Host.Docker("exec", "-d", b.ID, "httpd", "-f", "-p", fmt.Sprint(port), "-h", "/tmp/www"); err != nil {
		t.Fatalf("httpd in %s: %v", b.Name, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := a.Host.Docker("exec", a.ID, "timeout", "5", "wget", "-q", "-O", "-", fmt.Sprintf("http://%s:%d/index.html", b.ip, port))
		if err == nil && got == page {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("wget in %s from httpd in %s (%s:%d): %q %v", a.Name, b.Name, b.ip, port, got, err)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestDockerTwoHosts is issue 18's acceptance on two hosts with real
// Docker Engines: a network (and a group network) made with netctl shows
// up on both engines, docker run containers reach each other with ICMP,
// TCP and UDP, docker stop/rm and docker network rm / netctl net rm leave
// nothing behind, and bad requests to the plugin socket change nothing.
func TestDockerTwoHosts(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 2, Docker: true})
	h0, h1 := tb.Hosts[0], tb.Hosts[1]
	before := []hostSnapshot{snapshot(t, h0), snapshot(t, h1)}

	netctl(t, tb, "net", "create", "--subnet", "198.19.10.0/24", "--gateway", "198.19.10.254", "dnet")
	netctl(t, tb, "group", "create", "dnet", "web")
	for _, h := range tb.Hosts {
		for _, n := range []string{"dnet", "web"} {
			if err := waitDockerNetwork(h, n, true, 30*time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}

	a := dockerRun(t, h0, "alpha", "dnet", "--label", "app=web")
	b := dockerRun(t, h1, "bravo", "dnet", "--ip", "198.19.10.50")
	w0 := dockerRun(t, h0, "web-h0", "web")
	w1 := dockerRun(t, h1, "web-h1", "web")
	if b.ip != "198.19.10.50" {
		t.Errorf("docker run --ip 198.19.10.50 got %s", b.ip)
	}

	t.Run("docker network inspect shows contiv's addresses", func(t *testing.T) {
		out, err := h0.Docker("network", "inspect", "dnet", "-f", "{{range .Containers}}{{.Name}}={{.IPv4Address}}/{{.MacAddress}} {{end}}")
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("alpha=%s/24/02:02:%s", a.ip, macTail(a.ip))
		if !strings.Contains(out, want) {
			t.Errorf("docker network inspect dnet on %s: %q, want %q", h0.Name, out, want)
		}
		ins := netctl(t, tb, "net", "inspect", "dnet")
		for _, ip := range []string{a.ip, b.ip} {
			if !strings.Contains(ins, ip) {
				t.Errorf("netctl net inspect dnet lacks %s:\n%s", ip, ins)
			}
		}
	})

	t.Run("containers reach each other across hosts", func(t *testing.T) {
		for _, c := range []*dockerCtr{a, b, w0, w1} {
			c.ServeTraffic(t)
		}
		reach(t, a, b)
		reach(t, b, a)
		reach(t, w0, w1)
		reach(t, w1, w0)
		fetchPage(t, a, b, 8080)
		fetchPage(t, w1, w0, 8080)
	})

	t.Run("container events: endpoint inspect and service providers", func(t *testing.T) {
		netctl(t, tb, "net", "create", "--subnet", "198.19.20.0/24", "svcnet")
		netctl(t, tb, "service", "create", "-s", "svcnet", "-l", "app=web", "-p", "80:8080:TCP", "websvc")
		deadline := time.Now().Add(20 * time.Second)
		for _, c := range []*dockerCtr{a, b} {
			for {
				out, _ := tb.Netctl("endpoint", "inspect", c.Name)
				if strings.Contains(out, c.ID) && regexp.MustCompile(`"containerName":\s*"`+c.Name+`"`).MatchString(out) {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("netctl endpoint inspect %s does not show container %s:\n%s", c.Name, c.ID, out)
					break
				}
				time.Sleep(250 * time.Millisecond)
			}
		}
		for {
			out, _ := tb.Netctl("service", "inspect", "websvc")
			if strings.Contains(out, a.ip) && !strings.Contains(out, b.ip) {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("service websvc: want provider %s (label app=web) only:\n%s", a.ip, out)
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
	})

	t.Run("bad requests to the plugin socket change nothing", func(t *testing.T) {
		pluginRefusals(t, tb, h0, a)
	})

	t.Run("docker rm releases the address, port and flows", func(t *testing.T) {
		mid := snapshot(t, h0)
		c := dockerRun(t, h1, "charlie", "dnet", "--ip", "198.19.10.60")
		if err := c.Ping(a.ip, 1, 15*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := c.Remove(); err != nil {
			t.Fatal(err)
		}
		// The address is free again: a new container may take it.
		d := dockerRun(t, h0, "delta", "dnet", "--ip", "198.19.10.60")
		if err := d.Remove(); err != nil {
			t.Fatal(err)
		}
		if err := waitSnapshot(h0, mid, 15*time.Second); err != nil {
			t.Errorf("ports or flows of c/d left on %s: %v", h0.Name, err)
		}
		if out := netctl(t, tb, "net", "inspect", "dnet"); strings.Contains(out, "198.19.10.60") {
			t.Errorf("netctl net inspect still lists 198.19.10.60:\n%s", out)
		}
	})

	t.Run("docker rm, docker network rm and netctl net rm clean up both hosts", func(t *testing.T) {
		t0 := time.Now()
		step := func(what string) { t.Logf("%s after %v", what, time.Since(t0).Round(10*time.Millisecond)) }
		for _, c := range []*dockerCtr{a, b, w0, w1} {
			if err := c.Remove(); err != nil {
				t.Fatal(err)
			}
		}
		step("containers removed")
		for _, h := range tb.Hosts {
			if _, err := h.Docker("network", "rm", "web"); err != nil {
				t.Error(err)
			}
		}
		step("docker network rm web")
		netctl(t, tb, "group", "rm", "web")
		netctl(t, tb, "service", "rm", "websvc")
		netctl(t, tb, "net", "rm", "svcnet")
		netctl(t, tb, "net", "rm", "dnet")
		step("netctl rm")
		for i, h := range tb.Hosts {
			for _, n := range []string{"dnet", "web", "svcnet"} {
				if err := waitDockerNetwork(h, n, false, 30*time.Second); err != nil {
					t.Error(err)
				}
			}
			step("docker networks gone on " + h.Name)
			if err := waitSnapshot(h, before[i], 20*time.Second); err != nil {
				t.Errorf("%s not back to its state before the test: %v", h.Name, err)
			}
			step("OVS back on " + h.Name)
		}
		if out := netctl(t, tb, "net", "ls"); strings.Contains(out, "dnet") {
			t.Errorf("netctl net ls still lists dnet:\n%s", out)
		}
	})
}

// macTail is the last four octets of contiv's MAC for an IPv4 address.
func macTail(ip string) string {
	v4 := net.ParseIP(ip).To4()
	return fmt.Sprintf("%02x:%02x:%02x:%02x", v4[0], v4[1], v4[2], v4[3])
}

// pluginRefusals sends bad requests straight to h's plugin socket: every
// one gets {"Err": ...} and neither the store nor OVS changes.
func pluginRefusals(t *testing.T, tb *testbed.Testbed, h *testbed.Host, live *dockerCtr) {
	sock := filepath.Join(h.PluginDir(), testbed.PluginName+".sock")
	var d net.Dialer
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "unix", sock) }}}
	defer hc.CloseIdleConnections()
	netID, err := h.Docker("network", "inspect", "-f", "{{.Id}}", "dnet")
	if err != nil {
		t.Fatal(err)
	}
	epID, err := h.Docker("inspect", "-f", "{{.NetworkSettings.Networks.dnet.EndpointID}}", live.ID)
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, h)
	eps := netctl(t, tb, "net", "inspect", "dnet")
	cases := []struct{ path, body, want string }{
		{"/NetworkDriver.CreateEndpoint", `{"NetworkID":"0123456789abcdef","EndpointID":"e1","Interface":{}}`, "docker network 0123456789abcdef"},
		{"/NetworkDriver.CreateEndpoint", `{"NetworkID":"` + netID + `","EndpointID":`, "decode JSON"},
		{"/NetworkDriver.CreateEndpoint", `{"NetworkID":"` + netID + `","Interface":{}}`, `"EndpointID" is missing`},
		{"/NetworkDriver.CreateEndpoint", `{"NetworkID":"` + netID + `","EndpointID":"` + epID + `","Interface":{"Address":"198.19.10.99/24"}}`, "already attached"},
		{"/NetworkDriver.CreateEndpoint", `{"NetworkID":"` + netID + `","EndpointID":"` + strings.Repeat("e", 1<<20) + `","Interface":{}}`, "larger than"},
		{"/NetworkDriver.Join", `{"NetworkID":"` + netID + `","EndpointID":"nosuch"}`, "not attached on this host"},
		{"/IpamDriver.RequestAddress", `{"PoolID":"dnet.default|198.19.10.0/24","Address":"` + live.ip + `"}`, "not available"},
		{"/IpamDriver.RequestPool", `{"Options":{"network":"nonet"}}`, "nonet.default"},
	}
	for _, tc := range cases {
		resp, err := hc.Post("http://plugin"+tc.path, "application/json", bytes.NewReader([]byte(tc.body)))
		if err != nil {
			t.Errorf("%s: %v", tc.path, err)
			continue
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var body struct{ Err string }
		if json.Unmarshal(raw, &body) != nil || resp.StatusCode == http.StatusOK || !strings.Contains(body.Err, tc.want) {
			t.Errorf("%s %.100s: %d %.300s; want an Err containing %q", tc.path, tc.body, resp.StatusCode, raw, tc.want)
		}
	}
	if err := waitSnapshot(h, before, time.Second); err != nil {
		t.Errorf("refused requests changed OVS on %s: %v", h.Name, err)
	}
	if after := netctl(t, tb, "net", "inspect", "dnet"); after != eps {
		t.Errorf("refused requests changed the network:\nbefore %s\nafter %s", eps, after)
	}
	if err := live.Ping(live.ip, 1, 5*time.Second); err != nil {
		t.Errorf("the live container lost its address: %v", err)
	}
}

// netAddrCount is netmaster's count of allocated addresses of a network.
func netAddrCount(t *testing.T, tb *testbed.Testbed, network string) int {
	t.Helper()
	out := netctl(t, tb, "net", "inspect", network)
	var v struct {
		Oper struct {
			AllocatedAddressesCount int `json:"allocatedAddressesCount"`
		} `json:"Oper"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("netctl net inspect %s: %v\n%s", network, err, out)
	}
	return v.Oper.AllocatedAddressesCount
}

// TestDockerRestarts: a netplugin restart with docker containers running
// leaks nothing and does not disturb the other hosts; an engine restart
// brings containers with a restart policy back on the contiv network.
func TestDockerRestarts(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 3, Docker: true})
	h0, h1, h2 := tb.Hosts[0], tb.Hosts[1], tb.Hosts[2]
	netctl(t, tb, "net", "create", "--subnet", "198.19.30.0/24", "--gateway", "198.19.30.254", "rnet")
	for _, h := range tb.Hosts {
		if err := waitDockerNetwork(h, "rnet", true, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	c0 := dockerRun(t, h0, "c0", "rnet")
	c1 := dockerRun(t, h1, "c1", "rnet")
	c2 := dockerRun(t, h2, "c2", "rnet")
	for _, c := range []*dockerCtr{c0, c1, c2} {
		c.ServeTraffic(t)
	}
	reach(t, c0, c1)
	reach(t, c1, c2)
	if t.Failed() {
		return
	}

	t.Run("netplugin restart", func(t *testing.T) {
		before := snapshot(t, h0)
		addrs := netAddrCount(t, tb, "rnet")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		p := c1.StartPinger(ctx, c2.ip)
		time.Sleep(time.Second)
		h0.RestartNetplugin(t)
		tb.WaitNetplugins(t, len(tb.Hosts), 30*time.Second)
		time.Sleep(2 * time.Second)
		st := p.Stop()
		if st.Err != nil || st.Received == 0 || st.MaxLost > 1 {
			t.Errorf("pings between the other hosts were interrupted: sent %d received %d longest gap %v (%v)",
				st.Sent, st.Received, st.LongestGap, st.Err)
		} else {
			t.Logf("during the netplugin restart: %d/%d replies between the other hosts, longest gap %v", st.Received, st.Sent, st.LongestGap)
		}
		reach(t, c0, c1)
		reach(t, c2, c0)
		if err := waitSnapshot(h0, before, 45*time.Second); err != nil {
			t.Error(err)
		}
		if got := netAddrCount(t, tb, "rnet"); got != addrs {
			t.Errorf("allocated addresses %d after the restart, %d before", got, addrs)
		}
		// The restarted plugin serves new and old containers.
		n := dockerRun(t, h0, "n0", "rnet")
		n.ServeTraffic(t)
		reach(t, c1, n)
		for _, c := range []*dockerCtr{n, c0} {
			if err := c.Remove(); err != nil {
				t.Fatal(err)
			}
		}
		if got := netAddrCount(t, tb, "rnet"); got != addrs-1 {
			t.Errorf("allocated addresses %d after removing c0 and n0, want %d", got, addrs-1)
		}
	})

	t.Run("engine restart brings back restart-policy containers", func(t *testing.T) {
		r, err := h1.DockerRun("keeper", "--network", "rnet", "--restart", "always")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []*testbed.DockerContainer{r, c1.DockerContainer} {
			if err := c.Forget(); err != nil {
				t.Fatal(err)
			}
		}
		h1.StopEngine(t)
		h1.StartEngine(t)
		deadline := time.Now().Add(60 * time.Second)
		for {
			state, _ := h1.Docker("inspect", "-f", "{{.State.Running}}", r.ID)
			if state == "true" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("container with --restart always not running after the engine restart: %s", state)
			}
			time.Sleep(250 * time.Millisecond)
		}
		if err := r.Attach(); err != nil {
			t.Fatal(err)
		}
		ip, err := r.IPOn("rnet")
		if err != nil || !strings.HasPrefix(ip, "198.19.30.") {
			t.Fatalf("restarted container's address on rnet: %q %v", ip, err)
		}
		rc := &dockerCtr{DockerContainer: r, ip: ip}
		rc.ServeTraffic(t)
		reach(t, c2, rc)
		// Only the restarted container has a port on h1.
		out, err := h1.Vsctl("list-ports", "contivVxlanBridge")
		if err != nil {
			t.Fatal(err)
		}
		ports := 0
		for _, p := range strings.Fields(out) {
			if strings.HasPrefix(p, "vvport") {
				ports++
			}
		}
		if ports != 1 {
			t.Errorf("%d endpoint ports on %s after the engine restart, want 1 (keeper):\n%s", ports, h1.Name, out)
		}
	})
}

// TestDockerSwarm: on a single-node swarm the managed (v2) netplugin
// serves an attachable global-scope network; netplugin makes a contiv
// network for it (AllocateNetwork), containers get contiv's addresses and
// reach each other, and removing the docker network removes the contiv
// one (FreeNetwork).
func TestDockerSwarm(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 1, Swarm: true})
	h := tb.Hosts[0]
	h.InitSwarm(t)
	if out, err := h.Docker("network", "create", "-d", testbed.ManagedPluginName, "--ipam-driver", testbed.ManagedPluginName,
		"--attachable", "--subnet", "198.19.110.0/24", "--gateway", "198.19.110.254", "swnet"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	id, err := h.Docker("network", "inspect", "-f", "{{.Id}} {{.Scope}}", "swnet")
	if err != nil || !strings.HasSuffix(id, " swarm") {
		t.Fatalf("docker network swnet: %q %v (want scope swarm)", id, err)
	}
	id = strings.Fields(id)[0]
	a := dockerRun(t, h, "swa", "swnet")
	b := dockerRun(t, h, "swb", "swnet")
	for _, c := range []*dockerCtr{a, b} {
		if !strings.HasPrefix(c.ip, "198.19.110.") {
			t.Errorf("%s got %s, not an address of 198.19.110.0/24", c.Name, c.ip)
		}
		c.ServeTraffic(t)
	}
	ins := netctl(t, tb, "net", "inspect", id)
	for _, ip := range []string{a.ip, b.ip} {
		if !strings.Contains(ins, ip) {
			t.Errorf("contiv network %s lacks %s:\n%s", id, ip, ins)
		}
	}
	reach(t, a, b)
	for _, c := range []*dockerCtr{a, b} {
		if err := c.Remove(); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := h.Docker("network", "rm", "swnet"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		out := netctl(t, tb, "net", "ls")
		if !strings.Contains(out, id) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("contiv network %s still there after docker network rm:\n%s", id, out)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
