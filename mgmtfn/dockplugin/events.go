package dockplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/contiv/netplugin/utils/ctxutil"
)

// ContainerEvent tells netmaster that a container on one of our networks
// started (its id, name and labels go into the endpoint, and the labels
// make it a provider of matching services) or died (docs/docker.md).
type ContainerEvent struct {
	Event       string // "start" or "die"
	ContainerID string
	Name        string
	Labels      map[string]string
	Tenant      string
	Network     string // the group's name for a group network, else the network's
	EndpointID  string // the docker endpoint id
	IPAddress   string
}

// EventSink receives container events (the agent passes them to netmaster).
type EventSink interface {
	ContainerEvent(ctx context.Context, ev ContainerEvent) error
}

// Bounds of the event follower.
const (
	eventRetryMin = 500 * time.Millisecond
	eventRetryMax = 5 * time.Second
	engineTimeout = 30 * time.Second
)

// engineEvent is one message of the engine's /events stream.
type engineEvent struct {
	Type   string
	Action string
	Actor  struct {
		ID         string
		Attributes map[string]string
	}
}

// containerJSON is what the follower reads of GET /containers/{id}/json.
type containerJSON struct {
	ID    string `json:"Id"`
	Name  string
	State struct {
		Running bool
	}
	Config struct {
		Labels map[string]string
	}
	NetworkSettings struct {
		Networks map[string]struct {
			NetworkID  string
			EndpointID string
			IPAddress  string
		}
	}
}

// FollowEvents follows the container events of the engine on socket until
// ctx ends, reconnecting (with a bounded back-off) when the engine goes
// away. After every (re)connect, every running container is reported as
// started, so a netplugin or engine restart misses nothing.
func (p *Plugin) FollowEvents(ctx context.Context, socket string, sink EventSink) {
	var d net.Dialer
	hc := &http.Client{Transport: &http.Transport{
		DialContext:     func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "unix", socket) },
		MaxIdleConns:    2,
		IdleConnTimeout: 30 * time.Second,
	}}
	defer hc.CloseIdleConnections()
	f := &follower{p: p, hc: hc, sink: sink, ours: map[string]bool{}}
	bo := ctxutil.NewBackoff(eventRetryMin, eventRetryMax)
	for ctx.Err() == nil {
		err := f.stream(ctx)
		if ctx.Err() != nil {
			return
		}
		if f.connected {
			bo.Reset()
		}
		wait := bo.NextBackOff()
		p.log.WithError(err).Debugf("engine event stream ended; reconnecting in %v", wait)
		if !ctxutil.Sleep(ctx, wait) {
			return
		}
	}
}

type follower struct {
	p         *Plugin
	hc        *http.Client
	sink      EventSink
	ours      map[string]bool // docker network ID → served by this driver
	connected bool
}

func (f *follower) stream(ctx context.Context) error {
	f.connected = false
	filters := url.QueryEscape(`{"type":["container","network"],"event":["start","die","connect"]}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://docker/events?filters="+filters, nil)
	if err != nil {
		return err
	}
	resp, err := f.hc.Do(req)
	if err != nil {
		return fmt.Errorf("engine events: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("engine events: status %s", resp.Status)
	}
	f.connected = true
	f.p.log.Info("following the engine's container events")
	if err := f.resync(ctx); err != nil {
		f.p.log.WithError(err).Warn("report running containers")
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var ev engineEvent
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("engine events: stream closed")
			}
			return fmt.Errorf("engine events: %w", err)
		}
		if ev.Type == "network" && ev.Action == "connect" {
			// docker network connect: a running container joined one of
			// our networks; it sends no start event. (docker run connects
			// before the start, which reports it.)
			if id := ev.Actor.Attributes["container"]; id != "" && ev.Actor.ID != "" && f.isOurs(ctx, ev.Actor.ID) {
				f.joined(ctx, id, ev.Actor.ID)
			}
			continue
		}
		if ev.Type != "container" || ev.Actor.ID == "" {
			continue
		}
		switch ev.Action {
		case "start":
			f.started(ctx, ev.Actor.ID)
		case "die":
			if err := f.sink.ContainerEvent(ctx, ContainerEvent{Event: "die", ContainerID: ev.Actor.ID}); err != nil {
				f.p.log.WithError(err).WithField("container", ev.Actor.ID).Warn("report container end")
			}
		}
	}
}

// resync reports every running container as started.
func (f *follower) resync(ctx context.Context) error {
	var list []struct {
		ID string `json:"Id"`
	}
	if err := f.get(ctx, "/containers/json", &list); err != nil {
		return err
	}
	for _, c := range list {
		f.started(ctx, c.ID)
	}
	return nil
}

// connectWait bounds how long a connect event waits for the engine to
// show the new endpoint in the container's settings.
const connectWait = 2 * time.Second

// joined reports the endpoints of a running container that was
// connected to our network netID.
func (f *follower) joined(ctx context.Context, id, netID string) {
	deadline := time.Now().Add(connectWait)
	for {
		var c containerJSON
		if err := f.get(ctx, "/containers/"+url.PathEscape(id)+"/json", &c); err != nil {
			f.p.log.WithError(err).WithField("container", id).Debug("inspect connected container")
			return
		}
		if !c.State.Running {
			return // docker run: its start event reports it
		}
		for _, nw := range c.NetworkSettings.Networks {
			if nw.NetworkID == netID && nw.EndpointID != "" && nw.IPAddress != "" {
				f.report(ctx, c)
				return
			}
		}
		if time.Now().After(deadline) {
			f.p.log.WithField("container", id).Warn("connected container shows no endpoint on the network")
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// started reports a container's endpoints on our networks.
func (f *follower) started(ctx context.Context, id string) {
	var c containerJSON
	if err := f.get(ctx, "/containers/"+url.PathEscape(id)+"/json", &c); err != nil {
		f.p.log.WithError(err).WithField("container", id).Debug("inspect started container")
		return
	}
	f.report(ctx, c)
}

// report sends a start event for each of c's endpoints on our networks.
func (f *follower) report(ctx context.Context, c containerJSON) {
	id := c.ID
	for _, nw := range c.NetworkSettings.Networks {
		if nw.EndpointID == "" || nw.IPAddress == "" || !f.isOurs(ctx, nw.NetworkID) {
			continue
		}
		n, err := f.p.resolve(ctx, nw.NetworkID)
		if err != nil {
			f.p.log.WithError(err).WithField("container", id).Warn("map container network")
			continue
		}
		ev := ContainerEvent{Event: "start", ContainerID: c.ID, Name: strings.TrimPrefix(c.Name, "/"), Labels: c.Config.Labels,
			Tenant: n.Tenant, Network: n.Network, EndpointID: nw.EndpointID, IPAddress: nw.IPAddress}
		if n.Group != "" {
			ev.Network = n.Group
		}
		if err := f.sink.ContainerEvent(ctx, ev); err != nil {
			f.p.log.WithError(err).WithField("container", id).Warn("report container start")
		}
	}
}

// isOurs reports whether a docker network is served by this driver.
func (f *follower) isOurs(ctx context.Context, id string) bool {
	if ours, ok := f.ours[id]; ok {
		return ours
	}
	if f.p.cfg.Engine == nil {
		return false
	}
	nw, err := f.p.cfg.Engine.InspectNetwork(ctx, id)
	if err != nil {
		return false
	}
	driver, _, _ := strings.Cut(nw.Driver, ":")
	ours := driver == f.p.cfg.Name || strings.HasSuffix(driver, "/"+f.p.cfg.Name)
	f.ours[id] = ours
	return ours
}

func (f *follower) get(ctx context.Context, path string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, engineTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://docker"+path, nil)
	if err != nil {
		return err
	}
	resp, err := f.hc.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %s", path, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(out); err != nil {
		return fmt.Errorf("GET %s: decode: %w", path, err)
	}
	return nil
}
