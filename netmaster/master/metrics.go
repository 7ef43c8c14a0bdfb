package master

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// scrapeTimeout bounds the store reads of one scrape.
const scrapeTimeout = 5 * time.Second

// termCollector reports a leadership term's view of the store at scrape
// time: each network's IPv4 pool size and addresses in use, and the
// endpoints per host (docs/operations.md, "Metrics"). It is registered
// when the term starts and unregistered when it ends, so only the leader
// exports these series.
type termCollector struct {
	m         *master
	poolSize  *prometheus.Desc
	poolUsed  *prometheus.Desc
	endpoints *prometheus.Desc
	errs      *prometheus.Desc
}

func newTermCollector(m *master) *termCollector {
	return &termCollector{
		m: m,
		poolSize: prometheus.NewDesc("contiv_netmaster_ipam_pool_addresses",
			"Addresses a network's IPv4 pool can hand out.", []string{"tenant", "network"}, nil),
		poolUsed: prometheus.NewDesc("contiv_netmaster_ipam_pool_used_addresses",
			"Addresses of a network's IPv4 pool in use (endpoints, gateway, sub-pools).", []string{"tenant", "network"}, nil),
		endpoints: prometheus.NewDesc("contiv_netmaster_endpoints",
			"Endpoints in the store, by the host they live on.", []string{"host"}, nil),
		errs: prometheus.NewDesc("contiv_netmaster_scrape_errors",
			"Store reads that failed during this scrape (the series above may be incomplete).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *termCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.poolSize, c.poolUsed, c.endpoints, c.errs} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *termCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	errs := 0
	nets, _, err := c.m.st.Networks.ReadAll(ctx)
	if err != nil {
		errs++
	}
	for _, n := range nets {
		if n.SubnetIP == "" {
			continue
		}
		u, err := c.m.v4.Usage(ctx, n.ID)
		if err != nil {
			errs++
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.poolSize, prometheus.GaugeValue, float64(u.Size), n.Tenant, n.NetworkName)
		ch <- prometheus.MustNewConstMetric(c.poolUsed, prometheus.GaugeValue, float64(u.Used), n.Tenant, n.NetworkName)
	}
	eps, _, err := c.m.st.Endpoints.ReadAll(ctx)
	if err != nil {
		errs++
	}
	perHost := map[string]int{}
	for _, ep := range eps {
		perHost[ep.HomingHost]++
	}
	for h, n := range perHost {
		ch <- prometheus.MustNewConstMetric(c.endpoints, prometheus.GaugeValue, float64(n), h)
	}
	ch <- prometheus.MustNewConstMetric(c.errs, prometheus.GaugeValue, float64(errs))
}

// registerTermMetrics exports the term's collector until ctx ends.
func (m *master) registerTermMetrics(ctx context.Context, reg prometheus.Registerer) {
	if reg == nil {
		return
	}
	c := newTermCollector(m)
	if err := reg.Register(c); err != nil {
		m.log.WithError(err).Warn("register the leader's metrics")
		return
	}
	context.AfterFunc(ctx, func() { reg.Unregister(c) })
}
