package dockplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/api/dockernets"
	"github.com/contiv/netplugin/state"
)

// Defaults of Config.
const (
	DefaultName = "netplugin"
	DefaultDir  = "/run/docker/plugins"
)

// Scopes a network driver can announce.
const (
	ScopeLocal  = "local"  // a standalone engine (legacy socket plugin)
	ScopeGlobal = "global" // swarm mode (managed plugin only)
)

// ErrNotFound: a network, endpoint or pool the request names is unknown.
var ErrNotFound = errors.New("dockplugin: not found")

// Backend is what the driver needs from the agent: the attach API for
// endpoints, netmaster's address API, and read access to the contiv
// networks, groups and docker network mappings.
type Backend interface {
	attach.HostAttacher
	// AllocAddress asks netmaster for an address of networkID ("" = find
	// the network by pool) from pool ("ip/len[:tenant]"); preferred ""
	// takes any. The answer is "ip/len".
	AllocAddress(ctx context.Context, networkID, pool, preferred string) (string, error)
	// ReleaseAddress gives an address AllocAddress handed out back.
	ReleaseAddress(ctx context.Context, networkID, addr string) error
	// Network reads network state "<net>.<tenant>"; ErrNotFound-wrapping
	// (errors.Is) when absent.
	Network(ctx context.Context, id string) (state.Network, error)
	// Group reads group state "<group>:<tenant>", likewise.
	Group(ctx context.Context, id string) (state.EndpointGroup, error)
	Networks(ctx context.Context) ([]state.Network, error)
	Groups(ctx context.Context) ([]state.EndpointGroup, error)
	// Docknets lists the docker network mappings netmaster recorded.
	Docknets(ctx context.Context) ([]state.Docknet, error)

	// Swarm mode only (AllocateNetwork, FreeNetwork).
	//
	// MapNetwork records the mapping of docker network dockerID.
	MapNetwork(ctx context.Context, dockerID, tenant, network, group string) error
	// UnmapNetwork deletes it (ErrNotFound-wrapping when there is none).
	UnmapNetwork(ctx context.Context, dockerID string) error
	// CreateNetwork and DeleteNetwork go through netmaster's REST API.
	CreateNetwork(ctx context.Context, spec SwarmNetwork) error
	DeleteNetwork(ctx context.Context, tenant, name string) error
}

// SwarmNetwork is a contiv network made for a swarm docker network.
type SwarmNetwork struct {
	Tenant, Name, Subnet, Gateway, IPv6Subnet, IPv6Gateway string
}

// Engine is the local Docker Engine, asked for networks the mappings do
// not know (docs/docker.md).
type Engine interface {
	InspectNetwork(ctx context.Context, idOrName string) (dockernets.Network, error)
}

// Config configures a Plugin.
type Config struct {
	// Name is the driver name (netmaster's --name); the socket is
	// Dir/Name.sock.
	Name string
	Dir  string
	// Scope is ScopeLocal (default) or ScopeGlobal.
	Scope string
	// SwarmMode maps networks only through the recorded mappings and
	// serves AllocateNetwork/FreeNetwork (docs/docker.md).
	SwarmMode bool
	Backend   Backend
	Engine    Engine // nil: only the recorded mappings are used
	Log       logrus.FieldLogger
}

// Plugin serves the network and IPAM drivers.
type Plugin struct {
	cfg Config
	log logrus.FieldLogger

	mu       sync.Mutex
	names    map[string]contivNames // docker network ID → names
	released map[string]struct{}    // "<netID>/<ip>" freed with their endpoint
}

// contivNames is a docker network's contiv network and group.
type contivNames struct {
	Tenant, Network, Group string
}

func (n contivNames) networkID() string { return n.Network + "." + n.Tenant }

// New checks cfg and returns a plugin.
func New(cfg Config) (*Plugin, error) {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.Dir == "" {
		cfg.Dir = DefaultDir
	}
	if cfg.Scope == "" {
		cfg.Scope = ScopeLocal
	}
	switch {
	case strings.ContainsAny(cfg.Name, "/\x00") || cfg.Name == "." || cfg.Name == "..":
		return nil, fmt.Errorf("dockplugin: invalid plugin name %q", cfg.Name)
	case !filepath.IsAbs(cfg.Dir):
		return nil, fmt.Errorf("dockplugin: plugin directory %q is not an absolute path", cfg.Dir)
	case cfg.Scope != ScopeLocal && cfg.Scope != ScopeGlobal:
		return nil, fmt.Errorf("dockplugin: scope %q: want %s or %s", cfg.Scope, ScopeLocal, ScopeGlobal)
	case cfg.Backend == nil:
		return nil, errors.New("dockplugin: no backend")
	}
	log := cfg.Log
	if log == nil {
		log = logrus.StandardLogger()
	}
	return &Plugin{cfg: cfg, log: log.WithField("plugin", cfg.Name), names: map[string]contivNames{}, released: map[string]struct{}{}}, nil
}

// SocketPath is Dir/Name.sock.
func (p *Plugin) SocketPath() string { return filepath.Join(p.cfg.Dir, p.cfg.Name+".sock") }

// Serve answers on SocketPath until ctx ends, then removes the socket.
func (p *Plugin) Serve(ctx context.Context) error {
	ln, err := attach.Listen(p.SocketPath())
	if err != nil {
		return fmt.Errorf("docker plugin socket: %w", err)
	}
	return p.ServeListener(ctx, ln)
}

// ServeListener answers on ln until ctx ends; it closes ln.
func (p *Plugin) ServeListener(ctx context.Context, ln net.Listener) error {
	p.log.WithField("socket", ln.Addr().String()).Infof("docker network and IPAM driver serving (scope %s)", p.cfg.Scope)
	return serveHTTP(ctx, ln, p.Handler())
}
