package ovsdb

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
)

// Cache is the client's in-memory copy of the monitored tables. It is
// filled from the monitor's initial reply and kept current by "update"
// notifications; after a reconnect it is replaced as a whole by the new
// monitor's initial reply, so it equals the server's state again. While
// the client is disconnected it keeps the last state it saw.
type Cache struct {
	mu      sync.RWMutex
	tables  map[string]map[UUID]Row
	gen     uint64
	changed chan struct{} // closed and replaced on every change
}

func newCache() *Cache {
	return &Cache{tables: map[string]map[UUID]Row{}, changed: make(chan struct{})}
}

// View is a consistent read-only view of the cache, valid only inside the
// function passed to Cache.View. Rows must not be modified.
type View struct {
	tables map[string]map[UUID]Row
}

// Row returns one row by UUID.
func (v View) Row(table string, id UUID) (Row, bool) {
	r, ok := v.tables[table][id]
	return r, ok
}

// Rows returns a table's rows sorted by UUID.
func (v View) Rows(table string) []Row {
	t := v.tables[table]
	out := make([]Row, 0, len(t))
	for _, r := range t {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UUID() < out[j].UUID() })
	return out
}

// Len returns the number of rows in a table.
func (v View) Len(table string) int { return len(v.tables[table]) }

// FindString returns the first row (in UUID order) whose string column col
// equals value.
func (v View) FindString(table, col, value string) (Row, bool) {
	var best Row
	for _, r := range v.tables[table] {
		if r.String(col) == value && (best == nil || r.UUID() < best.UUID()) {
			best = r
		}
	}
	return best, best != nil
}

// View calls fn with a consistent view of the cache (no update is applied
// while fn runs). fn must not block or call the Client.
func (c *Cache) View(fn func(View)) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	fn(View{tables: c.tables})
}

// Rows returns copies of a table's rows sorted by UUID.
func (c *Cache) Rows(table string) []Row {
	var out []Row
	c.View(func(v View) {
		for _, r := range v.Rows(table) {
			out = append(out, r.Clone())
		}
	})
	return out
}

// Generation counts the changes applied to the cache.
func (c *Cache) Generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// WaitFor blocks until cond is true on the cache (checked now and after
// every change) or ctx ends.
func (c *Cache) WaitFor(ctx context.Context, cond func(View) bool) error {
	for {
		c.mu.RLock()
		ok := cond(View{tables: c.tables})
		changed := c.changed
		c.mu.RUnlock()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// bumpLocked records a change; c.mu must be held for writing.
func (c *Cache) bumpLocked() {
	c.gen++
	close(c.changed)
	c.changed = make(chan struct{})
}

// rowUpdate is one <row-update>: Old and New are nil when absent.
type rowUpdate struct {
	Old, New Row
}

// tableUpdates is <table-updates>: table → row UUID → update.
type tableUpdates map[string]map[UUID]rowUpdate

// decodeTableUpdates decodes <table-updates>, typing rows with schema.
func decodeTableUpdates(schema *Schema, data json.RawMessage) (tableUpdates, error) {
	var raw map[string]map[string]struct {
		Old json.RawMessage `json:"old"`
		New json.RawMessage `json:"new"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%w: table updates: %v", ErrBadValue, err)
	}
	out := make(tableUpdates, len(raw))
	for table, rows := range raw {
		var ts *TableSchema
		if schema != nil {
			ts = schema.Tables[table]
		}
		tu := make(map[UUID]rowUpdate, len(rows))
		for id, ru := range rows {
			if !ValidUUID(id) {
				return nil, fmt.Errorf("%w: table updates: row id %q", ErrBadValue, id)
			}
			var u rowUpdate
			var err error
			if isPresent(ru.Old) {
				if u.Old, err = decodeRow(ts, ru.Old); err != nil {
					return nil, fmt.Errorf("table %s row %s old: %w", table, id, err)
				}
			}
			if isPresent(ru.New) {
				if u.New, err = decodeRow(ts, ru.New); err != nil {
					return nil, fmt.Errorf("table %s row %s new: %w", table, id, err)
				}
				u.New["_uuid"] = UUID(id)
			}
			tu[UUID(id)] = u
		}
		out[table] = tu
	}
	return out, nil
}

func isPresent(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// replace sets the whole cache from a monitor's initial reply.
func (c *Cache) replace(tables []string, initial tableUpdates) {
	fresh := make(map[string]map[UUID]Row, len(tables))
	for _, t := range tables {
		fresh[t] = map[UUID]Row{}
	}
	for t, rows := range initial {
		if fresh[t] == nil {
			fresh[t] = map[UUID]Row{}
		}
		for id, u := range rows {
			if u.New != nil {
				fresh[t][id] = u.New
			}
		}
	}
	c.mu.Lock()
	c.tables = fresh
	c.bumpLocked()
	c.mu.Unlock()
}

// apply applies an "update" notification: a row update without "new"
// deletes the row; otherwise "new" is laid over the cached row (RFC 7047
// sends every monitored column in "new", merging also copes with servers
// that send only the changed ones).
func (c *Cache) apply(updates tableUpdates) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, rows := range updates {
		tbl := c.tables[t]
		if tbl == nil {
			tbl = map[UUID]Row{}
			c.tables[t] = tbl
		}
		for id, u := range rows {
			if u.New == nil {
				delete(tbl, id)
				continue
			}
			if old, ok := tbl[id]; ok && u.Old != nil {
				merged := make(Row, len(old))
				for k, v := range old {
					merged[k] = v
				}
				for k, v := range u.New {
					merged[k] = v
				}
				tbl[id] = merged
				continue
			}
			tbl[id] = u.New
		}
	}
	c.bumpLocked()
}
