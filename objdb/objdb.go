// Package objdb is the one client of the cluster store (etcd v3 or consul).
//
// Every key handed to this API is relative to the store root (by default
// "/contiv.io", consul "contiv.io"): Get(ctx, "state/nets/n1.default") reads
// "/contiv.io/state/nets/n1.default". A backend built with another root (each
// test gets its own) gives two clusters, or two tests, separate key spaces on
// one store, locks and services included.
//
// The core KV is small on purpose; locks and the service registry are the two
// further capabilities every backend has. Multi-key transactions (Txner,
// txn.go), paged and versioned listing (Pager, VersionLister) are optional
// interfaces both backends implement and wrappers forward. Backends live in objdb/etcd and
// objdb/consul; objdb/dial picks one from the daemons' endpoint flags.
package objdb

import (
	"context"
	"errors"
	"time"
)

// DefaultRoot is the key prefix of the original's layout (docs/daemons.md §2.1).
const DefaultRoot = "/contiv.io"

// Sentinel errors. Callers test them with errors.Is; backends wrap them with
// the key or object at fault.
var (
	// ErrNotFound: the key does not exist. Its text keeps the original's
	// "key not found" substring.
	ErrNotFound = errors.New("objdb: key not found")
	// ErrConflict: a compare-and-swap precondition did not hold.
	ErrConflict = errors.New("objdb: compare-and-swap conflict")
	// ErrUnavailable: the store could not be reached within the retry budget.
	ErrUnavailable = errors.New("objdb: store unavailable")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("objdb: client closed")
	// ErrAuth: the store refused this client's credentials (a client
	// certificate it does not trust, a server certificate the client does
	// not trust, a wrong user, password or ACL token, or one without the
	// permission asked for). Retrying does not help; the daemons stop at
	// start with the message (docs/security.md, "The store").
	ErrAuth = errors.New("objdb: store refused the credentials")
	// ErrInvalid: bad input (malformed endpoint URL, empty key, ...).
	ErrInvalid = errors.New("objdb: invalid argument")
	// ErrUncertain: a Put or Delete failed, but an earlier attempt of the
	// same call was sent and then timed out or lost its connection, so it
	// may have been applied (or may still be). It comes together with the
	// final error: ErrConflict when a retried compare-and-swap found the
	// key changed, possibly by that attempt; ErrNotFound when a retried
	// delete found nothing, possibly removed by it; ErrUnavailable or a
	// context error otherwise. A caller must resolve the outcome (PutResolved
	// does for puts) before it re-applies a change or hands out what the
	// write took; see docs/allocation-integrity.md.
	ErrUncertain = errors.New("objdb: outcome unknown, an earlier attempt may have been applied")
)

// KeyValue is one stored key. Version is the backend's modification index
// (etcd mod revision, consul ModifyIndex): it changes on every write of the
// key and is what compare-and-swap compares.
type KeyValue struct {
	Key     string // relative to the root
	Value   []byte
	Version int64
}

// KV is the core key-value API. Every method takes ctx first and honours its
// deadline; transient store errors are retried with backoff inside the
// backend, so an error returned here is final for this call. A failed Put
// or Delete whose earlier attempt may have been applied says so by
// wrapping ErrUncertain (see PutResolved).
type KV interface {
	// Get returns the key or an error wrapping ErrNotFound.
	Get(ctx context.Context, key string) (KeyValue, error)
	// Put writes the value and returns its new Version. With WithPrevVersion
	// it is a compare-and-swap (ErrConflict when the key's version differs);
	// WithCreateOnly writes only if the key is absent (ErrConflict if not).
	Put(ctx context.Context, key string, value []byte, opts ...OpOption) (int64, error)
	// Delete removes the key. Deleting an absent key is not an error unless
	// WithPrevVersion is given (then ErrNotFound or ErrConflict).
	// WithPrevKV returns the removed value, atomically with the removal.
	Delete(ctx context.Context, key string, opts ...OpOption) error
	// List returns every key under prefix (recursively), sorted by key.
	// A missing prefix is an empty list, not an error.
	List(ctx context.Context, prefix string) ([]KeyValue, error)
	// Watch streams changes under prefix, in store order, until ctx ends.
	// Without WithStartVersion it starts at "now"; with it, every change
	// after that version is delivered first, so List-then-Watch from the
	// list's version loses nothing. Reconnects resume from the last delivered
	// version: no event is lost or repeated. The channel is closed when ctx
	// ends or after an event with Err set (e.g. history compacted: re-list).
	Watch(ctx context.Context, prefix string, opts ...WatchOption) (<-chan Event, error)
}

// EventType says what happened to a key.
type EventType int

const (
	EventPut    EventType = iota // created or modified
	EventDelete                  // deleted or expired
)

func (t EventType) String() string {
	switch t {
	case EventPut:
		return "put"
	case EventDelete:
		return "delete"
	}
	return "unknown"
}

// Event is one change seen by Watch.
type Event struct {
	Type      EventType
	Key       string // relative to the root
	Value     []byte // new value; nil on delete
	PrevValue []byte // value before the change, when the store knows it
	Version   int64  // store version of this change (resume point)
	Err       error  // set on the last event of a failed watch
}

// Store is a connected backend: the KV plus leader locks and the service
// registry.
type Store interface {
	KV
	Locker
	ServiceRegistry
	// Root is the absolute key prefix this client works under.
	Root() string
	// Close stops keep-alives and background loops and closes the
	// connection. Services still registered are left to expire by TTL, as
	// if the process had died; call DeregisterService first to remove them.
	Close() error
}

// OpOption modifies a Put or Delete.
type OpOption func(*Op)

// Op is the set of options of one Put or Delete (read by backends).
type Op struct {
	PrevVersion int64     // >0: compare-and-swap against this version
	CreateOnly  bool      // write only if absent
	PrevKV      *KeyValue // Delete only: receives the removed key
}

// WithPrevVersion makes the operation a compare-and-swap on the key's
// current Version.
func WithPrevVersion(v int64) OpOption { return func(o *Op) { o.PrevVersion = v } }

// WithPrevKV makes Delete store in dst the key as it was when it removed
// it, in the same atomic step; dst.Version is 0 when there was nothing to
// remove. Of several concurrent deletes of a key exactly one receives its
// value. Put refuses the option (ErrInvalid).
func WithPrevKV(dst *KeyValue) OpOption { return func(o *Op) { o.PrevKV = dst } }

// WithCreateOnly makes Put succeed only if the key does not exist.
func WithCreateOnly() OpOption { return func(o *Op) { o.CreateOnly = true } }

// ApplyOps folds options into an Op.
func ApplyOps(opts []OpOption) Op {
	var o Op
	for _, f := range opts {
		f(&o)
	}
	return o
}

// WatchOption modifies a Watch.
type WatchOption func(*WatchOp)

// WatchOp is the set of options of one Watch (read by backends).
type WatchOp struct {
	AfterVersion int64 // >0: deliver every change with Version > AfterVersion
}

// WithStartVersion starts the watch just after version v (typically the
// highest Version returned by a preceding List, or the last event seen).
func WithStartVersion(v int64) WatchOption { return func(o *WatchOp) { o.AfterVersion = v } }

// ApplyWatchOps folds options into a WatchOp.
func ApplyWatchOps(opts []WatchOption) WatchOp {
	var o WatchOp
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Update is a compare-and-swap retry loop: it reads key, calls fn with the
// current value (exists=false when absent) and writes fn's result only if
// the key did not change in between, retrying on conflict. fn must be pure:
// it may run several times. It returns the version written.
func Update(ctx context.Context, kv KV, key string, fn func(cur []byte, exists bool) ([]byte, error)) (int64, error) {
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		kvp, err := kv.Get(ctx, key)
		exists := err == nil
		if err != nil && !errors.Is(err, ErrNotFound) {
			return 0, err
		}
		next, err := fn(kvp.Value, exists)
		if err != nil {
			return 0, err
		}
		var opt OpOption
		if exists {
			opt = WithPrevVersion(kvp.Version)
		} else {
			opt = WithCreateOnly()
		}
		v, err := kv.Put(ctx, key, next, opt)
		if errors.Is(err, ErrConflict) {
			continue
		}
		return v, err
	}
}

// Locker creates leader locks.
type Locker interface {
	// NewLock returns a lock on "lock/<name>" that holderID will hold (its
	// value while held). ttl is how long the lock outlives a holder that
	// died without releasing it.
	NewLock(name, holderID string, ttl time.Duration) (Lock, error)
}

// LockEventType numbering follows the original (docs/daemons.md §2.3).
type LockEventType int

const (
	LockAcquired LockEventType = iota
	LockReleased
	LockAcquireTimeout
	LockAcquireError
	LockRefreshError
	LockLost
)

func (t LockEventType) String() string {
	switch t {
	case LockAcquired:
		return "acquired"
	case LockReleased:
		return "released"
	case LockAcquireTimeout:
		return "acquire-timeout"
	case LockAcquireError:
		return "acquire-error"
	case LockRefreshError:
		return "refresh-error"
	case LockLost:
		return "lost"
	}
	return "unknown"
}

// LockEvent is delivered on Lock.Events.
type LockEvent struct {
	Type LockEventType
	Err  error
}

// Lock is a TTL-bound leader lock. Acquire campaigns in the background and
// keeps campaigning after a loss, so a node can lead again later; events
// report each transition. The Events channel is closed when the campaign
// stops (Release, or ctx of Acquire ended).
type Lock interface {
	// Acquire starts campaigning in the background. It returns at once.
	// Calling it twice is an error.
	Acquire(ctx context.Context) error
	// Events delivers Acquired / Lost / ... transitions in order.
	Events() <-chan LockEvent
	// IsAcquired reports whether this holder holds the lock now.
	IsAcquired() bool
	// Holder returns the current holder's ID ("" when nobody holds it).
	Holder(ctx context.Context) (string, error)
	// Release resigns (if held), stops campaigning and waits for the
	// background work to end. A second Release is a no-op.
	Release(ctx context.Context) error
}

// ServiceInfo is one registered service instance. No JSON tags: the original
// stores Go field names (docs/daemons.md §2.4).
type ServiceInfo struct {
	ServiceName string
	Role        string
	Version     string
	TTL         int // seconds
	HostAddr    string
	Port        int
	Hostname    string
}

// ServiceEventType numbering follows the original.
type ServiceEventType int

const (
	ServiceAdd ServiceEventType = iota
	ServiceDel
	ServiceError
)

func (t ServiceEventType) String() string {
	switch t {
	case ServiceAdd:
		return "add"
	case ServiceDel:
		return "del"
	case ServiceError:
		return "error"
	}
	return "unknown"
}

// ServiceEvent is delivered by WatchService.
type ServiceEvent struct {
	Type ServiceEventType
	Info ServiceInfo
	Err  error
}

// ServiceRegistry registers TTL-bound service instances under
// "service/<name>/<HostAddr>:<Port>".
type ServiceRegistry interface {
	// RegisterService writes the instance and keeps it alive (library
	// keep-alive, TTL = info.TTL seconds, 10 when zero) until
	// DeregisterService or Close. Registering the same name/addr/port again
	// replaces the value (e.g. a new Role).
	RegisterService(ctx context.Context, info ServiceInfo) error
	// DeregisterService stops the keep-alive and deletes the instance.
	DeregisterService(ctx context.Context, info ServiceInfo) error
	// GetService lists the live instances of a service (empty if none).
	GetService(ctx context.Context, name string) ([]ServiceInfo, error)
	// WatchService first sends an Add for every live instance, then Add on
	// each new or re-registered instance and Del (carrying the last known
	// ServiceInfo) when one is deregistered or expires. The channel is
	// closed when ctx ends.
	WatchService(ctx context.Context, name string) (<-chan ServiceEvent, error)
}

// ServiceKey is the relative key of a service instance.
func ServiceKey(info ServiceInfo) string {
	return ServicePrefix(info.ServiceName) + info.HostAddr + ":" + itoa(info.Port)
}

// ServicePrefix is the relative key prefix of a service's instances.
func ServicePrefix(name string) string { return "service/" + name + "/" }

// LockKey is the relative key of a lock.
func LockKey(name string) string { return "lock/" + name }

// DefaultServiceTTL applies when ServiceInfo.TTL is zero.
const DefaultServiceTTL = 10 * time.Second

// ServiceTTL is the TTL of info as a duration.
func ServiceTTL(info ServiceInfo) time.Duration {
	if info.TTL <= 0 {
		return DefaultServiceTTL
	}
	return time.Duration(info.TTL) * time.Second
}
