package consul

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/utils/ctxutil"
)

// serviceReg is one registered instance kept alive by this client.
type serviceReg struct {
	key    string // consul key
	ttl    time.Duration
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	value []byte  // current JSON value
	sess  session // current session
}

func (r *serviceReg) current() ([]byte, session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.value, r.sess
}

// RegisterService writes "service/<name>/<HostAddr>:<Port>" bound to a
// session (behaviour delete, TTL ServiceTTL(info)/2 so the key vanishes
// within the TTL after this process dies) and keeps the session alive with
// the library's RenewPeriodic. If the session is lost (e.g. the agent was
// unreachable for longer than the TTL) a new session and key are made.
// Registering the same instance again replaces its value.
func (c *Client) RegisterService(ctx context.Context, info objdb.ServiceInfo) error {
	if err := c.checkOpen(); err != nil {
		return fmt.Errorf("register service %q: %w", info.ServiceName, err)
	}
	if err := objdb.CheckServiceInfo(info); err != nil {
		return fmt.Errorf("register service: %w", err)
	}
	rel := objdb.ServiceKey(info)
	key := c.full(rel)
	value, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("register service %q: encode: %w", rel, err)
	}

	c.svcMu.Lock()
	defer c.svcMu.Unlock()
	if reg := c.services[key]; reg != nil {
		reg.mu.Lock()
		reg.value = value
		sess := reg.sess
		reg.mu.Unlock()
		// Same session, new value. If the session is gone right now the
		// keep-alive loop re-creates the key with the new value.
		var ok bool
		err := c.retry(ctx, fmt.Sprintf("update service %q", rel), func(ctx context.Context) error {
			var err error
			ok, _, err = c.api.KV().Acquire(&api.KVPair{Key: key, Value: value, Session: sess.id}, wopts(ctx))
			return err
		})
		if err != nil {
			return fmt.Errorf("register service: %w", err)
		}
		if !ok {
			c.log.WithField("service", rel).Warn("service session lost while updating; the keep-alive re-creates it")
		}
		return nil
	}

	ttl := objdb.ServiceTTL(info)
	sess, err := c.bindService(ctx, key, rel, value, ttl)
	if err != nil {
		return fmt.Errorf("register service: %w", err)
	}
	reg := &serviceReg{key: key, ttl: ttl, value: value, sess: sess, done: make(chan struct{})}
	rctx, cancel := context.WithCancel(c.base)
	reg.cancel = cancel
	err = c.goOwned(func() {
		defer close(reg.done)
		c.keepService(rctx, reg, rel)
	})
	if err != nil {
		cancel()
		c.destroySession(ctx, sess)
		return fmt.Errorf("register service %q: %w", rel, err)
	}
	c.services[key] = reg
	return nil
}

// bindService creates a session and writes key with it: the previous key
// (e.g. of this instance's earlier, dead process) is deleted first, then
// the key is acquired by the new session.
func (c *Client) bindService(ctx context.Context, key, rel string, value []byte, ttl time.Duration) (session, error) {
	sess, err := c.createSession(ctx, key, ttl)
	if err != nil {
		return session{}, fmt.Errorf("service %q: %w", rel, err)
	}
	for try := 0; ; try++ {
		var ok bool
		err = c.retry(ctx, fmt.Sprintf("write service %q", rel), func(ctx context.Context) error {
			if _, err := c.api.KV().Delete(key, wopts(ctx)); err != nil {
				return err
			}
			var err error
			ok, _, err = c.api.KV().Acquire(&api.KVPair{Key: key, Value: value, Session: sess.id}, wopts(ctx))
			return err
		})
		if err == nil && ok {
			return sess, nil
		}
		if err == nil && try >= 20 {
			err = fmt.Errorf("consul refused to bind the key to session %s", sess.id)
		}
		if err != nil {
			dctx, cancel := cleanupCtx(ctx, c.cfg.RequestTimeout)
			c.destroySession(dctx, sess)
			cancel()
			return session{}, fmt.Errorf("service %q: %w", rel, err)
		}
		// Refused: the lock-delay of the key's previous session.
		if !ctxutil.Sleep(ctx, acquireRetry) {
			return session{}, fmt.Errorf("service %q: %w", rel, ctx.Err())
		}
	}
}

// keepService renews reg's session until ctx ends; when the session is
// lost it re-creates session and key, retrying with backoff.
func (c *Client) keepService(ctx context.Context, reg *serviceReg, rel string) {
	log := c.log.WithField("service", rel)
	for {
		_, sess := reg.current()
		err := c.renew(ctx, sess)
		if ctx.Err() != nil {
			return // deregistered or client closed
		}
		log.WithError(err).Warn("service session lost; registering again")
		bo := c.cfg.newBackoff()
		for {
			value, _ := reg.current()
			ns, err := c.bindService(ctx, reg.key, rel, value, reg.ttl)
			if err == nil {
				reg.mu.Lock()
				reg.sess = ns
				reg.mu.Unlock()
				// A concurrent RegisterService may have written the old
				// session with a newer value: write the latest once more.
				if v, _ := reg.current(); string(v) != string(value) {
					rctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
					_, _, _ = c.api.KV().Acquire(&api.KVPair{Key: reg.key, Value: v, Session: ns.id}, wopts(rctx))
					cancel()
				}
				log.Info("service registered again")
				break
			}
			if ctx.Err() != nil {
				return
			}
			d := bo.NextBackOff()
			log.WithError(err).Warnf("service re-registration failed, retrying in %v", d)
			if !ctxutil.Sleep(ctx, d) {
				return
			}
		}
	}
}

// DeregisterService stops the keep-alive, destroys the session and
// deletes the key. Deregistering an instance this client does not keep
// still deletes its key.
func (c *Client) DeregisterService(ctx context.Context, info objdb.ServiceInfo) error {
	if err := c.checkOpen(); err != nil {
		return fmt.Errorf("deregister service %q: %w", info.ServiceName, err)
	}
	if err := objdb.CheckServiceInfo(info); err != nil {
		return fmt.Errorf("deregister service: %w", err)
	}
	rel := objdb.ServiceKey(info)
	key := c.full(rel)
	c.svcMu.Lock()
	reg := c.services[key]
	delete(c.services, key)
	c.svcMu.Unlock()
	if reg != nil {
		reg.cancel()
		<-reg.done
		_, sess := reg.current()
		c.destroySession(ctx, sess)
	}
	return c.retry(ctx, fmt.Sprintf("deregister service %q", rel), func(ctx context.Context) error {
		_, err := c.api.KV().Delete(key, wopts(ctx))
		return err
	})
}

// GetService lists the live instances of a service, sorted by key.
func (c *Client) GetService(ctx context.Context, name string) ([]objdb.ServiceInfo, error) {
	if err := c.checkOpen(); err != nil {
		return nil, fmt.Errorf("get service %q: %w", name, err)
	}
	if err := objdb.CheckServiceInfo(objdb.ServiceInfo{ServiceName: name, HostAddr: "x"}); err != nil {
		return nil, fmt.Errorf("get service: %w", err)
	}
	kvs, err := c.List(ctx, objdb.ServicePrefix(name))
	if err != nil {
		return nil, fmt.Errorf("get service %q: %w", name, err)
	}
	out := make([]objdb.ServiceInfo, 0, len(kvs))
	for _, kv := range kvs {
		var info objdb.ServiceInfo
		if err := json.Unmarshal(kv.Value, &info); err != nil {
			return nil, fmt.Errorf("get service %q: decode %q: %w", name, kv.Key, err)
		}
		out = append(out, info)
	}
	return out, nil
}

// WatchService sends an Add for every live instance, then runs blocking
// list queries on the service's prefix and diffs them by key: a new key or
// a changed value is an Add, a vanished key a Del carrying the last value
// seen. A value that does not decode is logged and skipped. Errors are
// retried with backoff (logged); the channel is closed when ctx ends or the
// client is closed.
func (c *Client) WatchService(ctx context.Context, name string) (<-chan objdb.ServiceEvent, error) {
	if err := c.checkOpen(); err != nil {
		return nil, fmt.Errorf("watch service %q: %w", name, err)
	}
	if err := objdb.CheckServiceInfo(objdb.ServiceInfo{ServiceName: name, HostAddr: "x"}); err != nil {
		return nil, fmt.Errorf("watch service: %w", err)
	}
	p := &poller{c: c, prefix: c.full(objdb.ServicePrefix(name))}
	pairs, err := p.list(ctx, fmt.Sprintf("watch service %q", name))
	if err != nil {
		return nil, err
	}
	log := c.log.WithField("service", name)
	known := map[string]objdb.ServiceInfo{}
	raw := map[string][]byte{}
	// diff turns a listing into events and updates known/raw.
	diff := func(pairs api.KVPairs) []objdb.ServiceEvent {
		var evs []objdb.ServiceEvent
		seen := map[string]bool{}
		sort.Slice(pairs, func(i, j int) bool { return pairs[i].ModifyIndex < pairs[j].ModifyIndex })
		for _, kv := range pairs {
			seen[kv.Key] = true
			if old, ok := raw[kv.Key]; ok && string(old) == string(kv.Value) {
				continue
			}
			raw[kv.Key] = kv.Value
			var info objdb.ServiceInfo
			if err := json.Unmarshal(kv.Value, &info); err != nil {
				log.WithError(err).WithField("key", kv.Key).Warn("skipping a service instance that does not decode")
				continue
			}
			known[kv.Key] = info
			evs = append(evs, objdb.ServiceEvent{Type: objdb.ServiceAdd, Info: info})
		}
		var gone []string
		for k := range raw {
			if !seen[k] {
				gone = append(gone, k)
			}
		}
		sort.Strings(gone)
		for _, k := range gone {
			if info, ok := known[k]; ok {
				evs = append(evs, objdb.ServiceEvent{Type: objdb.ServiceDel, Info: info})
			}
			delete(raw, k)
			delete(known, k)
		}
		return evs
	}
	initial := diff(pairs)

	ch, err := startPump(c, ctx, initial, func(ctx context.Context) ([]objdb.ServiceEvent, error) {
		pairs, _, err := p.next(ctx)
		if err != nil {
			return nil, err
		}
		return diff(pairs), nil
	})
	if err != nil {
		return nil, fmt.Errorf("watch service %q: %w", name, err)
	}
	return ch, nil
}
