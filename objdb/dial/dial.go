// Package dial opens the objdb backend the daemons' store flags select
// (docs/daemons.md §1.1): --etcd-endpoints or --consul-endpoints, never
// both; neither means etcd at http://127.0.0.1:2379.
package dial

import (
	"context"
	"fmt"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/consul"
	"github.com/contiv/netplugin/objdb/etcd"
)

// DefaultEtcdEndpoint is used when no store flag is given.
const DefaultEtcdEndpoint = "http://127.0.0.1:2379"

// Config is the store selection of a daemon.
type Config struct {
	EtcdEndpoints   []string // URLs; elements may be comma lists
	ConsulEndpoints []string // host:port (a leading http:// is accepted)
	Root            string   // objdb.DefaultRoot when empty
	Logger          *logrus.Entry
}

// Open connects to the selected store. Bad flags are an error wrapping
// objdb.ErrInvalid; an unreachable store one wrapping objdb.ErrUnavailable.
func Open(ctx context.Context, cfg Config) (objdb.Store, error) {
	etcdEPs, consulEPs := nonEmpty(cfg.EtcdEndpoints), nonEmpty(cfg.ConsulEndpoints)
	switch {
	case len(etcdEPs) > 0 && len(consulEPs) > 0:
		return nil, fmt.Errorf("%w: both etcd (%s) and consul (%s) endpoints given: ambiguous store selection",
			objdb.ErrInvalid, strings.Join(etcdEPs, ","), strings.Join(consulEPs, ","))
	case len(consulEPs) > 0:
		return consul.New(ctx, consul.Config{Endpoints: consulEPs, Root: cfg.Root, Logger: cfg.Logger})
	case len(etcdEPs) == 0:
		etcdEPs = []string{DefaultEtcdEndpoint}
	}
	return etcd.New(ctx, etcd.Config{Endpoints: etcdEPs, Root: cfg.Root, Logger: cfg.Logger})
}

// nonEmpty drops empty elements (flags given as "" or ",").
func nonEmpty(in []string) []string {
	var out []string
	for _, s := range in {
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}
