package dockerbackend

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/api/dockernets"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
)

// Sync creates, on the local engine, the docker network of every mapping
// netmaster records (netmaster creates it on its own engine only) and
// removes it when the mapping goes. Failures (an engine not up yet, a
// network still in use) are retried.
type Sync struct {
	networks   state.Collection[state.Network]
	pluginName string
	engine     *dockernets.Client
	log        logrus.FieldLogger

	mu   sync.Mutex
	want map[string]*state.Docknet // mapping id → mapping; nil: remove
	kick chan struct{}
}

// NewSync makes the sync of the engine at engine's socket for the plugin
// pluginName; networks are the store's networks.
func NewSync(engine *dockernets.Client, pluginName string, networks state.Collection[state.Network], log logrus.FieldLogger) *Sync {
	return &Sync{networks: networks, pluginName: pluginName, engine: engine, log: log,
		want: map[string]*state.Docknet{}, kick: make(chan struct{}, 1)}
}

// syncRetry is the pause before failed keys are tried again.
const syncRetry = 2 * time.Second

// Put and Del are the handlers of the mappings' follower.
func (s *Sync) Put(_ context.Context, dn state.Docknet, _ *state.Docknet) {
	s.set(dn.ID, &dn)
}

// Del: see Put.
func (s *Sync) Del(_ context.Context, dn state.Docknet) {
	s.set(dn.ID, &state.Docknet{Common: dn.Common, TenantName: dn.TenantName, NetworkName: dn.NetworkName,
		ServiceName: dn.ServiceName})
}

// set records what key should become; a mapping without a UUID means
// removal.
func (s *Sync) set(id string, dn *state.Docknet) {
	s.mu.Lock()
	s.want[id] = dn
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Run applies the mappings until ctx ends; it closes the engine client.
func (s *Sync) Run(ctx context.Context) {
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

func (s *Sync) apply(ctx context.Context, dn *state.Docknet) error {
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
	nw, err := s.networks.Read(ctx, state.NetworkID(dn.TenantName, dn.NetworkName))
	if errors.Is(err, objdb.ErrNotFound) {
		return nil // the mapping's removal follows
	}
	if err != nil {
		return err
	}
	id, created, err := dockernets.Create(ctx, s.engine, s.pluginName, dockernets.SpecOf(nw, dn.ServiceName))
	if errors.Is(err, dockernets.ErrOtherDriver) {
		s.log.WithError(err).Errorf("docker network %s not created", name)
		return nil
	}
	if err == nil && created {
		s.log.WithFields(logrus.Fields{"network": name, "id": id}).Info("docker network created")
	}
	return err
}
