package etcd

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/contiv/netplugin/objdb"
)

// Get reads key with a linearizable (quorum) read.
func (c *Client) Get(ctx context.Context, key string) (objdb.KeyValue, error) {
	if err := objdb.CheckKey(key); err != nil {
		return objdb.KeyValue{}, fmt.Errorf("get: %w", err)
	}
	var resp *clientv3.GetResponse
	err := c.do(ctx, "get", key, func(actx context.Context) (err error) {
		resp, err = c.cli.Get(actx, c.full(key))
		return err
	})
	if err != nil {
		return objdb.KeyValue{}, err
	}
	if len(resp.Kvs) == 0 {
		return objdb.KeyValue{}, fmt.Errorf("get %q: %w", key, objdb.ErrNotFound)
	}
	kv := resp.Kvs[0]
	return objdb.KeyValue{Key: key, Value: kv.Value, Version: kv.ModRevision}, nil
}

// Put writes key and returns its new Version (mod revision). WithPrevVersion
// and WithCreateOnly turn it into one transaction whose Else branch reads
// the key, so a conflict reports the current version without another round
// trip. An attempt that timed out or lost its connection may still have
// been applied (or be applied later): when the call then fails, also the
// retry's conflict that attempt may have caused, the error wraps
// objdb.ErrUncertain as well, and the caller resolves it
// (objdb.PutResolved; docs/allocation-integrity.md).
func (c *Client) Put(ctx context.Context, key string, value []byte, opts ...objdb.OpOption) (int64, error) {
	if err := objdb.CheckKey(key); err != nil {
		return 0, fmt.Errorf("put: %w", err)
	}
	o := objdb.ApplyOps(opts)
	if o.PrevVersion < 0 || (o.PrevVersion > 0 && o.CreateOnly) {
		return 0, fmt.Errorf("put %q: %w: previous version %d with create-only %t", key, objdb.ErrInvalid, o.PrevVersion, o.CreateOnly)
	}
	if o.PrevKV != nil {
		return 0, fmt.Errorf("put %q: %w: WithPrevKV is a Delete option", key, objdb.ErrInvalid)
	}
	full := c.full(key)
	if o.PrevVersion == 0 && !o.CreateOnly {
		var resp *clientv3.PutResponse
		uncertain, err := c.doWrite(ctx, "put", key, func(actx context.Context) (err error) {
			resp, err = c.cli.Put(actx, full, string(value))
			return err
		})
		if err != nil {
			return 0, markUncertain(err, uncertain)
		}
		return resp.Header.Revision, nil
	}

	cmp := clientv3.Compare(clientv3.ModRevision(full), "=", o.PrevVersion)
	if o.CreateOnly {
		cmp = clientv3.Compare(clientv3.CreateRevision(full), "=", 0)
	}
	var resp *clientv3.TxnResponse
	uncertain, err := c.doWrite(ctx, "put", key, func(actx context.Context) (err error) {
		resp, err = c.cli.Txn(actx).If(cmp).
			Then(clientv3.OpPut(full, string(value))).
			Else(clientv3.OpGet(full)).
			Commit()
		return err
	})
	if err != nil {
		return 0, markUncertain(err, uncertain)
	}
	if !resp.Succeeded {
		cur := currentVersion(resp)
		if o.CreateOnly {
			err = fmt.Errorf("put %q: %w: key exists (version %d)", key, objdb.ErrConflict, cur)
		} else if cur == 0 {
			err = fmt.Errorf("put %q: %w: key absent, expected version %d", key, objdb.ErrConflict, o.PrevVersion)
		} else {
			err = fmt.Errorf("put %q: %w: version is %d, expected %d", key, objdb.ErrConflict, cur, o.PrevVersion)
		}
		return 0, markUncertain(err, uncertain)
	}
	return resp.Header.Revision, nil
}

// currentVersion reads the mod revision from a failed transaction's Else
// branch (0 when the key is absent).
func currentVersion(resp *clientv3.TxnResponse) int64 {
	if len(resp.Responses) == 0 {
		return 0
	}
	rr := resp.Responses[0].GetResponseRange()
	if rr == nil || len(rr.Kvs) == 0 {
		return 0
	}
	return rr.Kvs[0].ModRevision
}

// Delete removes key. With WithPrevVersion it deletes only that version,
// failing with ErrNotFound (absent) or ErrConflict (other version).
func (c *Client) Delete(ctx context.Context, key string, opts ...objdb.OpOption) error {
	if err := objdb.CheckKey(key); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	o := objdb.ApplyOps(opts)
	if o.PrevVersion < 0 {
		return fmt.Errorf("delete %q: %w: previous version %d", key, objdb.ErrInvalid, o.PrevVersion)
	}
	full := c.full(key)
	var delOpts []clientv3.OpOption
	if o.PrevKV != nil {
		delOpts = append(delOpts, clientv3.WithPrevKV())
	}
	if o.PrevVersion == 0 {
		var resp *clientv3.DeleteResponse
		uncertain, err := c.doWrite(ctx, "delete", key, func(actx context.Context) (err error) {
			resp, err = c.cli.Delete(actx, full, delOpts...)
			return err
		})
		if err != nil {
			return markUncertain(err, uncertain)
		}
		if o.PrevKV != nil {
			*o.PrevKV = removed(key, resp.PrevKvs)
			if o.PrevKV.Version == 0 && uncertain {
				// Nothing left to remove: maybe the earlier attempt did.
				return markUncertain(fmt.Errorf("delete %q: %w", key, objdb.ErrNotFound), true)
			}
		}
		return nil
	}
	var resp *clientv3.TxnResponse
	uncertain, err := c.doWrite(ctx, "delete", key, func(actx context.Context) (err error) {
		resp, err = c.cli.Txn(actx).
			If(clientv3.Compare(clientv3.ModRevision(full), "=", o.PrevVersion)).
			Then(clientv3.OpDelete(full, delOpts...)).
			Else(clientv3.OpGet(full)).
			Commit()
		return err
	})
	if err != nil {
		return markUncertain(err, uncertain)
	}
	if !resp.Succeeded {
		cur := currentVersion(resp)
		if cur == 0 {
			return markUncertain(fmt.Errorf("delete %q: %w", key, objdb.ErrNotFound), uncertain)
		}
		return markUncertain(fmt.Errorf("delete %q: %w: version is %d, expected %d", key, objdb.ErrConflict, cur, o.PrevVersion), uncertain)
	}
	if o.PrevKV != nil {
		*o.PrevKV = removed(key, resp.Responses[0].GetResponseDeleteRange().GetPrevKvs())
	}
	return nil
}

// removed is the key a delete with WithPrevKV removed (Version 0: none).
func removed(key string, prev []*mvccpb.KeyValue) objdb.KeyValue {
	if len(prev) == 0 {
		return objdb.KeyValue{Key: key}
	}
	return objdb.KeyValue{Key: key, Value: prev[0].Value, Version: prev[0].ModRevision}
}

// List returns every key under prefix, sorted by key. "" lists the whole
// root.
func (c *Client) List(ctx context.Context, prefix string) ([]objdb.KeyValue, error) {
	kvs, _, err := c.list(ctx, prefix)
	return kvs, err
}

var _ objdb.VersionLister = (*Client)(nil)

// ListVersion implements objdb.VersionLister: List, and the store revision
// the listing was taken at.
func (c *Client) ListVersion(ctx context.Context, prefix string) ([]objdb.KeyValue, int64, error) {
	return c.list(ctx, prefix)
}

// list also returns the store revision the listing was taken at.
func (c *Client) list(ctx context.Context, prefix string) ([]objdb.KeyValue, int64, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, 0, fmt.Errorf("list: %w", err)
	}
	var resp *clientv3.GetResponse
	err := c.do(ctx, "list", prefix, func(actx context.Context) (err error) {
		resp, err = c.cli.Get(actx, c.full(prefix), clientv3.WithPrefix(),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	out := make([]objdb.KeyValue, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out = append(out, objdb.KeyValue{Key: c.rel(kv.Key), Value: kv.Value, Version: kv.ModRevision})
	}
	return out, resp.Header.Revision, nil
}

var _ objdb.Pager = (*Client)(nil)

// ListPage implements objdb.Pager: one range request with a limit, at
// revision rev when it is not 0. A revision compacted away between pages
// fails the call (etcd's "required revision has been compacted").
func (c *Client) ListPage(ctx context.Context, prefix, after string, limit int, rev int64) ([]objdb.KeyValue, int64, int64, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, 0, 0, fmt.Errorf("list page: %w", err)
	}
	if limit <= 0 {
		return nil, 0, 0, fmt.Errorf("list page: %w: limit %d", objdb.ErrInvalid, limit)
	}
	from := c.full(prefix)
	end := clientv3.GetPrefixRangeEnd(from)
	if after != "" {
		from = c.full(after) + "\x00"
	}
	opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(int64(limit)),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend)}
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	var resp *clientv3.GetResponse
	err := c.do(ctx, "list", prefix, func(actx context.Context) (err error) {
		resp, err = c.cli.Get(actx, from, opts...)
		return err
	})
	if err != nil {
		return nil, 0, 0, err
	}
	out := make([]objdb.KeyValue, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out = append(out, objdb.KeyValue{Key: c.rel(kv.Key), Value: kv.Value, Version: kv.ModRevision})
	}
	at := rev
	if at == 0 {
		at = resp.Header.Revision
	}
	return out, at, resp.Count, nil
}

// currentRevision returns the store's current revision.
func (c *Client) currentRevision(ctx context.Context, prefix string) (int64, error) {
	var rev int64
	err := c.do(ctx, "watch", prefix, func(actx context.Context) error {
		resp, err := c.cli.Get(actx, c.full(prefix), clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return err
		}
		rev = resp.Header.Revision
		return nil
	})
	return rev, err
}

// Watch streams changes under prefix. Without WithStartVersion it starts at
// the store revision current when Watch is called (it reads it first), so
// every change made after Watch returns is delivered. The client library
// resumes the watch from the last delivered revision after a reconnect.
// When the requested history was compacted (or the watch is otherwise
// cancelled by the server) a final event carries Err and the channel closes.
func (c *Client) Watch(ctx context.Context, prefix string, opts ...objdb.WatchOption) (<-chan objdb.Event, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	o := objdb.ApplyWatchOps(opts)
	if o.AfterVersion < 0 {
		return nil, fmt.Errorf("watch %q: %w: start version %d", prefix, objdb.ErrInvalid, o.AfterVersion)
	}
	after := o.AfterVersion
	if after == 0 {
		rev, err := c.currentRevision(ctx, prefix)
		if err != nil {
			return nil, err
		}
		after = rev
	}
	wctx, cancel := c.withClient(ctx)
	out := make(chan objdb.Event, 16)
	err := c.goStart(func() {
		defer cancel()
		defer close(out)
		c.watchLoop(wctx, prefix, after, out)
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch %q: %w", prefix, err)
	}
	return out, nil
}

func (c *Client) watchLoop(ctx context.Context, prefix string, after int64, out chan<- objdb.Event) {
	send := func(ev objdb.Event) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	wch := c.cli.Watch(ctx, c.full(prefix), clientv3.WithPrefix(), clientv3.WithPrevKV(), clientv3.WithRev(after+1))
	for {
		var wr clientv3.WatchResponse
		var ok bool
		select {
		case <-ctx.Done():
			return
		case wr, ok = <-wch:
		}
		if !ok {
			if ctx.Err() == nil {
				send(objdb.Event{Err: fmt.Errorf("watch %q: watch channel closed by the etcd client after version %d: %w", prefix, after, objdb.ErrUnavailable)})
			}
			return
		}
		if err := wr.Err(); err != nil {
			if wr.CompactRevision != 0 {
				err = fmt.Errorf("watch %q: history before version %d was compacted, re-list and watch again: %w", prefix, wr.CompactRevision, err)
			} else {
				err = fmt.Errorf("watch %q after version %d: %w", prefix, after, err)
			}
			c.log.WithError(err).Warn("watch ended")
			send(objdb.Event{Err: err})
			return
		}
		for _, ev := range wr.Events {
			e := objdb.Event{Key: c.rel(ev.Kv.Key), Version: ev.Kv.ModRevision}
			if ev.PrevKv != nil {
				e.PrevValue = ev.PrevKv.Value
			}
			if ev.Type == mvccpb.Event_DELETE {
				e.Type = objdb.EventDelete
			} else {
				e.Type = objdb.EventPut
				e.Value = ev.Kv.Value
				if e.Value == nil {
					e.Value = []byte{}
				}
			}
			if !send(e) {
				return
			}
			after = e.Version
		}
	}
}
