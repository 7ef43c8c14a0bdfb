package agent

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/contiv/netplugin/ofnet/ofrpc"
	"github.com/sirupsen/logrus"
)

// Datapath names (docs/dataplane.md §1.2).
const (
	DatapathVxlan   = "vxlan"   // VXLAN bridging on contivVxlanBridge
	DatapathVrouter = "vrouter" // VXLAN routing on contivVxlanBridge
	DatapathVlan    = "vlan"    // VLAN bridging on contivVlanBridge
)

// Defaults for zero Config values.
const (
	DefaultRestartGrace = 30 * time.Second
	DefaultGARPRounds   = 15
	DefaultGARPInterval = 3 * time.Second
)

// Config configures an Agent.
type Config struct {
	Bridge      string       // bridge name, for logs and inspect
	Datapath    string       // DatapathVxlan, DatapathVrouter or DatapathVlan
	LocalIP     net.IP       // this host's VTEP IP: the agent's identity towards masters
	RPCPort     uint16       // advertised in RegisterNode (9002 / 9003)
	RPCListener net.Listener // OfnetAgent/PolicyAgent are served here (nil: no RPC server)
	RPCLimits   ofrpc.Limits // bounds of that server (zero fields: ofrpc defaults)
	// RPCServices are further RPC services served on RPCListener, by
	// service name (netplugin's own, docs/security.md).
	RPCServices map[string]any
	OFListener  net.Listener // the OpenFlow controller listens here
	UplinkMAC   string       // vlan: OriginatorMac of local endpoints
	Pool        *ofrpc.Pool  // RPC client pool towards masters; nil: the agent's own
	Logger      logrus.FieldLogger

	// RestartGrace is how long after the first switch connection FinishRestart runs by
	// itself if the owner does not call it (default 30 s).
	RestartGrace time.Duration
	// VrfIDs are the host-local VRF ids given out by a previous run of this
	// agent (from OnVrfIDs): a restarted agent gives every tenant the id it
	// had, so the flows it replays are identical to those still installed.
	VrfIDs map[string]uint8
	// OnVrfIDs, when set, is called with every VRF id ever given out (under
	// the agent's lock: it must not call back into the agent) whenever a
	// tenant gets an id it did not have, so the owner can persist them.
	OnVrfIDs func(map[string]uint8)
	// DNSLookup, when set, is the name server DNS queries of containers are
	// intercepted for (docs/dns.md); nil: no interception.
	DNSLookup DNSLookup
	// GARPRounds and GARPInterval shape InjectGARPs bursts (default 15 rounds, 3 s).
	GARPRounds   int
	GARPInterval time.Duration
}

func (c *Config) validate() error {
	switch c.Datapath {
	case DatapathVxlan, DatapathVrouter, DatapathVlan, DatapathVlrouter:
	default:
		return fmt.Errorf("agent: datapath %q: want %q, %q, %q or %q", c.Datapath, DatapathVxlan, DatapathVrouter, DatapathVlan, DatapathVlrouter)
	}
	if c.LocalIP == nil || c.LocalIP.To4() == nil {
		return fmt.Errorf("agent: LocalIP %v: an IPv4 address is required", c.LocalIP)
	}
	if c.OFListener == nil {
		return errors.New("agent: OFListener is required")
	}
	if c.RestartGrace == 0 {
		c.RestartGrace = DefaultRestartGrace
	}
	if c.GARPRounds == 0 {
		c.GARPRounds = DefaultGARPRounds
	}
	if c.GARPInterval == 0 {
		c.GARPInterval = DefaultGARPInterval
	}
	if c.Logger == nil {
		c.Logger = logrus.StandardLogger()
	}
	return nil
}
