package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/test/testbed"
)

// TestDockerLiveRestore runs two hosts whose engines have live-restore
// on (issue 23):
//   - an endpoint added by `docker network connect` to a running
//     container shows the container's id and name in `netctl net
//     inspect`, like one made by `docker run`;
//   - host 0's engine stops (its containers keep running and keep talking
//     over TCP and UDP meanwhile) and starts again: it takes the
//     containers back, netplugin keeps their endpoints, TCP and UDP flow
//     both ways, and removing the container afterwards releases its
//     endpoint.
func TestDockerLiveRestore(t *testing.T) {
	tb := testbed.New(t, testbed.Config{Hosts: 2, Docker: true, LiveRestore: true})
	h0, h1 := tb.Hosts[0], tb.Hosts[1]
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.70.0/24", "--gateway", "198.19.70.254", "lr")
	netctl(t, tb, "net", "create", "--encap", "vxlan", "--subnet", "198.19.71.0/24", "--gateway", "198.19.71.254", "lr2")
	for _, h := range tb.Hosts {
		for _, n := range []string{"lr", "lr2"} {
			if err := waitDockerNetwork(h, n, true, 60*time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}
	a := dockerRun(t, h0, "lra", "lr")
	b := dockerRun(t, h1, "lrb", "lr")
	srvA, srvB := a.ServeTraffic(t), b.ServeTraffic(t)
	defer srvA.Stop()
	defer srvB.Stop()
	both := func(when string) {
		t.Helper()
		if err := a.CheckTraffic(b.ip, testbed.TrafficPort, 30*time.Second); err != nil {
			t.Fatalf("%s: a -> b: %v", when, err)
		}
		if err := b.CheckTraffic(a.ip, testbed.TrafficPort, 30*time.Second); err != nil {
			t.Fatalf("%s: b -> a: %v", when, err)
		}
	}
	both("before")

	t.Run("network connect shows the container", func(t *testing.T) {
		if out, err := h1.Docker("network", "connect", "lr2", b.ID); err != nil {
			t.Fatalf("docker network connect: %v\n%s", err, out)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			out, err := tb.Netctl("net", "inspect", "lr2")
			if err == nil && strings.Contains(out, b.ID) && strings.Contains(out, `"lrb"`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("netctl net inspect lr2 does not show container lrb (%s): %v\n%s", b.ID, err, out)
			}
			time.Sleep(250 * time.Millisecond)
		}
	})

	t.Run("engine restart", func(t *testing.T) {
		epsBefore := endpointsOf(t, tb, "lr")
		h0.StopEngine(t)
		// The engine is down; its container runs on and keeps talking.
		both("engine stopped")
		h0.StartEngine(t)
		if out, err := h0.Docker("inspect", "-f", "{{.State.Running}}", a.ID); err != nil || out != "true" {
			t.Fatalf("after the engine restart container lra running=%q: %v", out, err)
		}
		if ip, err := a.IPOn("lr"); err != nil || ip != a.ip {
			t.Fatalf("after the engine restart lra has address %q (%v), want %s", ip, err, a.ip)
		}
		// netplugin sees the engine's events again and keeps the endpoints.
		time.Sleep(3 * time.Second)
		both("engine restarted")
		if got := endpointsOf(t, tb, "lr"); got != epsBefore {
			t.Fatalf("endpoints of lr after the engine restart: %d, before %d", got, epsBefore)
		}
		// The restored container is still removed properly.
		if err := a.Remove(); err != nil {
			t.Fatalf("remove lra: %v", err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for endpointsOf(t, tb, "lr") != epsBefore-1 {
			if time.Now().After(deadline) {
				t.Fatalf("the endpoint of the removed container stays: %d endpoints", endpointsOf(t, tb, "lr"))
			}
			time.Sleep(250 * time.Millisecond)
		}
	})
}

// endpointsOf counts a default-tenant network's endpoints in netmaster.
func endpointsOf(t *testing.T, tb *testbed.Testbed, network string) int {
	t.Helper()
	var v struct {
		Oper struct {
			NumEndpoints int `json:"numEndpoints"`
		}
	}
	getJSON(t, tb.HTTPClient(), tb.MasterURL()+"/api/v1/inspect/networks/default:"+network+"/", &v)
	return v.Oper.NumEndpoints
}
