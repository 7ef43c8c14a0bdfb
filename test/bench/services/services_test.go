// Package services benchmarks the datapath services of docs/services.md and
// docs/dns.md on the simulated cluster (VXLAN bridging, client on host 0,
// two providers on host 1):
//
//   - service load balancing: new TCP connections per second through a VIP
//     (connect, read a line, close), and the latency of one such connection
//     against the same connection made directly to a provider (ratio);
//
//   - DNS: answers per second and p50/p99 latency of queries the datapath
//     intercepts and netplugin answers.
//
//     go test ./test/bench/services -run '^$' -bench . -benchtime 1x
package services

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/test/bench/benchstat"
	"github.com/contiv/netplugin/test/ovstest"
	"github.com/contiv/netplugin/test/testbed"
)

const (
	vip         = "198.19.40.100"
	connRuns    = 400  // sequential connections per target
	connWorkers = 4    // concurrent clients for the rate
	dnsRuns     = 2000 // sequential queries
	dnsWorkers  = 8
)

func attachOne(b *testing.B, h *testbed.Host, name, group string, labels map[string]string) (*testbed.Container, string) {
	b.Helper()
	c := h.NewContainerNS(b, name)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := attach.NewClient(h.AttachSocket()).Attach(ctx, attach.Request{Tenant: "default", Network: "bench",
		Group: group, ContainerID: "ctr-" + name, Name: name, NetNS: c.NSPath(), Labels: labels})
	if err != nil {
		b.Fatalf("attach %s: %v", name, err)
	}
	return c, strings.Split(res.IPAddress, "/")[0]
}

func serve(b *testing.B, c *testbed.Container) {
	var ln net.Listener
	if err := ovstest.DoInNetNS(c.NS, func() (err error) {
		ln, err = net.Listen("tcp", ":8080")
		return err
	}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintf(conn, "%s\n", c.Name)
			conn.Close()
		}
	}()
}

// oneConn connects from the container's namespace (a dialer bound there),
// reads the server's line and closes.
func oneConn(d *net.Dialer, addr string) error {
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	_, err = bufio.NewReader(conn).ReadString('\n')
	return err
}

// newDialer returns a dialer; called inside ovstest.DoInNetNS its sockets
// are created in that namespace.
func newDialer() *net.Dialer { return &net.Dialer{Timeout: 3 * time.Second} }

// dialIn runs one connection attempt from inside the namespace.
func dialIn(ns, addr string) error {
	return ovstest.DoInNetNS(ns, func() error { return oneConn(newDialer(), addr) })
}

func mean(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t / time.Duration(len(ds))
}

func BenchmarkServices(b *testing.B) {
	tb := testbed.New(b, testbed.Config{Hosts: 2, NetMode: "vlan", FwdMode: "bridge"})
	for _, args := range [][]string{
		{"net", "create", "--encap", "vxlan", "--subnet", "198.19.40.0/24", "--gateway", "198.19.40.254", "bench"},
		{"group", "create", "bench", "web"},
		{"service", "create", "-s", "bench", "-l", "app=web", "-p", "80:8080:TCP", "--ip", vip, "websvc"},
	} {
		if out, err := tb.Netctl(args...); err != nil {
			b.Fatalf("netctl %v: %v\n%s", args, err, out)
		}
	}
	h0, h1 := tb.Hosts[0], tb.Hosts[1]
	client, _ := attachOne(b, h0, "client", "", nil)
	var provIPs []string
	for _, n := range []string{"prov1", "prov2"} {
		c, ip := attachOne(b, h1, n, "web", map[string]string{"app": "web"})
		serve(b, c)
		provIPs = append(provIPs, ip)
	}
	deadline := time.Now().Add(45 * time.Second)
	for dialIn(client.NS, vip+":80") != nil {
		if time.Now().After(deadline) {
			b.Fatal("the VIP never answered")
		}
		time.Sleep(200 * time.Millisecond)
	}

	for i := 0; i < b.N; i++ {
		b.Run("servicelb", func(b *testing.B) {
			var failures, directFailures atomic.Int64
			measure := func(addr string) []time.Duration {
				var ds []time.Duration
				err := ovstest.DoInNetNS(client.NS, func() error {
					d := newDialer()
					for j := 0; j < connRuns; j++ {
						start := time.Now()
						if err := oneConn(d, addr); err != nil {
							// Counted and skipped: a lost setup (docs/services.md, direct
							// connections to providers share the zone, limits).
							if strings.HasPrefix(addr, vip) {
								failures.Add(1)
							} else {
								directFailures.Add(1)
							}
							continue
						}
						ds = append(ds, time.Since(start))
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				return ds
			}
			measure(provIPs[0] + ":8080") // warm both paths up
			measure(vip + ":80")
			direct := measure(provIPs[0] + ":8080")
			viaVIP := measure(vip + ":80")
			// Concurrent clients: new connections per second through the VIP.
			var wg sync.WaitGroup
			errs := make(chan error, connWorkers)
			start := time.Now()
			for w := 0; w < connWorkers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- ovstest.DoInNetNS(client.NS, func() error {
						d := newDialer()
						for j := 0; j < connRuns/connWorkers; j++ {
							if err := oneConn(d, vip+":80"); err != nil {
								failures.Add(1)
							}
						}
						return nil
					})
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			close(errs)
			for err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(failures.Load()), "failed-vip-conns")
			b.ReportMetric(float64(directFailures.Load()), "failed-direct-conns")
			b.ReportMetric(float64(connRuns)/elapsed.Seconds(), "vip-conns/s")
			b.ReportMetric(float64(len(viaVIP))/sumSeconds(viaVIP), "vip-conns/s-sequential")
			b.ReportMetric(float64(len(direct))/sumSeconds(direct), "direct-conns/s-sequential")
			b.ReportMetric(benchstat.PercentileMs(viaVIP, 50), "ms-vip-p50")
			b.ReportMetric(benchstat.PercentileMs(direct, 50), "ms-direct-p50")
			b.ReportMetric(float64(mean(viaVIP)-mean(direct))/1e3, "us-extra-per-conn")
			b.ReportMetric(float64(mean(viaVIP))/float64(mean(direct)), "vip/direct-latency")
		})
		b.Run("dns", func(b *testing.B) {
			q := new(dns.Msg)
			q.SetQuestion("prov1.", dns.TypeA)
			// Any endpoint works as the destination (it needs an ARP answer):
			// the datapath answers before forwarding; prov2 runs no server.
			server := provIPs[1] + ":53"
			query := func(conn *dns.Conn) (time.Duration, error) {
				start := time.Now()
				if err := conn.WriteMsg(q); err != nil {
					return 0, err
				}
				_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
				r, err := conn.ReadMsg()
				if err != nil {
					return 0, err
				}
				if len(r.Answer) != 1 {
					return 0, fmt.Errorf("answer %v", r)
				}
				return time.Since(start), nil
			}
			open := func() (*dns.Conn, error) {
				var c net.Conn
				err := ovstest.DoInNetNS(client.NS, func() (err error) {
					c, err = net.Dial("udp", server)
					return err
				})
				return &dns.Conn{Conn: c}, err
			}
			conn, err := open()
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			var ds []time.Duration
			for j := 0; j < dnsRuns; j++ {
				d, err := query(conn)
				if err != nil {
					b.Fatalf("query %d: %v", j, err)
				}
				ds = append(ds, d)
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			var failed error
			start := time.Now()
			for w := 0; w < dnsWorkers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, err := open()
					if err == nil {
						defer c.Close()
						for j := 0; j < dnsRuns/dnsWorkers && err == nil; j++ {
							_, err = query(c)
						}
					}
					if err != nil {
						mu.Lock()
						failed = err
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			if failed != nil {
				b.Fatal(failed)
			}
			b.ReportMetric(float64(dnsRuns)/elapsed.Seconds(), "answers/s")
			b.ReportMetric(float64(len(ds))/sumSeconds(ds), "answers/s-sequential")
			b.ReportMetric(benchstat.PercentileMs(ds, 50), "ms-p50")
			b.ReportMetric(benchstat.PercentileMs(ds, 99), "ms-p99")
		})
	}
}

func sumSeconds(ds []time.Duration) float64 {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t.Seconds()
}
