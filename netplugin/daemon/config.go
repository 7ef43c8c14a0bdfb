// Package daemon is the netplugin agent (docs/daemons.md §6): it joins the
// cluster through the store, builds the two OVS bridges and their ofnet
// agents, replays and then follows the configuration state, attaches
// endpoints for the runtime front ends, and serves the inspect API.
//
// The agent never exits on a store outage: every watch re-lists and resumes
// when the store comes back, and the dataplane keeps forwarding from what is
// installed meanwhile.
package daemon

import (
	"crypto/tls"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contiv/netplugin/mgmtfn/k8splugin"
	"github.com/contiv/netplugin/mgmtfn/k8splugin/cniapi"

	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/contiv/netplugin/utils/daemonflags"
)

// DefaultAttachSocket is where the endpoint attach API listens by default.
const DefaultAttachSocket = "/run/contiv/contiv-attach.sock"

// DefaultInspectAddress is where the inspect server listens by default:
// loopback only (docs/security.md, "Listeners").
const DefaultInspectAddress = "127.0.0.1:9090"

// Config is the parsed netplugin command line.
type Config struct {
	Common       daemonflags.Common
	HostLabel    string
	VtepIP       string
	CtrlIP       string
	VlanUplinks  []string
	VxlanPort    int
	OVSDatapath  string // "system" or "netdev"
	OVSDBSocket  string
	AttachSocket string
	CNISocket    string // kubernetes mode: the CNI server's socket
	CNIStateDir  string // kubernetes mode: the CNI attachment records
	// MesosSocket is the Mesos CNI server's socket (any mode; "" serves
	// none), MesosStateDir its attachment records (docs/mesos.md).
	MesosSocket   string
	MesosStateDir string
	// K8sConfig is the API server settings file of kubernetes mode: a
	// kubeconfig or the original's contiv.json; "" means the in-cluster
	// settings when KUBERNETES_SERVICE_HOST is set, else no API server
	// (docs/k8s.md, "Informers").
	K8sConfig string
	// PodLabels gives pods' labels to the CNI server; nil: the pod
	// informer of the API server K8sConfig names, or, with none, only the
	// labels a CNI request carries.
	PodLabels k8splugin.LabelSource
	// InspectAddress is where the inspect server listens (default
	// DefaultInspectAddress, loopback). InspectTLS and InspectToken, when
	// set, make it HTTPS and require the bearer token; a non-loopback
	// address needs both unless InsecureInspect (docs/security.md).
	InspectAddress  string
	InspectTLS      *tls.Config
	InspectToken    string
	InsecureInspect bool
	// Docker front end (docker and swarm-mode, docs/docker.md): driver
	// name (netmaster's --name), plugin socket directory, engine socket.
	DockerPluginName string
	DockerPluginDir  string
	DockerSocket     string
	Version          string
	// OVSUnixctl is ovs-vswitchd's control socket (packet trace); ""
	// finds it in the OVSDB socket's folder.
	OVSUnixctl string
	// Metrics is the registry the inspect server's /metrics serves; nil
	// turns metrics off (docs/operations.md).
	Metrics *prometheus.Registry
	// MasterTLS, when set, makes the /plugin calls to netmaster HTTPS;
	// MasterToken is sent as their bearer token (docs/operations.md).
	MasterTLS   *tls.Config
	MasterToken string
	// RPCServerTLS and RPCClientTLS, when set, make the ofnet RPC with
	// the masters mutual TLS: the agents' listeners and their calls.
	RPCServerTLS, RPCClientTLS *tls.Config
	// InsecureRPC: --insecure-rpc was given (both TLS settings nil); the
	// daemon logs a warning.
	InsecureRPC bool
	// RPCLimits bound the agents' RPC servers (zero fields: the ofrpc
	// defaults; docs/security.md, "RPC limits").
	RPCLimits ofrpc.Limits
	// HostAccess turns on contivh0 host access and the host NAT rule
	// (routing mode, docs/dataplane.md §3.7).
	HostAccess bool

	// Knobs with the original's values as defaults; tests shorten them.
	ServiceTTL      time.Duration // netplugin service TTL (10 s)
	GlobalPoll      time.Duration // global settings poll at start (1 s)
	SwitchWait      time.Duration // wait for each bridge to connect (20 s)
	RestartSettle   time.Duration // after masters are known, before stale flows are removed (5 s)
	StoreRetryDelay time.Duration // pause before a failed watch is restarted (1 s)
	SweepInterval   time.Duration // between sweeps of orphaned endpoints and remote endpoints (1 min, sweep.go)
	// A remote endpoint still held RemoteDelGrace after the store watch
	// reported its record deleted is removed by an early sweep, at most
	// one per SweepKickGap (netplugin/remotesweep).
	RemoteDelGrace time.Duration // 5 s
	SweepKickGap   time.Duration // 10 s
	// The reconcilers (netplugin/reconcile): a failed key comes back after
	// ReconcileBaseDelay, doubling up to ReconcileMaxDelay; every key is
	// reconciled again every ResyncInterval.
	ReconcileBaseDelay time.Duration // 100 ms
	ReconcileMaxDelay  time.Duration // 30 s
	ResyncInterval     time.Duration // 5 min
}

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.ServiceTTL, 10*time.Second)
	def(&c.GlobalPoll, time.Second)
	def(&c.SwitchWait, 20*time.Second)
	def(&c.RestartSettle, 5*time.Second)
	def(&c.StoreRetryDelay, time.Second)
	def(&c.SweepInterval, time.Minute)
	def(&c.RemoteDelGrace, 5*time.Second)
	def(&c.SweepKickGap, 10*time.Second)
	def(&c.ReconcileBaseDelay, 100*time.Millisecond)
	def(&c.ReconcileMaxDelay, 30*time.Second)
	def(&c.ResyncInterval, 5*time.Minute)
	if c.VxlanPort == 0 {
		c.VxlanPort = 4789
	}
	if c.AttachSocket == "" {
		c.AttachSocket = DefaultAttachSocket
	}
	if c.DockerPluginName == "" {
		c.DockerPluginName = "netplugin"
	}
	if c.DockerPluginDir == "" {
		c.DockerPluginDir = "/run/docker/plugins"
	}
	if c.DockerSocket == "" {
		c.DockerSocket = "/var/run/docker.sock"
	}
	if c.CNISocket == "" {
		c.CNISocket = cniapi.DefaultSocket
	}
	if c.CNIStateDir == "" {
		c.CNIStateDir = DefaultCNIStateDir
	}
	if c.InspectAddress == "" {
		c.InspectAddress = DefaultInspectAddress
	}
}
