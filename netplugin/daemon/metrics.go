package daemon

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are netplugin's own instruments (docs/operations.md,
// "Metrics"); a nil *metrics records nothing.
type metrics struct {
	attach    *prometheus.HistogramVec
	resyncs   *prometheus.CounterVec
	reconcile *prometheus.CounterVec
	netpol    prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, d *Daemon) *metrics {
	if reg == nil {
		return nil
	}
	m := &metrics{
		attach: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "contiv", Subsystem: "netplugin", Name: "endpoint_operation_duration_seconds",
			Help:    "Time to attach or detach an endpoint (operation), by result (success or error).",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"operation", "result"}),
		resyncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "contiv", Subsystem: "netplugin", Name: "state_resyncs_total",
			Help: "Full re-lists of a state collection after its store watch failed, by collection.",
		}, []string{"state"}),
		reconcile: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "contiv", Subsystem: "netplugin", Name: "reconcile_failures_total",
			Help: "Failed attempts to converge the datapath to the desired state, by kind of object; each is retried with backoff.",
		}, []string{"kind"}),
		netpol: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "contiv", Subsystem: "netplugin", Name: "networkpolicy_apply_duration_seconds",
			Help:    "Time from the first NetworkPolicy, pod or namespace change a new NetworkPolicy result covers to its flows written on every bridge.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
	}
	reg.MustRegister(m.attach, m.resyncs, m.reconcile, m.netpol, newDataplaneCollector(d))
	return m
}

func (m *metrics) observeAttach(op string, start time.Time, err error) {
	if m == nil {
		return
	}
	result := "success"
	if err != nil {
		result = "error"
	}
	m.attach.WithLabelValues(op, result).Observe(time.Since(start).Seconds())
}

// netpolApplyObserver records NetworkPolicy apply latencies (nil when off).
func (m *metrics) netpolApplyObserver() func(time.Duration) {
	if m == nil {
		return nil
	}
	return func(d time.Duration) { m.netpol.Observe(d.Seconds()) }
}

// reconcileFailed counts one failed reconcile of kind.
func (m *metrics) reconcileFailed(kind string) {
	if m == nil {
		return
	}
	m.reconcile.WithLabelValues(kind).Inc()
}

// resyncCounter is the counter of one collection's re-lists (nil when off).
func (m *metrics) resyncCounter(state string) interface{ Inc() } {
	if m == nil {
		return nil
	}
	return m.resyncs.WithLabelValues(state)
}

// dataplaneCollector reads the agents' and the daemon's state at scrape
// time: OpenFlow connection per bridge, installed flows per table, local
// and remote endpoints.
type dataplaneCollector struct {
	d         *Daemon
	connected *prometheus.Desc
	flows     *prometheus.Desc
	locals    *prometheus.Desc
	remotes   *prometheus.Desc
}

func newDataplaneCollector(d *Daemon) *dataplaneCollector {
	return &dataplaneCollector{
		d: d,
		connected: prometheus.NewDesc("contiv_netplugin_openflow_connected",
			"1 while the bridge's switch is connected to this agent's OpenFlow controller.", []string{"bridge"}, nil),
		flows: prometheus.NewDesc("contiv_netplugin_flows",
			"OpenFlow flows the agent installed, by bridge and table.", []string{"bridge", "table"}, nil),
		locals: prometheus.NewDesc("contiv_netplugin_local_endpoints",
			"Endpoints attached on this host.", nil, nil),
		remotes: prometheus.NewDesc("contiv_netplugin_remote_endpoints",
			"Endpoints of other hosts known to the bridge's datapath.", []string{"bridge"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *dataplaneCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.connected, c.flows, c.locals, c.remotes} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *dataplaneCollector) Collect(ch chan<- prometheus.Metric) {
	locals := c.d.eps.Len()
	ch <- prometheus.MustNewConstMetric(c.locals, prometheus.GaugeValue, float64(locals))
	for _, a := range c.d.agents() {
		s := a.Stats()
		bridge := s.Bridge
		conn := 0.0
		if s.Connected {
			conn = 1
		}
		ch <- prometheus.MustNewConstMetric(c.connected, prometheus.GaugeValue, conn, bridge)
		ch <- prometheus.MustNewConstMetric(c.remotes, prometheus.GaugeValue, float64(s.RemoteEndpoints), bridge)
		for table, n := range s.FlowsByTable {
			ch <- prometheus.MustNewConstMetric(c.flows, prometheus.GaugeValue, float64(n), bridge, table)
		}
	}
}

// agents are the running ofnet agents. They are set before the inspect
// server and the sweeps (their readers) start.
func (d *Daemon) agents() []datapath {
	var out []datapath
	for _, a := range []datapath{d.vx, d.vl} {
		if a != nil {
			out = append(out, a)
		}
	}
	return out
}
