package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/objdb"
)

// StatusKey is the marker of a migration in the target store, relative to
// the root. While it says in progress the netmaster refuses to start
// (docs/upgrade.md).
const StatusKey = "migrate/status"

// Marker states.
const (
	StateInProgress = "in-progress"
	StateDone       = "done"
)

// ErrTarget: the target store is not one this run may write to as asked.
var ErrTarget = errors.New("migrate: target refused")

// Status is the value of StatusKey.
type Status struct {
	State    string    `json:"state"`
	Digest   string    `json:"digest"`
	Source   string    `json:"source"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	Unmapped []Record  `json:"unmapped,omitempty"`
}

// ReadStatus returns the target's marker, nil when there is none.
func ReadStatus(ctx context.Context, kv objdb.KV) (*Status, int64, error) {
	cur, err := kv.Get(ctx, StatusKey)
	if errors.Is(err, objdb.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", StatusKey, err)
	}
	var s Status
	if err := json.Unmarshal(cur.Value, &s); err != nil {
		return nil, 0, fmt.Errorf("decode %s: %w", StatusKey, err)
	}
	return &s, cur.Version, nil
}

// Options of Apply.
type Options struct {
	// Source names the source in the marker.
	Source string
	// DryRun checks everything and writes nothing.
	DryRun bool
	// Merge allows a non-empty target: keys the plan writes must be absent
	// or hold the same value; any conflict stops the run before it writes.
	Merge bool
	// AllowUnmapped carries a plan with unmapped keys over (they are
	// listed in the marker).
	AllowUnmapped bool
	// Workers bounds concurrent writes (default 16).
	Workers int
}

// Result is what Apply did or, on a dry run, would do.
type Result struct {
	// AlreadyDone: the target's marker says this plan was applied; nothing
	// was checked or written.
	AlreadyDone bool
	// Resumed: a run cut short was continued.
	Resumed bool
	// ToWrite are the keys written (would be written on a dry run); Equal
	// the keys found holding the planned value already.
	ToWrite []string
	Equal   int
	// PoolsToWrite are the IPv4 pools restored (or to restore).
	PoolsToWrite []string
	// Conflicts: target keys holding another value.
	Conflicts []Record
	// Written counts the writes done.
	Written int
}

// Apply writes the plan to the target (see the package comment). Every
// check runs before the first write; a failure after it leaves the marker
// in progress and the same run can be repeated to finish.
func Apply(ctx context.Context, kv objdb.KV, p *Plan, o Options) (Result, error) {
	var res Result
	if err := p.Err(o.AllowUnmapped); err != nil {
		return res, err
	}
	if o.Workers <= 0 {
		o.Workers = 16
	}
	digest := p.Digest()
	st, stVer, err := ReadStatus(ctx, kv)
	if err != nil {
		return res, err
	}
	if st != nil {
		if st.Digest != digest {
			return res, fmt.Errorf("%w: the target holds a migration (%s, %s) of another source state (digest %.12s, this run %.12s): migrate into an empty store", ErrTarget, st.State, st.Source, st.Digest, digest)
		}
		if st.State == StateDone {
			res.AlreadyDone = true
			return res, nil
		}
		res.Resumed = true
	}
	cur, err := kv.List(ctx, "")
	if err != nil {
		return res, fmt.Errorf("list target: %w", err)
	}
	have := make(map[string][]byte, len(cur))
	var foreign []string
	for _, c := range cur {
		if strings.HasPrefix(c.Key, "migrate/") {
			continue
		}
		have[c.Key] = c.Value
		foreign = append(foreign, c.Key)
	}
	if len(foreign) > 0 && st == nil && !o.Merge {
		return res, fmt.Errorf("%w: the target is not empty (%d keys, first %q): use an empty store, or --merge to add to it where no key conflicts", ErrTarget, len(foreign), foreign[0])
	}
	var writes []objdb.KeyValue
	for _, w := range p.KVs {
		old, ok := have[w.Key]
		switch {
		case !ok:
			writes = append(writes, w)
			res.ToWrite = append(res.ToWrite, w.Key)
		case sameValue(old, w.Value):
			res.Equal++
		default:
			res.Conflicts = append(res.Conflicts, Record{Key: w.Key, Reason: fmt.Sprintf("target holds %s, source maps to %s", snippet(old), snippet(w.Value))})
		}
	}
	v4 := ipam.NewV4(kv)
	defer v4.Close()
	var pools []Pool4
	for _, pl := range p.Pools {
		changed, err := v4.Restore(ctx, pl.ID, pl.Def, pl.Taken, ipam.RestoreCheckOnly())
		switch {
		case errors.Is(err, ipam.ErrRestoreConflict):
			res.Conflicts = append(res.Conflicts, Record{Key: ipam.DefaultKeyPrefix + pl.ID + "/v4/", Reason: err.Error()})
		case err != nil:
			return res, err
		case changed:
			pools = append(pools, pl)
			res.PoolsToWrite = append(res.PoolsToWrite, pl.ID)
		default:
			res.Equal++
		}
	}
	if len(res.Conflicts) > 0 {
		return res, fmt.Errorf("%w: %d keys hold other values (first %s: %s); nothing was written", ErrTarget, len(res.Conflicts), res.Conflicts[0].Key, res.Conflicts[0].Reason)
	}
	if o.DryRun {
		return res, nil
	}

	// From here on the target changes.
	mark := Status{State: StateInProgress, Digest: digest, Source: o.Source, Started: time.Now().UTC(), Unmapped: p.Unmapped}
	if st != nil {
		mark.Started = st.Started
	}
	ver, err := putStatus(ctx, kv, mark, stVer)
	if err != nil {
		return res, err
	}
	stopped := func(err error) error {
		return fmt.Errorf("migration stopped after %d of %d writes: %w; %s still says %s: run the same command again to finish (the netmaster refuses to start until then)",
			res.Written, len(writes)+len(pools), err, StatusKey, StateInProgress)
	}
	var written atomic.Int64
	if err := writeAll(ctx, kv, writes, o.Workers, &written); err != nil {
		res.Written = int(written.Load())
		return res, stopped(err)
	}
	res.Written = int(written.Load())
	for _, pl := range pools {
		if _, err := v4.Restore(ctx, pl.ID, pl.Def, pl.Taken); err != nil {
			return res, stopped(err)
		}
		res.Written++
	}
	mark.State, mark.Finished = StateDone, time.Now().UTC()
	if _, err := putStatus(ctx, kv, mark, ver); err != nil {
		return res, stopped(err)
	}
	return res, nil
}

func putStatus(ctx context.Context, kv objdb.KV, s Status, ver int64) (int64, error) {
	val, err := json.Marshal(s)
	if err != nil {
		return 0, err
	}
	opt := objdb.WithCreateOnly()
	if ver != 0 {
		opt = objdb.WithPrevVersion(ver)
	}
	v, err := kv.Put(ctx, StatusKey, val, opt)
	if errors.Is(err, objdb.ErrConflict) {
		return 0, fmt.Errorf("%w: %s changed under this run: another migration is running", ErrTarget, StatusKey)
	}
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", StatusKey, err)
	}
	return v, nil
}

// writeAll writes every key create-only with a few workers. A key that
// appeared meanwhile with the same value is accepted.
func writeAll(ctx context.Context, kv objdb.KV, writes []objdb.KeyValue, workers int, n *atomic.Int64) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan objdb.KeyValue)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	fail := func(err error) { once.Do(func() { first = err; cancel() }) }
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range ch {
				_, err := objdb.PutResolved(ctx, kv, w.Key, w.Value, objdb.WithCreateOnly())
				if errors.Is(err, objdb.ErrConflict) {
					if got, gerr := kv.Get(ctx, w.Key); gerr == nil && sameValue(got.Value, w.Value) {
						err = nil
					}
				}
				if err != nil {
					fail(fmt.Errorf("write %s: %w", w.Key, err))
					continue
				}
				n.Add(1)
			}
		}()
	}
feed:
	for _, w := range writes {
		select {
		case ch <- w:
		case <-ctx.Done():
			break feed
		}
	}
	close(ch)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// sameValue: equal bytes, or equal JSON.
func sameValue(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
