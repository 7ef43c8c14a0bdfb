package netmaster

import (
	"fmt"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/test/bench/benchstat"
)

// BenchmarkOriginalShaped is the endpoint benchmark in the shape of the
// side-by-side measurement against the original netmaster (issue 27): an
// etcd server process, a /16 network, createEndpoint then deleteEndpoint
// through the REST /plugin API at 1 and 16 clients. Two leaders on the
// one etcd (separate roots) take turns, in rounds, so that a busy machine
// slows both alike: "stepwise" hides the store's transactions (the
// endpoint path before issue 27: address, record and counters in
// separate writes), "joined" offers them (one transaction per create or
// delete, batched across concurrent ones). Reported per mode: rates,
// p50/p99 latencies, and the store round trips per create and delete
// counted by the etcd client (reads, writes and transactions, every
// attempt).
//
//	go test ./test/bench/netmaster -run '^$' -bench OriginalShaped -benchtime 2000x
func BenchmarkOriginalShaped(b *testing.B) {
	for _, c := range []int{1, 16} {
		b.Run(fmt.Sprintf("c%d", c), func(b *testing.B) {
			srv := objdbtest.StartEtcdProcess(b)
			modes := []*shapedMode{{name: "stepwise"}, {name: "joined"}}
			for _, m := range modes {
				m.s, m.st = startOn(b, srv.Endpoint, m.name == "stepwise")
				if err := m.s.post("/api/v1/networks/default:net/", `{"tenantName":"default","networkName":"net","encap":"vxlan","subnet":"10.2.0.0/16"}`); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for done := 0; done < b.N; {
				n := min(250, b.N-done)
				for _, m := range modes {
					if err := m.round(done, n, c); err != nil {
						b.Fatal(err)
					}
				}
				done += n
			}
			b.StopTimer()
			for _, m := range modes {
				m.report(b)
			}
		})
	}
}

// shapedMode is one leader of BenchmarkOriginalShaped and its figures.
type shapedMode struct {
	name                   string
	s                      *server
	st                     *etcd.Client
	createLat, deleteLat   []time.Duration
	createTime, deleteTime time.Duration
	createRT, deleteRT     int64
}

// round creates endpoints base..base+n-1 on c clients, then deletes them.
func (m *shapedMode) round(base, n, c int) error {
	rt := m.st.RoundTrips()
	lat, d, err := run(n, c, func(i int) error {
		return m.s.post("/plugin/createEndpoint", fmt.Sprintf(`{"TenantName":"default","NetworkName":"net","ConfigEP":{"Container":"c%d","Host":"h1"}}`, base+i))
	})
	if err != nil {
		return err
	}
	m.createLat, m.createTime, m.createRT = append(m.createLat, lat...), m.createTime+d, m.createRT+m.st.RoundTrips()-rt
	rt = m.st.RoundTrips()
	lat, d, err = run(n, c, func(i int) error {
		return m.s.post("/plugin/deleteEndpoint", fmt.Sprintf(`{"TenantName":"default","NetworkName":"net","EndpointID":"c%d"}`, base+i))
	})
	if err != nil {
		return err
	}
	m.deleteLat, m.deleteTime, m.deleteRT = append(m.deleteLat, lat...), m.deleteTime+d, m.deleteRT+m.st.RoundTrips()-rt
	return nil
}

func (m *shapedMode) report(b *testing.B) {
	p := m.name + "-"
	b.ReportMetric(float64(len(m.createLat))/m.createTime.Seconds(), p+"creates/s")
	b.ReportMetric(float64(len(m.deleteLat))/m.deleteTime.Seconds(), p+"deletes/s")
	b.ReportMetric(float64(benchstat.Percentile(m.createLat, 50).Microseconds()), p+"create-p50-µs")
	b.ReportMetric(float64(benchstat.Percentile(m.createLat, 99).Microseconds()), p+"create-p99-µs")
	b.ReportMetric(float64(benchstat.Percentile(m.deleteLat, 50).Microseconds()), p+"delete-p50-µs")
	b.ReportMetric(float64(benchstat.Percentile(m.deleteLat, 99).Microseconds()), p+"delete-p99-µs")
	b.ReportMetric(float64(m.createRT)/float64(len(m.createLat)), p+"create-roundtrips/op")
	b.ReportMetric(float64(m.deleteRT)/float64(len(m.deleteLat)), p+"delete-roundtrips/op")
}
