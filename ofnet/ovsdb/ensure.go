package ovsdb

import (
	"context"
	"errors"
	"time"
)

// maxAttempts bounds how often an ensure helper recomputes and resends its
// transaction after losing a race with another client or the connection.
const maxAttempts = 5

// plan computes, from a consistent view of the cache, the operations that
// take the database to the wanted state: none when it is already there.
type plan func(View) ([]Operation, error)

// Ensure runs plan until the cache shows the wanted state: plan is called
// with a consistent view of the cache and returns the operations that are
// still needed (none when the database is already as wanted). The
// operations are sent as one transaction; after a lost race or connection
// the plan is recomputed and resent (a few attempts). When Ensure returns
// nil, plan returns no operations on the cache. plan must not block or call
// the Client. This is how callers build their own idempotent helpers (e.g.
// bonded ports) with the same retry rules as CreatePort.
func (c *Client) Ensure(ctx context.Context, plan func(View) ([]Operation, error)) error {
	return c.ensure(ctx, plan)
}

// ensure runs a plan until the cache shows the wanted state. Because each
// attempt is recomputed from the cache, it is safe to retry after a lost
// connection (the previous attempt may or may not have committed) and
// after a commit-time constraint violation (another client created the
// same name first).
func (c *Client) ensure(ctx context.Context, p plan) error {
	for attempt := 1; ; attempt++ {
		c.cache.mu.RLock()
		ops, err := p(View{tables: c.cache.tables})
		gen := c.cache.gen
		c.cache.mu.RUnlock()
		if err != nil {
			return err
		}
		if len(ops) == 0 {
			return nil
		}
		_, err = c.Transact(ctx, ops...)
		if err == nil {
			break
		}
		if attempt >= maxAttempts || ctx.Err() != nil || !retryable(err) {
			return err
		}
		// Let the cache catch up with what made the attempt fail (the
		// other client's row, or the reconnect's fresh monitor).
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		c.cache.WaitFor(wctx, func(View) bool { return c.cache.gen != gen })
		cancel()
	}
	var err error
	werr := c.cache.WaitFor(ctx, func(v View) bool {
		var ops []Operation
		ops, err = p(v)
		return err != nil || len(ops) == 0
	})
	if werr != nil {
		return werr
	}
	return err
}

func retryable(err error) bool {
	var te *TxnError
	if errors.As(err, &te) {
		return te.Err == "constraint violation" || te.Temporary()
	}
	return errors.Is(err, ErrDisconnected)
}
