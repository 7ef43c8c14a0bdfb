package contivmodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/objdb"
)

// ModelDBPrefix is the store directory of the model objects, relative to
// the objdb root: obj/modeldb/<type>/<key> (docs/daemons.md §2.5).
const ModelDBPrefix = "obj/modeldb/"

// StoreKey is the objdb key of the object of type typ with key key.
func StoreKey(typ, key string) string { return ModelDBPrefix + typ + "/" + key }

// DefaultCommitTimeout bounds the store writes of one transaction. Commits
// do not follow the request's cancellation, so a client that hangs up
// cannot leave a half-written operation behind.
const DefaultCommitTimeout = 30 * time.Second

// Registry is the model: the registered kinds, an in-memory cache of every
// object (filled by Load) and the store it persists to. It is a plain
// value; build one per netmaster (or per test) with NewRegistry, register
// the kinds (RegisterAll), Load, then serve (NewRouter).
//
// Writes are serialised by one lock: a transaction (an HTTP create, update
// or delete with its callbacks, or Registry.Update) sees a stable model and
// is committed to the store as a whole. Reads (list, get, inspect) do not
// wait for running transactions; they see committed state.
type Registry struct {
	kv            objdb.KV
	log           *logrus.Entry
	commitTimeout time.Duration
	maxBody       int64
	classify      func(error) int

	opMu sync.Mutex // held by the one running write transaction, and Load

	mu       sync.RWMutex // guards the fields below
	entries  []entry      // registration order
	byName   map[string]entry
	byPlural map[string]entry
	byGoType map[reflect.Type]entry
	items    map[string]map[string][]byte // type -> key -> canonical JSON
}

// Option configures a Registry.
type Option func(*Registry)

// WithLogger sets the logger (default: the logrus standard logger).
func WithLogger(l *logrus.Entry) Option { return func(r *Registry) { r.log = l } }

// WithCommitTimeout sets the bound on one transaction's store writes
// (DefaultCommitTimeout when zero).
func WithCommitTimeout(d time.Duration) Option { return func(r *Registry) { r.commitTimeout = d } }

// WithMaxBodyBytes bounds a request body (MaxBodyBytes when zero).
func WithMaxBodyBytes(n int64) Option { return func(r *Registry) { r.maxBody = n } }

// WithStatus adds a classification of errors into HTTP statuses, asked
// before the built-in one of Status (but never overriding a server fault):
// it returns 0 when it has no opinion. The netmaster classifies the
// sentinels of its allocators with it.
func WithStatus(fn func(error) int) Option { return func(r *Registry) { r.classify = fn } }

// MaxBodyBytes is the registry's bound on a request body.
func (r *Registry) MaxBodyBytes() int64 { return r.maxBody }

// Status is the HTTP status the registry answers err with: 500 for a
// server fault, else the WithStatus classification, else Status(err).
func (r *Registry) Status(err error) int {
	if err != nil && !ServerFault(err) && r.classify != nil {
		if s := r.classify(err); s != 0 {
			return s
		}
	}
	return Status(err)
}

// NewRegistry returns an empty registry persisting to kv.
func NewRegistry(kv objdb.KV, opts ...Option) *Registry {
	r := &Registry{
		kv:       kv,
		byName:   map[string]entry{},
		byPlural: map[string]entry{},
		byGoType: map[reflect.Type]entry{},
		items:    map[string]map[string][]byte{},
	}
	for _, o := range opts {
		o(r)
	}
	if r.log == nil {
		r.log = logrus.NewEntry(logrus.StandardLogger())
	}
	if r.commitTimeout <= 0 {
		r.commitTimeout = DefaultCommitTimeout
	}
	if r.maxBody <= 0 {
		r.maxBody = MaxBodyBytes
	}
	r.log = r.log.WithField("component", "contivmodel")
	return r
}

// entry is the type-erased view of a collection the registry and the HTTP
// layer work with.
type entry interface {
	schema() *schema
	load(ctx context.Context, kv objdb.KV, log *logrus.Entry) (map[string][]byte, error)
	httpUpsert(ctx context.Context, key string, body []byte) (any, error)
	httpDelete(ctx context.Context, key string) error
	httpInspect(ctx context.Context, key string) (any, error)
}

// collection is the generic collection of one kind.
type collection[T any] struct {
	r      *Registry
	s      *schema
	cb     Callbacks[T] // nil: no controller
	newObj func() *T
}

// Register adds kind k with its callbacks (nil: no controller, create and
// update answer "Invalid object type"). Register all kinds before Load and
// before serving.
func Register[T any](r *Registry, k *Kind[T], cb Callbacks[T]) error {
	s, err := k.compile()
	if err != nil {
		return fmt.Errorf("register kind: %w", err)
	}
	c := &collection[T]{r: r, s: s, newObj: k.New}
	if c.newObj == nil {
		c.newObj = func() *T { return new(T) }
	}
	if cb != nil && !isNilValue(cb) {
		c.cb = cb
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.byName[s.name]; dup {
		return fmt.Errorf("register kind %q: already registered", s.name)
	}
	if _, dup := r.byPlural[s.plural]; dup {
		return fmt.Errorf("register kind %q: plural %q already registered", s.name, s.plural)
	}
	if _, dup := r.byGoType[s.goType]; dup {
		return fmt.Errorf("register kind %q: Go type %v already registered", s.name, s.goType)
	}
	r.entries = append(r.entries, c)
	r.byName[s.name] = c
	r.byPlural[s.plural] = c
	r.byGoType[s.goType] = c
	if !s.inspectOnly {
		r.items[s.name] = map[string][]byte{}
	}
	return nil
}

func isNilValue(v any) bool {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Interface, reflect.Chan:
		return rv.IsNil()
	}
	return false
}

// Types returns the registered type names in registration order.
func (r *Registry) Types() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, len(r.entries))
	for i, e := range r.entries {
		names[i] = e.schema().name
	}
	return names
}

// Load replaces the cache with every object found in the store. Call it at
// start and whenever this netmaster becomes leader (another leader may have
// changed the store meanwhile). Values that do not decode are logged and
// skipped.
func (r *Registry) Load(ctx context.Context) error {
	if inTx(ctx, r) {
		return ErrNestedTx
	}
	r.opMu.Lock()
	defer r.opMu.Unlock()
	r.mu.RLock()
	entries := append([]entry(nil), r.entries...)
	r.mu.RUnlock()
	fresh := map[string]map[string][]byte{}
	for _, e := range entries {
		s := e.schema()
		if s.inspectOnly {
			continue
		}
		items, err := e.load(ctx, r.kv, r.log)
		if err != nil {
			return fmt.Errorf("load %s objects: %w", s.name, err)
		}
		fresh[s.name] = items
	}
	r.mu.Lock()
	r.items = fresh
	r.mu.Unlock()
	return nil
}

func (c *collection[T]) schema() *schema { return c.s }

func (c *collection[T]) load(ctx context.Context, kv objdb.KV, log *logrus.Entry) (map[string][]byte, error) {
	prefix := StoreKey(c.s.name, "")
	kvs, err := kv.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	items := make(map[string][]byte, len(kvs))
	for _, p := range kvs {
		key := strings.TrimPrefix(p.Key, prefix)
		if key == "" || strings.Contains(key, "/") {
			log.WithField("storeKey", p.Key).Error("skipping model object with a malformed key")
			continue
		}
		obj := c.newObj()
		if err := json.Unmarshal(p.Value, obj); err != nil {
			log.WithError(err).WithField("storeKey", p.Key).Error("skipping model object that does not decode")
			continue
		}
		c.s.setKey(reflect.ValueOf(obj).Elem(), key)
		raw, err := json.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("encode %s %q: %w", c.s.name, key, err)
		}
		items[key] = raw
	}
	return items, nil
}

// lookup returns the collection of Go type T.
func lookup[T any](r *Registry) (*collection[T], error) {
	r.mu.RLock()
	e, ok := r.byGoType[reflect.TypeFor[T]()]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("contivmodel: type %v is not registered", reflect.TypeFor[T]())
	}
	return e.(*collection[T]), nil
}

// cached returns the committed canonical JSON of an object.
func (r *Registry) cached(typ, key string) ([]byte, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	raw, ok := r.items[typ][key]
	return raw, ok
}

// cachedKeys returns the committed keys of a type.
func (r *Registry) cachedKeys(typ string) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	keys := make([]string, 0, len(r.items[typ]))
	for k := range r.items[typ] {
		keys = append(keys, k)
	}
	return keys
}

// listRaw returns the committed objects of a type sorted by key.
func (r *Registry) listRaw(typ string) []json.RawMessage {
	r.mu.RLock()
	defer r.mu.RUnlock()
	m := r.items[typ]
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]json.RawMessage, 0, len(keys))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

// Upsert runs the create-or-update pipeline of docs/rest-api.md §1.9 for obj (the
// netmaster uses it at start-up for global and the default tenant): the
// key is taken from obj.Key (or built from the key fields when empty),
// then the object is validated (defaults applied to obj) and the type's
// Create or Update callback runs in a transaction. It returns the object
// as a REST create/update would answer it.
func Upsert[T any](ctx context.Context, r *Registry, obj *T) (*T, error) {
	c, err := lookup[T](r)
	if err != nil {
		return nil, err
	}
	v := reflect.ValueOf(obj).Elem()
	if c.s.key(v) == "" {
		c.s.setKey(v, c.s.compositeKey(v))
	}
	c.s.clearLinks(v)
	return c.upsert(ctx, obj)
}

// Remove runs the delete pipeline (callbacks included) for key.
func Remove[T any](ctx context.Context, r *Registry, key string) error {
	c, err := lookup[T](r)
	if err != nil {
		return err
	}
	return r.Update(ctx, func(ctx context.Context, tx *Tx) error {
		return c.removeIn(ctx, tx, key)
	})
}

// Read returns a copy of the committed object of type T with key key, or
// an error wrapping ErrNotFound ("<type> not found").
func Read[T any](r *Registry, key string) (*T, error) {
	return Get[T](r.view(), key)
}

// ReadAll returns copies of the committed objects of type T, sorted by key.
func ReadAll[T any](r *Registry) ([]*T, error) {
	return List[T](r.view())
}

// upsert validates obj (key already set) and runs the pipeline.
func (c *collection[T]) upsert(ctx context.Context, obj *T) (*T, error) {
	key := c.s.key(reflect.ValueOf(obj).Elem())
	if c.s.inspectOnly {
		return nil, fmt.Errorf("upsert %s %q: %w: inspect-only type", c.s.name, key, ErrInvalid)
	}
	if err := c.s.validate(reflect.ValueOf(obj).Elem()); err != nil {
		return nil, fmt.Errorf("validate %s %q: %w", c.s.name, key, err)
	}
	if c.cb == nil {
		return nil, fmt.Errorf("%s %q: %w", c.s.name, key, noController())
	}
	var out *T
	err := c.r.Update(ctx, func(ctx context.Context, tx *Tx) error {
		var err error
		out, err = c.upsertIn(ctx, tx, obj)
		return err
	})
	return out, err
}

// upsertIn runs create or update for a validated request inside tx.
func (c *collection[T]) upsertIn(ctx context.Context, tx *Tx, req *T) (*T, error) {
	key := c.s.key(reflect.ValueOf(req).Elem())
	stored, err := c.get(tx, key)
	switch {
	case err == nil:
		if err := c.cb.Update(ctx, tx, stored, req); err != nil {
			return nil, fmt.Errorf("update %s %q: %w", c.s.name, key, err)
		}
		c.s.setKey(reflect.ValueOf(stored).Elem(), key)
		if err := c.put(tx, stored); err != nil {
			return nil, err
		}
		return req, nil
	case isNotFound(err):
		if err := c.cb.Create(ctx, tx, req); err != nil {
			return nil, fmt.Errorf("create %s %q: %w", c.s.name, key, err)
		}
		c.s.setKey(reflect.ValueOf(req).Elem(), key)
		if err := c.put(tx, req); err != nil {
			return nil, err
		}
		return req, nil
	default:
		return nil, err
	}
}

// removeIn runs the delete pipeline for key inside tx.
func (c *collection[T]) removeIn(ctx context.Context, tx *Tx, key string) error {
	stored, err := c.get(tx, key)
	if err != nil {
		return err
	}
	if c.cb == nil {
		return fmt.Errorf("delete %s %q: %w", c.s.name, key, noController())
	}
	if err := c.cb.Delete(ctx, tx, stored); err != nil {
		return fmt.Errorf("delete %s %q: %w", c.s.name, key, err)
	}
	return tx.stage(c.s.name, key, nil, true)
}

// RemoveIn runs the delete pipeline of type T (its Delete callback, then
// removal) for key inside tx: for cascades such as a policy delete
// deleting its rules.
func RemoveIn[T any](ctx context.Context, tx *Tx, key string) error {
	c, err := lookup[T](tx.r)
	if err != nil {
		return err
	}
	return c.removeIn(ctx, tx, key)
}

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// get decodes the object with key from tx (staged or committed).
func (c *collection[T]) get(tx *Tx, key string) (*T, error) {
	raw, ok, err := tx.raw(c.s.name, key)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, NotFound(c.s.name)
	}
	obj := c.newObj()
	if err := json.Unmarshal(raw, obj); err != nil {
		return nil, fmt.Errorf("decode %s %q: %w", c.s.name, key, err)
	}
	return obj, nil
}

// put stages obj under its key.
func (c *collection[T]) put(tx *Tx, obj *T) error {
	key := c.s.key(reflect.ValueOf(obj).Elem())
	if c.s.inspectOnly {
		return fmt.Errorf("put %s %q: %w: inspect-only type", c.s.name, key, ErrInvalid)
	}
	if key == "" {
		return fmt.Errorf("put %s: %w: empty key", c.s.name, ErrInvalid)
	}
	if strings.Contains(key, "/") {
		return fmt.Errorf("put %s %q: %w: key contains '/'", c.s.name, key, ErrInvalid)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encode %s %q: %w", c.s.name, key, err)
	}
	return tx.stage(c.s.name, key, raw, false)
}
