// Package daemon is the netplugin agent (spec daemons.md §6): it joins the
// cluster through the store, builds the two OVS bridges and their ofnet
// agents, replays and then follows the configuration state, attaches
// endpoints for the runtime front ends, and serves the inspect API.
//
// The agent never exits on a store outage: every watch re-lists and resumes
// when the store comes back, and the dataplane keeps forwarding from what is
// installed meanwhile.
package daemon

import (
	"time"

	"github.com/contiv/netplugin/utils/daemonflags"
)

// DefaultAttachSocket is where the endpoint attach API listens by default.
const DefaultAttachSocket = "/run/contiv/contiv-attach.sock"

// Config is the parsed netplugin command line.
type Config struct {
	Common         daemonflags.Common
	HostLabel      string
	VtepIP         string
	CtrlIP         string
	VlanUplinks    []string
	VxlanPort      int
	OVSDatapath    string // "system" or "netdev"
	OVSDBSocket    string
	AttachSocket   string
	InspectAddress string
	Version        string
	// HostAccess turns on contivh0 host access and the host NAT rule
	// (routing mode, docs/dataplane.md §3.7).
	HostAccess bool

	// Knobs with the original's values as defaults; tests shorten them.
	ServiceTTL      time.Duration // netplugin service TTL (10 s)
	GlobalPoll      time.Duration // global settings poll at start (1 s)
	SwitchWait      time.Duration // wait for each bridge to connect (20 s)
	RestartSettle   time.Duration // after masters are known, before stale flows are removed (5 s)
	StoreRetryDelay time.Duration // pause before a failed watch is restarted (1 s)
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
	if c.VxlanPort == 0 {
		c.VxlanPort = 4789
	}
	if c.AttachSocket == "" {
		c.AttachSocket = DefaultAttachSocket
	}
	if c.InspectAddress == "" {
		c.InspectAddress = ":9090"
	}
}
