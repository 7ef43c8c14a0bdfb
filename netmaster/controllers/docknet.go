package controllers

import (
	"context"
	"errors"
	"fmt"

	"github.com/contiv/netplugin/api/dockernets"
	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/endpoints"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/daemonflags"
)

// DefaultPluginName is the docker driver name when Config.PluginName is "".
const DefaultPluginName = "netplugin"

// dockerMode: this netmaster creates and removes docker networks (spec
// docs/daemons.md §4.4, §4.14). Only then is m.docker set.
func (m *Objects) dockerMode() bool { return m.cfg.ClusterMode == daemonflags.ModeDocker }

func (m *Objects) swarmMode() bool { return m.cfg.ClusterMode == daemonflags.ModeSwarm }

func (m *Objects) pluginName() string {
	if m.cfg.PluginName == "" {
		return DefaultPluginName
	}
	return m.cfg.PluginName
}

// createDocknet creates (or reuses) the docker network of a contiv network
// or group and records the mapping in oper/docknet; a later abort removes
// a network it created and restores the mapping key.
func (m *Objects) createDocknet(ctx context.Context, tx *contivmodel.Tx, ns state.Network, group string) error {
	spec := dockernets.SpecOf(ns, group)
	id, created, err := dockernets.Create(ctx, m.docker, m.pluginName(), spec)
	if errors.Is(err, dockernets.ErrOtherDriver) {
		return &contivmodel.Error{Msg: dockernets.ErrOtherDriver.Error(), Err: err}
	}
	if err != nil {
		return err
	}
	if created {
		tx.OnAbort(func() {
			ctx, cancel := endpoints.UndoContext()
			defer cancel()
			if err := m.docker.RemoveNetwork(ctx, id); err != nil && !errors.Is(err, dockernets.ErrNotFound) {
				m.log.WithError(err).WithField("docknet", id).Error("roll back docker network")
			}
		})
	}
	sid := dockernets.StateID(ns.Tenant, ns.NetworkName, group)
	undo, err := m.eps.Snapshot(ctx, m.st.Docknets.Key(sid))
	if err != nil {
		return err
	}
	tx.OnAbort(undo)
	dn := state.Docknet{Common: state.Common{ID: sid}, TenantName: ns.Tenant, NetworkName: ns.NetworkName,
		ServiceName: group, DocknetUUID: id}
	if _, err := m.st.Docknets.Write(ctx, dn); err != nil {
		return fmt.Errorf("write docknet state %q: %w", sid, err)
	}
	return nil
}

// deleteDocknet removes the docker network of a contiv network or group
// (absence tolerated) and its mapping. A missing mapping is an error only
// when the docker network was still there (docs/daemons.md §4.14; the
// docker removal itself cannot be rolled back).
func (m *Objects) deleteDocknet(ctx context.Context, tx *contivmodel.Tx, tenant, network, group string) error {
	existed, err := dockernets.Remove(ctx, m.docker, tenant, network, group)
	if err != nil {
		return err
	}
	sid := dockernets.StateID(tenant, network, group)
	if _, err := m.st.Docknets.Read(ctx, sid); errors.Is(err, objdb.ErrNotFound) {
		if !existed {
			return nil
		}
		return fmt.Errorf("docker network %q removed but its mapping: %w", dockernets.Name(tenant, network, group), err)
	} else if err != nil {
		return fmt.Errorf("read docknet state %q: %w", sid, err)
	}
	undo, err := m.eps.Snapshot(ctx, m.st.Docknets.Key(sid))
	if err != nil {
		return err
	}
	tx.OnAbort(undo)
	if err := m.st.Docknets.Clear(ctx, sid); err != nil {
		return fmt.Errorf("delete docknet state %q: %w", sid, err)
	}
	return nil
}

// refuseSwarmDelete refuses, in swarm mode, the delete of a contiv network
// or group (kind "network" or "group", called name) that is mapped to a
// docker network.
func (m *Objects) refuseSwarmDelete(ctx context.Context, kind, name, tenant, network, group string) error {
	if !m.swarmMode() {
		return nil
	}
	sid := dockernets.StateID(tenant, network, group)
	dn, err := m.st.Docknets.Read(ctx, sid)
	if errors.Is(err, objdb.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read docknet state %q: %w", sid, err)
	}
	if dn.DocknetUUID == "" {
		return nil
	}
	return contivmodel.Errorf("cannot delete %s %s mapped to docker network %s", kind, name, dn.DocknetUUID)
}
