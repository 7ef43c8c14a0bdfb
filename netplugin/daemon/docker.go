package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/contiv/netplugin/netplugin/follow"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/api/dockernets"
	"github.com/contiv/netplugin/mgmtfn/dockplugin"
	"github.com/contiv/netplugin/netplugin/masterclient"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/daemonflags"
)

// dockerMode: this netplugin serves the Docker network and IPAM drivers
// (docs/docker.md).
func (c Config) dockerMode() bool {
	return c.Common.Mode == daemonflags.ModeDocker || c.Common.Mode == daemonflags.ModeSwarm
}

// startDocker serves the Docker plugin socket and, on a standalone engine,
// keeps the engine's networks in step with netmaster's docker network
// mappings.
func (d *Daemon) startDocker(ctx context.Context, wg *sync.WaitGroup, errc chan<- error) (*follow.Follower[state.Docknet], error) {
	engine := dockernets.NewClient(d.cfg.DockerSocket)
	swarm := d.cfg.Common.Mode == daemonflags.ModeSwarm
	scope := dockplugin.ScopeLocal
	if swarm {
		scope = dockplugin.ScopeGlobal
	}
	p, err := dockplugin.New(dockplugin.Config{Name: d.cfg.DockerPluginName, Dir: d.cfg.DockerPluginDir, Scope: scope,
		SwarmMode: swarm, Backend: dockerBackend{d}, Engine: engine, Log: d.log})
	if err != nil {
		engine.Close()
		return nil, err
	}
	goRun(ctx, wg, func(ctx context.Context) {
		defer engine.Close()
		if err := p.Serve(ctx); err != nil {
			errc <- fmt.Errorf("docker plugin: %w", err)
		}
	})
	goRun(ctx, wg, func(ctx context.Context) { p.FollowEvents(ctx, d.cfg.DockerSocket, dockerBackend{d}) })
	if swarm {
		return nil, nil
	}
	s := &dockerSync{d: d, engine: dockernets.NewClient(d.cfg.DockerSocket), log: d.log.WithField("sync", "docker networks"),
		want: map[string]*state.Docknet{}, kick: make(chan struct{}, 1)}
	goRun(ctx, wg, s.run)
	return follow.New("docknets", d.st.Docknets, follow.Handlers[state.Docknet]{Put: s.put, Del: s.del}, d.log, d.cfg.StoreRetryDelay), nil
}

// dockerBackend is the agent as the Docker driver sees it.
type dockerBackend struct{ d *Daemon }

func (b dockerBackend) AttachHost(ctx context.Context, req attach.HostRequest) (attach.Result, error) {
	return b.d.AttachHost(ctx, req)
}

func (b dockerBackend) Detach(ctx context.Context, req attach.DetachRequest) error {
	return b.d.Detach(ctx, req)
}

func (b dockerBackend) Attached(tenant, network, containerID string) (attach.Result, bool) {
	return b.d.Attached(tenant, network, containerID)
}

func (b dockerBackend) AllocAddress(ctx context.Context, networkID, pool, preferred string) (string, error) {
	resp, err := b.d.mc.AllocAddress(ctx, masterclient.AllocAddressRequest{NetworkID: networkID, AddressPool: pool,
		PreferredIPv4Address: preferred})
	return resp.IPv4Address, err
}

func (b dockerBackend) ReleaseAddress(ctx context.Context, networkID, addr string) error {
	return b.d.mc.ReleaseAddress(ctx, masterclient.ReleaseAddressRequest{NetworkID: networkID, IPv4Address: addr})
}

// MapNetwork records a swarm docker network's mapping (spec key
// oper/docknet/<tenant>.<network>.<group>).
func (b dockerBackend) MapNetwork(ctx context.Context, dockerID, tenant, network, group string) error {
	id := dockernets.StateID(tenant, network, group)
	_, err := b.d.st.Docknets.Write(ctx, state.Docknet{Common: state.Common{ID: id}, TenantName: tenant,
		NetworkName: network, ServiceName: group, DocknetUUID: dockerID})
	return err
}

// UnmapNetwork deletes the mapping of a swarm docker network.
func (b dockerBackend) UnmapNetwork(ctx context.Context, dockerID string) error {
	all, _, err := b.d.st.Docknets.ReadAll(ctx)
	if err != nil {
		return err
	}
	for _, dn := range all {
		if dn.DocknetUUID == dockerID {
			return b.d.st.Docknets.Clear(ctx, dn.ID)
		}
	}
	return fmt.Errorf("mapping of docker network %s: %w", dockerID, dockplugin.ErrNotFound)
}

// CreateNetwork creates a contiv network through netmaster's REST API.
func (b dockerBackend) CreateNetwork(ctx context.Context, s dockplugin.SwarmNetwork) error {
	body := map[string]any{"tenantName": s.Tenant, "networkName": s.Name, "subnet": s.Subnet, "encap": "vxlan"}
	for k, v := range map[string]string{"gateway": s.Gateway, "ipv6Subnet": s.IPv6Subnet, "ipv6Gateway": s.IPv6Gateway} {
		if v != "" {
			body[k] = v
		}
	}
	return b.d.mc.Do(ctx, http.MethodPost, "/api/v1/networks/"+s.Tenant+":"+s.Name+"/", body, nil)
}

// DeleteNetwork deletes a contiv network through netmaster's REST API.
func (b dockerBackend) DeleteNetwork(ctx context.Context, tenant, name string) error {
	return b.d.mc.Do(ctx, http.MethodDelete, "/api/v1/networks/"+tenant+":"+name+"/", nil, nil)
}

// ContainerEvent passes a container start or end to netmaster.
func (b dockerBackend) ContainerEvent(ctx context.Context, ev dockplugin.ContainerEvent) error {
	return b.d.mc.UpdateEndpoint(ctx, masterclient.UpdateEndpointRequest{IPAddress: ev.IPAddress, ContainerID: ev.ContainerID,
		Labels: ev.Labels, Tenant: ev.Tenant, Network: ev.Network, Event: ev.Event, EndpointID: ev.EndpointID,
		EPCommonName: ev.Name})
}

func notFound(err error) error {
	if errors.Is(err, objdb.ErrNotFound) {
		return fmt.Errorf("%w: %w", dockplugin.ErrNotFound, err)
	}
	return err
}

func (b dockerBackend) Network(ctx context.Context, id string) (state.Network, error) {
	nw, err := b.d.st.Networks.Read(ctx, id)
	return nw, notFound(err)
}

func (b dockerBackend) Group(ctx context.Context, id string) (state.EndpointGroup, error) {
	g, err := b.d.st.EndpointGroups.Read(ctx, id)
	return g, notFound(err)
}

func (b dockerBackend) Networks(ctx context.Context) ([]state.Network, error) {
	all, _, err := b.d.st.Networks.ReadAll(ctx)
	return all, err
}

func (b dockerBackend) Groups(ctx context.Context) ([]state.EndpointGroup, error) {
	all, _, err := b.d.st.EndpointGroups.ReadAll(ctx)
	return all, err
}

func (b dockerBackend) Docknets(ctx context.Context) ([]state.Docknet, error) {
	all, _, err := b.d.st.Docknets.ReadAll(ctx)
	return all, err
}

// dockerSync creates, on the local engine, the docker network of every
// mapping netmaster records (netmaster creates it on its own engine only)
// and removes it when the mapping goes. Failures (an engine not up yet, a
// network still in use) are retried.
type dockerSync struct {
	d      *Daemon
	engine *dockernets.Client
	log    logrus.FieldLogger

	mu   sync.Mutex
	want map[string]*state.Docknet // mapping id → mapping; nil: remove
	kick chan struct{}
}

// syncRetry is the pause before failed keys are tried again.
const syncRetry = 2 * time.Second

func (s *dockerSync) put(_ context.Context, dn state.Docknet, _ *state.Docknet) {
	s.set(dn.ID, &dn)
}

func (s *dockerSync) del(_ context.Context, dn state.Docknet) {
	s.set(dn.ID, &state.Docknet{Common: dn.Common, TenantName: dn.TenantName, NetworkName: dn.NetworkName,
		ServiceName: dn.ServiceName})
}

// set records what key should become; a mapping without a UUID means
// removal.
func (s *dockerSync) set(id string, dn *state.Docknet) {
	s.mu.Lock()
	s.want[id] = dn
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *dockerSync) run(ctx context.Context) {
	defer s.engine.Close()
	t := time.NewTicker(syncRetry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-t.C:
		}
		s.mu.Lock()
		ids := make([]string, 0, len(s.want))
		for id := range s.want {
			ids = append(ids, id)
		}
		s.mu.Unlock()
		sort.Strings(ids)
		for _, id := range ids {
			s.mu.Lock()
			dn := s.want[id]
			s.mu.Unlock()
			err := s.apply(ctx, dn)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				s.log.WithError(err).WithField("mapping", id).Debug("docker network not in step yet")
				continue
			}
			s.mu.Lock()
			if s.want[id] == dn {
				delete(s.want, id)
			}
			s.mu.Unlock()
		}
	}
}

func (s *dockerSync) apply(ctx context.Context, dn *state.Docknet) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	name := dockernets.Name(dn.TenantName, dn.NetworkName, dn.ServiceName)
	if dn.DocknetUUID == "" {
		existed, err := dockernets.Remove(ctx, s.engine, dn.TenantName, dn.NetworkName, dn.ServiceName)
		if err == nil && existed {
			s.log.WithField("network", name).Info("docker network removed")
		}
		return err
	}
	nw, err := s.d.st.Networks.Read(ctx, state.NetworkID(dn.TenantName, dn.NetworkName))
	if errors.Is(err, objdb.ErrNotFound) {
		return nil // the mapping's removal follows
	}
	if err != nil {
		return err
	}
	id, created, err := dockernets.Create(ctx, s.engine, s.d.cfg.DockerPluginName, docknetSpec(nw, dn.ServiceName))
	if errors.Is(err, dockernets.ErrOtherDriver) {
		s.log.WithError(err).Errorf("docker network %s not created", name)
		return nil
	}
	if err == nil && created {
		s.log.WithFields(logrus.Fields{"network": name, "id": id}).Info("docker network created")
	}
	return err
}

// docknetSpec is the docker network of network state nw (group "" for the
// network itself), as netmaster creates it (docs/docker.md).
func docknetSpec(nw state.Network, group string) dockernets.Spec {
	s := dockernets.Spec{Tenant: nw.Tenant, Network: nw.NetworkName, Group: group, Encap: nw.PktTagType,
		PktTag: nw.PktTag, Subnet: fmt.Sprintf("%s/%d", nw.SubnetIP, nw.SubnetLen), Gateway: nw.Gateway}
	if nw.PktTagType == "vxlan" {
		s.PktTag = nw.ExtPktTag
	}
	if nw.IPv6Subnet != "" {
		s.IPv6Subnet = fmt.Sprintf("%s/%d", nw.IPv6Subnet, nw.IPv6SubnetLen)
		s.IPv6Gateway = nw.IPv6Gateway
	}
	return s
}
