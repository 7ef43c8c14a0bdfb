package daemon

import (
	"context"
	"fmt"
	"sync"

	"github.com/contiv/netplugin/netplugin/dockerbackend"
	"github.com/contiv/netplugin/netplugin/follow"

	"github.com/contiv/netplugin/api/dockernets"
	"github.com/contiv/netplugin/mgmtfn/dockplugin"
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
		SwarmMode: swarm, Backend: d.dockerBackend(), Engine: engine, Log: d.log})
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
	goRun(ctx, wg, func(ctx context.Context) { p.FollowEvents(ctx, d.cfg.DockerSocket, d.dockerBackend()) })
	if swarm {
		return nil, nil
	}
	s := dockerbackend.NewSync(dockernets.NewClient(d.cfg.DockerSocket), d.cfg.DockerPluginName, d.st.Networks,
		d.log.WithField("sync", "docker networks"))
	goRun(ctx, wg, s.Run)
	return follow.New("docknets", d.st.Docknets, follow.Handlers[state.Docknet]{Put: s.Put, Del: s.Del}, d.log, d.cfg.StoreRetryDelay), nil
}

// dockerBackend is the agent as the Docker driver sees it.
func (d *Daemon) dockerBackend() dockerbackend.Backend {
	return dockerbackend.Backend{Attach: d, Master: d.mc, Store: d.st}
}
