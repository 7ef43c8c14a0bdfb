package consul

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/consul/api"
)

// maxSessionTTL is consul's upper bound of a session TTL.
const maxSessionTTL = 24 * time.Hour

// sessionTTL is the TTL to ask consul for so that a holder that stops
// renewing loses its keys within ttl: consul invalidates a session up to
// 2×TTL after its last renewal, so ask for ttl/2. It is raised to the
// agent's session_ttl_min once an agent has refused a smaller value.
func (c *Client) sessionTTL(ttl time.Duration) time.Duration {
	want := (ttl / 2).Round(time.Millisecond)
	if want < time.Millisecond {
		want = time.Millisecond
	}
	if m := time.Duration(c.ttlMin.Load()); m > 0 && want < m {
		want = m
	}
	if want > maxSessionTTL {
		want = maxSessionTTL
	}
	return want
}

// session is one consul session this client created.
type session struct {
	id  string
	ttl time.Duration // as granted; RenewPeriodic takes it as a string
}

// createSession creates a session named name (behaviour delete, lock-delay
// lockDelay, no health checks) whose keys vanish within ttl of the last
// renewal (see sessionTTL). Consul answers a TTL below its session_ttl_min
// with a server error that cannot be told from others, so the agent's
// minimum is read first (once per client) and the TTL raised to it, with a
// warning.
func (c *Client) createSession(ctx context.Context, name string, ttl time.Duration) (session, error) {
	if c.ttlMin.Load() == 0 {
		m, err := c.agentTTLMin(ctx)
		if err != nil {
			c.log.WithError(err).Warnf("cannot read the agent's session_ttl_min: assuming consul's default %v", consulDefaultTTLMin)
			m = consulDefaultTTLMin
		}
		c.ttlMin.Store(int64(m))
	}
	st := c.sessionTTL(ttl)
	if st > ttl/2 && !c.ttlWarned.Swap(true) {
		c.log.Warnf("consul session_ttl_min %v is above half the TTL %v: sessions get TTL %v, so a dead holder's locks "+
			"and services take up to %v to expire (start the agent with session_ttl_min = \"1s\" for faster expiry)",
			time.Duration(c.ttlMin.Load()), ttl, st, 2*st)
	}
	var id string
	err := c.retry(ctx, fmt.Sprintf("create session %q", name), func(ctx context.Context) error {
		var err error
		id, _, err = c.api.Session().CreateNoChecks(&api.SessionEntry{
			Name:      name,
			Behavior:  api.SessionBehaviorDelete,
			LockDelay: lockDelay,
			TTL:       st.String(),
		}, wopts(ctx))
		return err
	})
	if err != nil {
		return session{}, err
	}
	return session{id: id, ttl: st}, nil
}

// agentTTLMin reads the agent's session_ttl_min from /v1/agent/self
// (needs agent:read when ACLs are on).
func (c *Client) agentTTLMin(ctx context.Context) (time.Duration, error) {
	var self struct {
		DebugConfig struct {
			SessionTTLMin any
		}
	}
	err := c.retry(ctx, "read agent configuration", func(ctx context.Context) error {
		_, err := c.api.Raw().Query("/v1/agent/self", &self, qopts(ctx))
		return err
	})
	if err != nil {
		return 0, err
	}
	switch v := self.DebugConfig.SessionTTLMin.(type) {
	case string:
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			return d, nil
		}
	case float64:
		if v > 0 {
			return time.Duration(v), nil
		}
	}
	return 0, fmt.Errorf("agent reports no usable session_ttl_min (%v)", self.DebugConfig.SessionTTLMin)
}

// renew keeps the session alive with the library's RenewPeriodic until ctx
// ends (then it returns ctx's error and leaves the session to expire) or
// the session is gone (then it returns why).
func (c *Client) renew(ctx context.Context, s session) error {
	err := c.api.Session().RenewPeriodic(s.ttl.String(), s.id, wopts(ctx), nil)
	if err == nil {
		err = api.ErrSessionExpired
	}
	return err
}

// destroySession destroys s, bounded by RequestTimeout; failures are
// logged (the session then expires by TTL).
func (c *Client) destroySession(ctx context.Context, s session) {
	if s.id == "" {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	if _, err := c.api.Session().Destroy(s.id, wopts(rctx)); err != nil {
		c.log.WithError(err).WithField("session", s.id).Debug("destroy consul session (it will expire by TTL)")
	}
}

// cleanupCtx is a context for cleanup work that must run even though the
// context that stopped the work has ended.
func cleanupCtx(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(parent), d)
}
