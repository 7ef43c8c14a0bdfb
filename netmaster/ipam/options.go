package ipam

import "time"

// Defaults of the options.
const (
	// DefaultKeyPrefix is where pools live, relative to the store root:
	// "<prefix><poolID>/v4/..." and "<prefix><poolID>/v6/...".
	DefaultKeyPrefix = "state/ipam/"
	// DefaultCommitTimeout bounds one store round of a batch of requests.
	DefaultCommitTimeout = 30 * time.Second
	// DefaultReserveIdle is how long an unused IPv4 reserve is kept
	// (v4reserve.go).
	DefaultReserveIdle = 200 * time.Millisecond
)

type options struct {
	prefix        string
	commitTimeout time.Duration
	reserveIdle   time.Duration
}

// Option configures an allocator.
type Option func(*options)

// WithKeyPrefix stores pools under prefix (relative to the store root;
// DefaultKeyPrefix when not given). It must end in "/".
func WithKeyPrefix(prefix string) Option { return func(o *options) { o.prefix = prefix } }

// WithCommitTimeout bounds each store round of the IPv4 batch committer
// (DefaultCommitTimeout when not given).
func WithCommitTimeout(d time.Duration) Option { return func(o *options) { o.commitTimeout = d } }

// WithReserveIdle sets how long an unused IPv4 reserve is kept before it
// goes back to the store (DefaultReserveIdle when not given).
func WithReserveIdle(d time.Duration) Option { return func(o *options) { o.reserveIdle = d } }

func applyOptions(opts []Option) options {
	o := options{prefix: DefaultKeyPrefix, commitTimeout: DefaultCommitTimeout, reserveIdle: DefaultReserveIdle}
	for _, f := range opts {
		f(&o)
	}
	if o.prefix == "" {
		o.prefix = DefaultKeyPrefix
	}
	if o.prefix[len(o.prefix)-1] != '/' {
		o.prefix += "/"
	}
	if o.commitTimeout <= 0 {
		o.commitTimeout = DefaultCommitTimeout
	}
	if o.reserveIdle <= 0 {
		o.reserveIdle = DefaultReserveIdle
	}
	return o
}

type poolOptions struct {
	gateway string
}

// PoolOption configures a pool at creation.
type PoolOption func(*poolOptions)

// WithGateway reserves the gateway address in the new pool, so it is never
// handed out. It must be inside the subnet; a gateway outside the pool's
// range is accepted and simply never allocatable.
func WithGateway(ip string) PoolOption { return func(o *poolOptions) { o.gateway = ip } }

func applyPoolOptions(opts []PoolOption) poolOptions {
	var o poolOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}
