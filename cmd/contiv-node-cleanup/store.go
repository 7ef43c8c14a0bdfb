package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/contiv/netplugin/objdb/dial"
	"github.com/contiv/netplugin/state"
)

// storeFromSite is the cluster store the contiv-site ConfigMap names (its
// keys with the prefix SITE_, docs/k8s.md "Store"); ok is false when the
// site names no store (nothing to clean there).
func storeFromSite(getenv func(string) string) (cfg dial.Config, ok bool) {
	list := func(k string) []string {
		v := strings.TrimSpace(getenv("SITE_" + k))
		if v == "" {
			return nil
		}
		return strings.Split(v, ",")
	}
	cfg.EtcdEndpoints, cfg.ConsulEndpoints = list("ETCD_ENDPOINTS"), list("CONSUL_ENDPOINTS")
	cfg.Auth = dial.Auth{
		EtcdCACert: getenv("SITE_ETCD_CACERT"), EtcdCert: getenv("SITE_ETCD_CERT"), EtcdKey: getenv("SITE_ETCD_KEY"),
		EtcdUsername: getenv("SITE_ETCD_USERNAME"), EtcdPasswordFile: getenv("SITE_ETCD_PASSWORD_FILE"),
		ConsulCACert: getenv("SITE_CONSUL_CACERT"), ConsulCert: getenv("SITE_CONSUL_CERT"), ConsulKey: getenv("SITE_CONSUL_KEY"),
		ConsulTokenFile: getenv("SITE_CONSUL_TOKEN_FILE"),
	}
	return cfg, len(cfg.EtcdEndpoints)+len(cfg.ConsulEndpoints) > 0
}

// cleanStore removes the node's own records from the cluster store: its
// membership oper/nodes/<node> and the OVS driver's state
// oper/ovs-driver/<node>, which netplugin writes and keeps across its
// restarts (state.Node; docs/k8s.md, "Uninstall"). Its endpoints are gone
// with the pods (CNI DEL) or, when the networks were removed, with them.
// The cluster-wide records (global settings, tenants, networks) are the
// operator's.
func cleanStore(ctx context.Context, node string) error {
	if node == "" {
		log.Printf("NODE_NAME not set: the node's store records stay")
		return nil
	}
	cfg, ok := storeFromSite(os.Getenv)
	if !ok {
		log.Printf("contiv-site names no store: the node's store records stay")
		return nil
	}
	kv, err := dial.Open(ctx, cfg)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer kv.Close()
	st := state.New(kv)
	if err := st.Nodes.Clear(ctx, node); err != nil {
		return fmt.Errorf("node record: %w", err)
	}
	if err := st.OvsDriverOper.Clear(ctx, node); err != nil {
		return fmt.Errorf("OVS driver record: %w", err)
	}
	log.Printf("store records %s%s and %s%s removed (if they were there)", state.PrefixNodes, node, state.PrefixOvsDriverOper, node)
	return nil
}
