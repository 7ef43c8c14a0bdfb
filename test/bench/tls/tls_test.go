// Package tls measures what the secure defaults of issue 22 cost
// (docs/security.md): in one run, the attach path (attach API call to the
// first ping of a container on another host, and attaches per second,
// each including netmaster's createEndpoint and the endpoint's relay over
// the ofnet RPC) on a test bed with mutual TLS everywhere and on one with
// --insecure-rpc, with their ratio; and one ofnet RPC call over a kept
// connection, TLS against plain.
//
//	flock /tmp/contiv-nettest.lock go test ./test/bench/tls -run '^$' -bench Attach -benchtime 1x
//	go test ./test/bench/tls -run '^$' -bench RPCCall
package tls

import (
	"context"
	cryptotls "crypto/tls"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/test/bench/benchstat"
	"github.com/contiv/netplugin/test/testbed"
	"github.com/contiv/netplugin/utils/certgen"
	"github.com/contiv/netplugin/utils/tlsutil"
)

const (
	latencyRuns = 20
	rateRuns    = 32
	rateWorkers = 8
)

type attachFigures struct {
	attachP50, pingP50, rate float64
}

func BenchmarkAttachMTLSvsInsecure(b *testing.B) {
	for i := 0; i < b.N; i++ {
		var secure, insecure attachFigures
		b.Run("mtls", func(b *testing.B) { secure = measureAttach(b, false) })
		b.Run("insecure", func(b *testing.B) { insecure = measureAttach(b, true) })
		if insecure.attachP50 > 0 && insecure.rate > 0 && insecure.pingP50 > 0 {
			b.ReportMetric(secure.attachP50/insecure.attachP50, "attach-p50-ratio-mtls/insecure")
			b.ReportMetric(secure.pingP50/insecure.pingP50, "ping-p50-ratio-mtls/insecure")
			b.ReportMetric(secure.rate/insecure.rate, "rate-ratio-mtls/insecure")
			b.Logf("mTLS %+v, insecure %+v", secure, insecure)
		}
	}
}

func measureAttach(b *testing.B, insecure bool) attachFigures {
	tb := testbed.New(b, testbed.Config{Hosts: 2, InsecureRPC: insecure})
	if out, err := tb.Netctl("net", "create", "--subnet", "198.19.32.0/20", "--gateway", "198.19.47.254", "bench"); err != nil {
		b.Fatalf("net create: %v\n%s", err, out)
	}
	h0, h1 := tb.Hosts[0], tb.Hosts[1]
	target := h1.NewContainerNS(b, "target")
	res := attachOne(b, h1, target, "target")
	targetIP := strings.Split(res.IPAddress, "/")[0]
	var toPing, toAttach []time.Duration
	for j := 0; j < latencyRuns; j++ {
		c := h0.NewContainerNS(b, fmt.Sprintf("l%d", j))
		start := time.Now()
		attachOne(b, h0, c, c.Name)
		toAttach = append(toAttach, time.Since(start))
		out, err := exec.Command("ip", "netns", "exec", c.NS, "ping", "-n", "-c", "1", "-i", "0.01", "-w", "20", targetIP).CombinedOutput()
		if err != nil {
			b.Fatalf("%s never reached %s: %v\n%s", c.Name, targetIP, err, out)
		}
		toPing = append(toPing, time.Since(start))
	}
	next := make(chan *testbed.Container, rateRuns)
	for j := 0; j < rateRuns; j++ {
		next <- h0.NewContainerNS(b, fmt.Sprintf("r%d", j))
	}
	close(next)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < rateWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				attachOne(b, h0, c, c.Name)
			}
		}()
	}
	wg.Wait()
	f := attachFigures{attachP50: benchstat.PercentileMs(toAttach, 50), pingP50: benchstat.PercentileMs(toPing, 50),
		rate: float64(rateRuns) / time.Since(start).Seconds()}
	b.ReportMetric(f.attachP50, "ms-attach-p50")
	b.ReportMetric(f.pingP50, "ms-to-ping-p50")
	b.ReportMetric(f.rate, "attaches/s")
	return f
}

func attachOne(b testing.TB, h *testbed.Host, c *testbed.Container, name string) attach.Result {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := attach.NewClient(h.AttachSocket()).Attach(ctx, attach.Request{Tenant: "default", Network: "bench",
		ContainerID: "bench-" + name, Name: name, NetNS: c.NSPath()})
	if err != nil {
		b.Errorf("attach %s: %v", name, err)
	}
	return res
}

// echo is a minimal RPC service.
type echo struct{}

func (echo) Ping(arg ofrpc.OfnetEndpoint, reply *bool) error { *reply = true; return nil }

// BenchmarkRPCCall: one ofnet RPC call (an endpoint as argument) over the
// pool's kept connection, on loopback, with role-checked mutual TLS and
// plain.
func BenchmarkRPCCall(b *testing.B) {
	dir := b.TempDir()
	c, err := certgen.WriteCluster(dir, []net.IP{net.ParseIP("127.0.0.1")}, map[string][]net.IP{"h1": {net.ParseIP("127.0.0.1")}})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := tlsutil.ServerConfig(c.Agents["h1"].Cert, c.Agents["h1"].Key, c.CAFile)
	if err != nil {
		b.Fatal(err)
	}
	tlsutil.RequirePeerRole(srv, tlsutil.RoleMaster, "")
	cl, err := tlsutil.ClientConfig(c.CAFile, c.Master.Cert, c.Master.Key)
	if err != nil {
		b.Fatal(err)
	}
	tlsutil.RequirePeerRole(cl, tlsutil.RoleAgent, "")
	for _, mode := range []struct {
		name     string
		srv, cli *cryptotls.Config
	}{{"mtls", srv, cl}, {"plain", nil, nil}} {
		b.Run(mode.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			if mode.srv != nil {
				ln = cryptotls.NewListener(ln, mode.srv)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				_ = ofrpc.Serve(ctx, ln, map[string]any{"Echo": echo{}})
			}()
			var opts []ofrpc.Option
			if mode.cli != nil {
				opts = append(opts, ofrpc.WithTLS(mode.cli))
			}
			pool := ofrpc.NewPool(opts...)
			ep := ofrpc.OfnetEndpoint{EndpointID: "198.19.1.2:0", IpAddr: net.ParseIP("198.19.1.2"), OriginatorIp: net.ParseIP("127.0.0.1")}
			var ok bool
			if err := pool.Call(ctx, ln.Addr().String(), "Echo.Ping", ep, &ok); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := pool.Call(ctx, ln.Addr().String(), "Echo.Ping", ep, &ok); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			pool.Close()
			cancel()
			<-done
		})
	}
}
