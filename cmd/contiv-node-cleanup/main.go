// Command contiv-node-cleanup removes what contiv put on a Kubernetes node
// when contiv is uninstalled (docs/k8s.md, "Uninstall"): the contiv OVS
// bridges with their ports and flows (the infra port contivh1, its address
// and routes, and contivh0 go with them), the CNI configuration list and
// the contivk8s and contiv-portmap plugins, the CNI server's attachment
// records, and the node's own records in the cluster store
// (oper/nodes/<node>, oper/ovs-driver/<node>: the store of contiv-site,
// node NODE_NAME). It runs
// as the "cleanup" container of the netplugin DaemonSet
// (packaging/k8s/contiv.yaml):
//
//	contiv-node-cleanup watch   # wait for SIGTERM; clean up only on an uninstall
//	contiv-node-cleanup now     # clean up at once (an operator's manual step)
//
// A stopping netplugin keeps its node's datapath, so that a restart or an
// upgrade cuts no pod off; the watcher tells an uninstall apart by asking
// the API server about its DaemonSet when it is told to stop: the
// DaemonSet is gone or being deleted (404, deletionTimestamp), or the API
// server no longer accepts the pod's service account token (401: the
// ServiceAccount was deleted with the manifests) although it did at
// start. Any other answer — the DaemonSet still there, an API server that
// does not answer — keeps the datapath. Paths (environment):
// SITE_OVSDB_SOCKET (contiv-site's OVSDB_SOCKET; default
// /var/run/openvswitch/db.sock), HOST_ROOT (default
// /host: the node's /etc/cni/net.d, /opt/cni/bin and /var/run/contiv
// below it), DAEMONSET (default contiv-netplugin).
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/contiv/netplugin/ofnet/ovsdb"
)

// contivBridges are the bridges netplugin creates.
var contivBridges = []string{"contivVxlanBridge", "contivVlanBridge"}

// saDir holds the pod's service account token, CA and namespace.
const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

func main() {
	log.SetFlags(log.LstdFlags | log.Lmsgprefix)
	log.SetPrefix("contiv-node-cleanup: ")
	if len(os.Args) != 2 || (os.Args[1] != "watch" && os.Args[1] != "now") {
		fmt.Fprintln(os.Stderr, "usage: contiv-node-cleanup watch|now")
		os.Exit(2)
	}
	cfg := config{
		ovsdb:     envOr("SITE_OVSDB_SOCKET", "/var/run/openvswitch/db.sock"),
		hostRoot:  envOr("HOST_ROOT", "/host"),
		daemonSet: envOr("DAEMONSET", "contiv-netplugin"),
		inspect:   envOr("NETPLUGIN_HEALTHZ", "http://127.0.0.1:9090/healthz"),
		node:      os.Getenv("NODE_NAME"),
	}
	if os.Args[1] == "now" {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := cleanup(ctx, cfg); err != nil {
			log.Fatal(err)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := watch(ctx, cfg); err != nil {
		log.Fatal(err)
	}
}

type config struct {
	ovsdb, hostRoot, daemonSet, inspect string
	node                                string // the node's name: netplugin's host label
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// watch checks that the API server answers about the DaemonSet, waits
// for the stop signal (ctx), and cleans up when the answer then says
// uninstall.
func watch(ctx context.Context, cfg config) error {
	api, err := newAPI(cfg.daemonSet)
	if err != nil {
		// Without the API nothing tells an uninstall: keep the datapath,
		// and keep running (a crashing container would mark the
		// netplugin pod unready).
		log.Printf("%v: the node will not be cleaned up when contiv is deleted", err)
		<-ctx.Done()
		return nil
	}
	// At start the DaemonSet must be readable: a refusal later then means
	// the credentials went away with the manifests.
	var seen bool
	for !seen {
		st, err := api.daemonSetState(ctx)
		switch {
		case err == nil && st == present:
			seen = true
			log.Printf("watching DaemonSet %s/%s: the node is cleaned up when it is deleted", api.ns, cfg.daemonSet)
		case ctx.Err() != nil:
			log.Printf("stopped before the DaemonSet could be read: the datapath stays")
			return nil
		default:
			log.Printf("DaemonSet %s/%s not readable yet (%v, %v); retrying", api.ns, cfg.daemonSet, st, err)
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
			}
		}
	}
	<-ctx.Done()
	actx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	st, err := api.daemonSetState(actx)
	cancel()
	if err != nil || st == present {
		log.Printf("stopping; DaemonSet %s/%s: %v %v: the datapath stays (restart or upgrade)", api.ns, cfg.daemonSet, st, err)
		return nil
	}
	log.Printf("stopping; DaemonSet %s/%s: %v: contiv is uninstalled, cleaning the node", api.ns, cfg.daemonSet, st)
	cctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	waitNetpluginGone(cctx, cfg.inspect)
	return cleanup(cctx, cfg)
}

// waitNetpluginGone waits (bounded by ctx) until netplugin's health
// endpoint stops answering: a netplugin still running could put back
// what is removed.
func waitNetpluginGone(ctx context.Context, url string) {
	hc := &http.Client{Timeout: time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return
		}
		resp, err := hc.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				log.Printf("netplugin stopped (%v)", err)
			}
			return
		}
		resp.Body.Close()
		select {
		case <-ctx.Done():
			log.Printf("netplugin still answers; cleaning up anyway")
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// cleanup removes the bridges, the CNI files, the attachment records and
// the node's store records.
func cleanup(ctx context.Context, cfg config) error {
	var errs []error
	c, err := ovsdb.Dial(ctx, "unix:"+cfg.ovsdb)
	if err != nil {
		errs = append(errs, fmt.Errorf("ovsdb %s: %w", cfg.ovsdb, err))
	} else {
		for _, br := range contivBridges {
			if err := c.DeleteBridge(ctx, br); err != nil {
				errs = append(errs, err)
			} else {
				log.Printf("OVS bridge %s removed (if it was there)", br)
			}
		}
		c.Close()
	}
	root := cfg.hostRoot
	// The list first: the runtime must not call a plugin that is gone.
	for _, f := range []string{"etc/cni/net.d/10-contiv.conflist", "opt/cni/bin/contivk8s", "opt/cni/bin/contiv-portmap"} {
		p := filepath.Join(root, f)
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		} else if err == nil {
			log.Printf("/%s removed", f)
		}
	}
	// The CNI server's records and socket (docs/k8s.md, "Attachment
	// records"); the folder itself is the DaemonSet's volume.
	run := filepath.Join(root, "var/run/contiv")
	entries, _ := os.ReadDir(run)
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(run, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	if len(entries) > 0 {
		log.Printf("/var/run/contiv emptied (%d entries)", len(entries))
	}
	if err := cleanStore(ctx, cfg.node); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// dsState is what the API server says about the DaemonSet.
type dsState int

const (
	present  dsState = iota
	deleting         // deletionTimestamp set
	gone             // 404
	refused          // 401: the token is no longer accepted
)

func (s dsState) String() string {
	return [...]string{"present", "being deleted", "not found", "token refused"}[s]
}

// api reads one DaemonSet with the pod's service account.
type api struct {
	hc       *http.Client
	base, ns string
	ds       string
}

func newAPI(ds string) (*api, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, errors.New("KUBERNETES_SERVICE_HOST/PORT not set: not in a pod?")
	}
	ca, err := os.ReadFile(filepath.Join(saDir, "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("service account CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("service account CA: no certificate")
	}
	ns, err := os.ReadFile(filepath.Join(saDir, "namespace"))
	if err != nil {
		return nil, fmt.Errorf("service account namespace: %w", err)
	}
	return &api{
		hc:   &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}},
		base: "https://" + net.JoinHostPort(host, port), ns: strings.TrimSpace(string(ns)), ds: ds,
	}, nil
}

// daemonSetState reads the DaemonSet; an error means no usable answer.
func (a *api) daemonSetState(ctx context.Context) (dsState, error) {
	// The kubelet refreshes the projected token: read it every time.
	tok, err := os.ReadFile(filepath.Join(saDir, "token"))
	if err != nil {
		return present, fmt.Errorf("service account token: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/apis/apps/v1/namespaces/"+a.ns+"/daemonsets/"+a.ds, nil)
	if err != nil {
		return present, err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := a.hc.Do(req)
	if err != nil {
		return present, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch resp.StatusCode {
	case http.StatusOK:
		var ds struct {
			Metadata struct {
				DeletionTimestamp *string `json:"deletionTimestamp"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(body, &ds); err != nil {
			return present, fmt.Errorf("DaemonSet: %w", err)
		}
		if ds.Metadata.DeletionTimestamp != nil {
			return deleting, nil
		}
		return present, nil
	case http.StatusNotFound:
		return gone, nil
	case http.StatusUnauthorized:
		return refused, nil
	}
	return present, fmt.Errorf("DaemonSet: %s: %s", resp.Status, strings.TrimSpace(string(body)))
}
