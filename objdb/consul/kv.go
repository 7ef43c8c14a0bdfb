package consul

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/hashicorp/consul/api"

	"github.com/contiv/netplugin/objdb"
)

// Get reads one key.
func (c *Client) Get(ctx context.Context, key string) (objdb.KeyValue, error) {
	if err := c.checkOpen(); err != nil {
		return objdb.KeyValue{}, fmt.Errorf("get %q: %w", key, err)
	}
	if err := objdb.CheckKey(key); err != nil {
		return objdb.KeyValue{}, fmt.Errorf("get: %w", err)
	}
	var pair *api.KVPair
	err := c.retry(ctx, fmt.Sprintf("get %q", key), func(ctx context.Context) error {
		p, _, err := c.api.KV().Get(c.full(key), qopts(ctx))
		pair = p
		return err
	})
	if err != nil {
		return objdb.KeyValue{}, err
	}
	if pair == nil {
		return objdb.KeyValue{}, fmt.Errorf("get %q: %w", key, objdb.ErrNotFound)
	}
	return c.keyValue(pair), nil
}

func (c *Client) keyValue(p *api.KVPair) objdb.KeyValue {
	return objdb.KeyValue{Key: c.rel(p.Key), Value: p.Value, Version: int64(p.ModifyIndex)}
}

// txnResponse is the body of /v1/txn, on success and on a rolled-back
// transaction (HTTP 409).
type txnResponse struct {
	Results []struct{ KV *api.KVPair }
	Errors  []struct {
		OpIndex int
		What    string
	}
}

// txn runs KV operations atomically. ok is false when consul rolled the
// transaction back (a check or CAS failed).
//
// An attempt that failed after it may have reached consul (a transport
// error, a timeout, a 5xx) may have been applied: then a failed call, or a
// rolled-back retry, reports uncertain; the caller wraps
// objdb.ErrUncertain into its error (docs/allocation-integrity.md).
func (c *Client) txn(ctx context.Context, what string, ops api.TxnOps) (ok bool, resp txnResponse, uncertain bool, err error) {
	err = c.retry(ctx, what, func(ctx context.Context) error {
		resp = txnResponse{}
		// Raw().Write reports every non-200 reply as a typed StatusError,
		// so server errors can be told from a rolled-back transaction.
		_, err := c.api.Raw().Write("/v1/txn", ops, &resp, wopts(ctx))
		if err != nil && (transient(err) || errors.Is(err, context.Canceled) || ctx.Err() != nil) {
			uncertain = true
		}
		var se api.StatusError
		if errors.As(err, &se) && se.Code == http.StatusConflict {
			resp = txnResponse{}
			if jerr := json.Unmarshal([]byte(se.Body), &resp); jerr != nil {
				return fmt.Errorf("decode rolled-back transaction: %w", jerr)
			}
			ok = false
			return nil
		}
		ok = err == nil
		return err
	})
	return ok, resp, uncertain, markUncertain(err, uncertain)
}

// markUncertain adds objdb.ErrUncertain to err when an attempt may have
// been applied.
func markUncertain(err error, uncertain bool) error {
	if err == nil || !uncertain || errors.Is(err, objdb.ErrUncertain) {
		return err
	}
	return fmt.Errorf("%w (%w)", err, objdb.ErrUncertain)
}

// Put writes key and returns its new Version (ModifyIndex). It is one
// consul transaction ("set", or "cas" for WithPrevVersion / WithCreateOnly,
// the latter with index 0), so the version returned is exactly the one
// written, even when other clients write the key right after.
func (c *Client) Put(ctx context.Context, key string, value []byte, opts ...objdb.OpOption) (int64, error) {
	if err := c.checkOpen(); err != nil {
		return 0, fmt.Errorf("put %q: %w", key, err)
	}
	if err := objdb.CheckKey(key); err != nil {
		return 0, fmt.Errorf("put: %w", err)
	}
	o := objdb.ApplyOps(opts)
	if o.PrevVersion < 0 {
		return 0, fmt.Errorf("put %q: %w: negative version %d", key, objdb.ErrInvalid, o.PrevVersion)
	}
	if o.PrevKV != nil {
		return 0, fmt.Errorf("put %q: %w: WithPrevKV is a Delete option", key, objdb.ErrInvalid)
	}
	op := &api.KVTxnOp{Verb: api.KVSet, Key: c.full(key), Value: value}
	switch {
	case o.PrevVersion > 0:
		op.Verb, op.Index = api.KVCAS, uint64(o.PrevVersion)
	case o.CreateOnly:
		op.Verb, op.Index = api.KVCAS, 0
	}
	if value == nil {
		op.Value = []byte{}
	}
	ok, resp, uncertain, err := c.txn(ctx, fmt.Sprintf("put %q", key), api.TxnOps{{KV: op}})
	if err != nil {
		return 0, err
	}
	if !ok {
		if op.Verb == api.KVCAS {
			if o.CreateOnly && o.PrevVersion == 0 {
				return 0, markUncertain(fmt.Errorf("put %q: key exists: %w", key, objdb.ErrConflict), uncertain)
			}
			return 0, markUncertain(fmt.Errorf("put %q: version %d is not current: %w", key, o.PrevVersion, objdb.ErrConflict), uncertain)
		}
		return 0, fmt.Errorf("put %q: consul refused the write: %s", key, txnErrors(resp))
	}
	if len(resp.Results) != 1 || resp.Results[0].KV == nil {
		return 0, fmt.Errorf("put %q: consul transaction returned no result", key)
	}
	return int64(resp.Results[0].KV.ModifyIndex), nil
}

func txnErrors(r txnResponse) string {
	var s []string
	for _, e := range r.Errors {
		s = append(s, fmt.Sprintf("op %d: %s", e.OpIndex, e.What))
	}
	return strings.Join(s, "; ")
}

// Delete removes key. With WithPrevVersion it removes it only at that
// version: ErrNotFound when the key is absent, ErrConflict when it changed.
func (c *Client) Delete(ctx context.Context, key string, opts ...objdb.OpOption) error {
	if err := c.checkOpen(); err != nil {
		return fmt.Errorf("delete %q: %w", key, err)
	}
	if err := objdb.CheckKey(key); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	o := objdb.ApplyOps(opts)
	what := fmt.Sprintf("delete %q", key)
	if o.PrevKV != nil {
		return c.deleteReturning(ctx, what, key, o)
	}
	if o.PrevVersion <= 0 {
		return c.retry(ctx, what, func(ctx context.Context) error {
			_, err := c.api.KV().Delete(c.full(key), wopts(ctx))
			return err
		})
	}
	// Consul's delete-cas succeeds on an absent key, so check the index
	// and delete in one transaction instead.
	ok, _, uncertain, err := c.txn(ctx, what, api.TxnOps{
		{KV: &api.KVTxnOp{Verb: api.KVCheckIndex, Key: c.full(key), Index: uint64(o.PrevVersion)}},
		{KV: &api.KVTxnOp{Verb: api.KVDelete, Key: c.full(key)}},
	})
	if err != nil {
		return err
	}
	if ok {
		return nil
	}
	if _, err := c.Get(ctx, key); errors.Is(err, objdb.ErrNotFound) {
		return markUncertain(fmt.Errorf("delete %q at version %d: %w", key, o.PrevVersion, objdb.ErrNotFound), uncertain)
	}
	return markUncertain(fmt.Errorf("delete %q: version %d is not current: %w", key, o.PrevVersion, objdb.ErrConflict), uncertain)
}

// deleteReturning is Delete with WithPrevKV: one transaction (checks the
// version when set,) reads the key and deletes it. When its first
// operation fails the key was absent (or, with a version, had changed).
func (c *Client) deleteReturning(ctx context.Context, what, key string, o objdb.Op) error {
	var ops api.TxnOps
	if o.PrevVersion > 0 {
		ops = append(ops, &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVCheckIndex, Key: c.full(key), Index: uint64(o.PrevVersion)}})
	}
	ops = append(ops,
		&api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVGet, Key: c.full(key)}},
		&api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVDelete, Key: c.full(key)}})
	ok, resp, uncertain, err := c.txn(ctx, what, ops)
	if err != nil {
		return err
	}
	if !ok {
		if len(resp.Errors) == 0 || resp.Errors[0].OpIndex != 0 {
			return fmt.Errorf("%s: consul refused the delete: %s", what, txnErrors(resp))
		}
		if o.PrevVersion <= 0 {
			*o.PrevKV = objdb.KeyValue{Key: key}
			if uncertain {
				// Nothing left to remove: maybe the earlier attempt did.
				return markUncertain(fmt.Errorf("delete %q: %w", key, objdb.ErrNotFound), true)
			}
			return nil
		}
		if _, err := c.Get(ctx, key); errors.Is(err, objdb.ErrNotFound) {
			return markUncertain(fmt.Errorf("delete %q at version %d: %w", key, o.PrevVersion, objdb.ErrNotFound), uncertain)
		}
		return markUncertain(fmt.Errorf("delete %q: version %d is not current: %w", key, o.PrevVersion, objdb.ErrConflict), uncertain)
	}
	got := len(ops) - 2 // the get's result
	if len(resp.Results) <= got || resp.Results[got].KV == nil {
		return fmt.Errorf("%s: consul transaction returned no value", what)
	}
	*o.PrevKV = c.keyValue(resp.Results[got].KV)
	return nil
}

// List returns every key under prefix, sorted by key. "" lists the whole
// root.
func (c *Client) List(ctx context.Context, prefix string) ([]objdb.KeyValue, error) {
	kvs, _, err := c.ListVersion(ctx, prefix)
	return kvs, err
}

var _ objdb.VersionLister = (*Client)(nil)

// ListVersion implements objdb.VersionLister: List, and the query's index
// (consul's X-Consul-Index of the prefix), never below the ModifyIndex of
// a listed key.
func (c *Client) ListVersion(ctx context.Context, prefix string) ([]objdb.KeyValue, int64, error) {
	if err := c.checkOpen(); err != nil {
		return nil, 0, fmt.Errorf("list %q: %w", prefix, err)
	}
	if err := checkPrefix(prefix); err != nil {
		return nil, 0, fmt.Errorf("list: %w", err)
	}
	var pairs api.KVPairs
	var index uint64
	err := c.retry(ctx, fmt.Sprintf("list %q", prefix), func(ctx context.Context) error {
		p, meta, err := c.api.KV().List(c.full(prefix), qopts(ctx))
		pairs = p
		if meta != nil {
			index = meta.LastIndex
		}
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	out := make([]objdb.KeyValue, 0, len(pairs))
	ver := int64(index)
	for _, p := range pairs {
		kv := c.keyValue(p)
		ver = max(ver, kv.Version)
		out = append(out, kv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, ver, nil
}

// checkPrefix accepts "" (everything) and any valid key, with or without a
// trailing "/".
func checkPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return objdb.CheckKey(prefix)
}
