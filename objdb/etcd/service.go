package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/contiv/netplugin/objdb"

	"github.com/contiv/netplugin/utils/ctxutil"
)

// registration is one registered service instance: its key bound to a lease
// that the library's KeepAlive refreshes. The goroutine run by keepAlive
// owns the lease; after it ends (done closed) lease is safe to read.
type registration struct {
	key    string // relative
	value  []byte
	ttl    int64 // seconds
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	lease clientv3.LeaseID
}

func (r *registration) currentLease() clientv3.LeaseID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lease
}

// RegisterService writes the instance with a lease of info.TTL seconds and
// keeps the lease alive until DeregisterService or Close. Registering the
// same instance again writes the new value under a new lease and retires
// the old keep-alive.
func (c *Client) RegisterService(ctx context.Context, info objdb.ServiceInfo) error {
	if err := objdb.CheckServiceInfo(info); err != nil {
		return fmt.Errorf("register service: %w", err)
	}
	key := objdb.ServiceKey(info)
	value, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("register service %q: %w", key, err)
	}
	ttl := int64(objdb.ServiceTTL(info).Seconds())

	c.regMu.Lock()
	defer c.regMu.Unlock()

	// Stop the old keep-alive first, so it cannot write the old value
	// back after the new one. Its lease keeps the key alive meanwhile.
	c.mu.Lock()
	old := c.services[key]
	c.mu.Unlock()
	if old != nil {
		old.cancel()
		<-old.done
	}

	var lease clientv3.LeaseID
	err = c.do(ctx, "register service", key, func(actx context.Context) (err error) {
		lease, err = c.grantAndPut(actx, key, value, ttl)
		return err
	})
	if err != nil {
		if old != nil {
			// Keep the previous registration alive.
			if serr := c.startKeepAlive(old.key, old.value, old.ttl, old.currentLease()); serr != nil {
				c.mu.Lock()
				delete(c.services, key)
				c.mu.Unlock()
			}
		}
		return err
	}
	if err := c.startKeepAlive(key, value, ttl, lease); err != nil {
		return fmt.Errorf("register service %q: %w", key, err)
	}
	if old != nil {
		// The key now belongs to the new lease; revoking the old one only
		// frees it early.
		c.revoke(ctx, key, old.currentLease())
	}
	c.log.WithFields(logrus.Fields{"service": key, "ttl": ttl}).Debug("service registered")
	return nil
}

// startKeepAlive records a registration and starts its keep-alive.
func (c *Client) startKeepAlive(key string, value []byte, ttl int64, lease clientv3.LeaseID) error {
	rctx, cancel := c.withClient(context.Background())
	reg := &registration{key: key, value: value, ttl: ttl, cancel: cancel, done: make(chan struct{}), lease: lease}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		cancel()
		return objdb.ErrClosed
	}
	c.services[key] = reg
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.keepAlive(rctx, reg)
	}()
	return nil
}

// grantAndPut grants a lease and writes key under it.
func (c *Client) grantAndPut(ctx context.Context, key string, value []byte, ttl int64) (clientv3.LeaseID, error) {
	g, err := c.cli.Grant(ctx, ttl)
	if err != nil {
		return 0, fmt.Errorf("grant lease: %w", err)
	}
	if _, err := c.cli.Put(ctx, c.full(key), string(value), clientv3.WithLease(g.ID)); err != nil {
		return 0, err
	}
	return g.ID, nil
}

// revoke ends a lease, best effort (it expires by TTL anyway).
func (c *Client) revoke(ctx context.Context, key string, lease clientv3.LeaseID) {
	rctx, cancel := c.withClient(ctx)
	defer cancel()
	rctx, cancelTO := context.WithTimeout(rctx, c.reqTO)
	defer cancelTO()
	if _, err := c.cli.Revoke(rctx, lease); err != nil {
		c.log.WithError(err).WithField("service", key).Debug("revoke of old service lease failed; it expires by TTL")
	}
}

// keepAlive drains the library's keep-alive channel for the registration's
// lease. If the channel closes while the registration is still wanted, it
// keeps the lease alive again if it still lives, or else (the store was
// unreachable longer than the TTL) grants a new lease and writes the key
// again, retrying with backoff.
func (c *Client) keepAlive(ctx context.Context, reg *registration) {
	defer close(reg.done)
	defer reg.cancel()
	log := c.log.WithField("service", reg.key)
	lease := reg.currentLease()
	bo := ctxutil.NewBackoff(backoffMin, backoffMax)
	for {
		started := time.Now()
		kch, err := c.cli.KeepAlive(ctx, lease)
		if err == nil {
			for range kch {
			}
		}
		if ctx.Err() != nil {
			return
		}
		log.WithError(err).Warn("service keep-alive ended, checking the lease")
		if time.Since(started) > 10*time.Second {
			bo.Reset()
		} else if !ctxutil.Sleep(ctx, bo.NextBackOff()) { // do not spin on a keep-alive that ends at once
			return
		}
		for attempt := 1; ; attempt++ {
			actx, cancel := context.WithTimeout(ctx, c.reqTO)
			// A late keep-alive response also ends the channel while the
			// lease still lives: then only keep it alive again.
			var ttl *clientv3.LeaseTimeToLiveResponse
			ttl, err = c.cli.TimeToLive(actx, lease)
			expired := err == nil && ttl.TTL <= 0
			if errors.Is(err, rpctypes.ErrLeaseNotFound) {
				expired, err = true, nil
			}
			if expired {
				var nl clientv3.LeaseID
				if nl, err = c.grantAndPut(actx, reg.key, reg.value, reg.ttl); err == nil {
					lease = nl
					log.Info("service lease had expired, registered again")
				}
			}
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			log.WithError(err).WithField("attempt", attempt).Warn("service re-registration failed, retrying")
			if !ctxutil.Sleep(ctx, bo.NextBackOff()) {
				return
			}
		}
		reg.mu.Lock()
		reg.lease = lease
		reg.mu.Unlock()
	}
}

// DeregisterService stops the keep-alive, revokes its lease and deletes the
// instance's key (also when this client did not register it).
func (c *Client) DeregisterService(ctx context.Context, info objdb.ServiceInfo) error {
	if err := objdb.CheckServiceInfo(info); err != nil {
		return fmt.Errorf("deregister service: %w", err)
	}
	key := objdb.ServiceKey(info)
	c.regMu.Lock()
	defer c.regMu.Unlock()
	c.mu.Lock()
	reg := c.services[key]
	delete(c.services, key)
	c.mu.Unlock()
	if reg != nil {
		reg.cancel()
		<-reg.done
		lease := reg.currentLease()
		err := c.do(ctx, "deregister service", key, func(actx context.Context) error {
			_, err := c.cli.Revoke(actx, lease)
			if errors.Is(err, rpctypes.ErrLeaseNotFound) {
				return nil // already expired
			}
			return err
		})
		if err != nil {
			c.log.WithError(err).WithField("service", key).Warn("revoke of service lease failed, deleting the key")
		}
	}
	return c.do(ctx, "deregister service", key, func(actx context.Context) error {
		_, err := c.cli.Delete(actx, c.full(key))
		return err
	})
}

// GetService lists the live instances of name. Entries that do not decode
// are logged and skipped.
func (c *Client) GetService(ctx context.Context, name string) ([]objdb.ServiceInfo, error) {
	if name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("get service: %w: service name %q", objdb.ErrInvalid, name)
	}
	kvs, _, err := c.list(ctx, objdb.ServicePrefix(name))
	if err != nil {
		return nil, err
	}
	out := make([]objdb.ServiceInfo, 0, len(kvs))
	for _, kv := range kvs {
		info, err := decodeService(kv.Key, kv.Value)
		if err != nil {
			c.log.WithError(err).Warn("skipping bad service entry")
			continue
		}
		out = append(out, info)
	}
	return out, nil
}

func decodeService(key string, value []byte) (objdb.ServiceInfo, error) {
	var info objdb.ServiceInfo
	if err := json.Unmarshal(value, &info); err != nil {
		return info, fmt.Errorf("decode service %q: %w", key, err)
	}
	return info, nil
}

// serviceFromKey rebuilds what a key alone says about an instance
// ("service/<name>/<addr>:<port>"), for deletes whose value is unknown.
func serviceFromKey(name, key string) objdb.ServiceInfo {
	info := objdb.ServiceInfo{ServiceName: name}
	hp := strings.TrimPrefix(key, objdb.ServicePrefix(name))
	if i := strings.LastIndex(hp, ":"); i >= 0 {
		info.HostAddr = hp[:i]
		info.Port, _ = strconv.Atoi(hp[i+1:])
	} else {
		info.HostAddr = hp
	}
	return info
}

// WatchService sends an Add for every live instance, then Add for every
// write and Del for every delete or expiry, watching from the listing's
// revision so nothing in between is lost. If the watch history is
// compacted it lists again and sends the difference.
func (c *Client) WatchService(ctx context.Context, name string) (<-chan objdb.ServiceEvent, error) {
	if name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("watch service: %w: service name %q", objdb.ErrInvalid, name)
	}
	prefix := objdb.ServicePrefix(name)
	kvs, rev, err := c.list(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("watch service %q: %w", name, err)
	}
	wctx, cancel := c.withClient(ctx)
	out := make(chan objdb.ServiceEvent, 16)
	err = c.goStart(func() {
		defer cancel()
		defer close(out)
		w := &serviceWatch{c: c, name: name, prefix: prefix, out: out, known: map[string]objdb.ServiceInfo{}}
		w.run(wctx, kvs, rev)
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch service %q: %w", name, err)
	}
	return out, nil
}

type serviceWatch struct {
	c      *Client
	name   string
	prefix string
	out    chan<- objdb.ServiceEvent
	known  map[string]objdb.ServiceInfo // by relative key
}

func (w *serviceWatch) send(ctx context.Context, ev objdb.ServiceEvent) bool {
	select {
	case w.out <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

// sync sends the difference between what the watcher knows and a listing.
func (w *serviceWatch) sync(ctx context.Context, kvs []objdb.KeyValue) bool {
	seen := map[string]bool{}
	for _, kv := range kvs {
		seen[kv.Key] = true
		info, err := decodeService(kv.Key, kv.Value)
		if err != nil {
			w.c.log.WithError(err).Warn("skipping bad service entry")
			continue
		}
		if old, ok := w.known[kv.Key]; ok && old == info {
			continue
		}
		w.known[kv.Key] = info
		if !w.send(ctx, objdb.ServiceEvent{Type: objdb.ServiceAdd, Info: info}) {
			return false
		}
	}
	for key, info := range w.known {
		if !seen[key] {
			delete(w.known, key)
			if !w.send(ctx, objdb.ServiceEvent{Type: objdb.ServiceDel, Info: info}) {
				return false
			}
		}
	}
	return true
}

func (w *serviceWatch) run(ctx context.Context, kvs []objdb.KeyValue, rev int64) {
	log := w.c.log.WithField("service", w.name)
	if !w.sync(ctx, kvs) {
		return
	}
	bo := ctxutil.NewBackoff(backoffMin, backoffMax)
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(ctx)
		wch := w.c.cli.Watch(wctx, w.c.full(w.prefix), clientv3.WithPrefix(), clientv3.WithPrevKV(), clientv3.WithRev(rev+1))
		compacted, ok := w.consume(ctx, wch, &rev)
		cancel()
		if !ok || ctx.Err() != nil {
			return
		}
		if !compacted {
			if !ctxutil.Sleep(ctx, bo.NextBackOff()) {
				return
			}
			continue
		}
		log.Warn("service watch history compacted, listing again")
		kvs, lrev, err := w.c.list(ctx, w.prefix)
		if err != nil {
			log.WithError(err).Warn("service re-list failed, retrying")
			if !ctxutil.Sleep(ctx, bo.NextBackOff()) {
				return
			}
			continue
		}
		bo.Reset()
		rev = lrev
		if !w.sync(ctx, kvs) {
			return
		}
	}
}

// consume forwards watch events until the watch ends. It reports whether
// it ended on compaction, and false for ok when ctx ended.
func (w *serviceWatch) consume(ctx context.Context, wch clientv3.WatchChan, rev *int64) (compacted, ok bool) {
	for {
		var wr clientv3.WatchResponse
		var open bool
		select {
		case <-ctx.Done():
			return false, false
		case wr, open = <-wch:
		}
		if !open {
			return false, ctx.Err() == nil
		}
		if err := wr.Err(); err != nil {
			if wr.CompactRevision != 0 {
				return true, true
			}
			w.c.log.WithError(err).WithField("service", w.name).Warn("service watch failed, watching again")
			return false, true
		}
		for _, ev := range wr.Events {
			key := w.c.rel(ev.Kv.Key)
			var sev objdb.ServiceEvent
			if ev.Type == mvccpb.Event_DELETE {
				info, known := w.known[key]
				if !known && ev.PrevKv != nil {
					info, _ = decodeService(key, ev.PrevKv.Value)
				}
				if info.ServiceName == "" {
					info = serviceFromKey(w.name, key)
				}
				delete(w.known, key)
				sev = objdb.ServiceEvent{Type: objdb.ServiceDel, Info: info}
			} else {
				info, err := decodeService(key, ev.Kv.Value)
				if err != nil {
					w.c.log.WithError(err).Warn("skipping bad service entry")
					*rev = ev.Kv.ModRevision
					continue
				}
				w.known[key] = info
				sev = objdb.ServiceEvent{Type: objdb.ServiceAdd, Info: info}
			}
			if !w.send(ctx, sev) {
				return false, false
			}
			*rev = ev.Kv.ModRevision
		}
	}
}
