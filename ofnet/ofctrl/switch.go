package ofctrl

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	of "github.com/contiv/netplugin/ofnet/openflow13"
)

// ErrNotConnected is returned by operations that need a live connection (PacketOut,
// DumpFlows, DumpGroups, Resync, Barrier) while the switch is disconnected.
var ErrNotConnected = errors.New("ofctrl: switch not connected")

// ErrNotRecorded is returned by ModifyFlow for a flow whose identity was never installed.
var ErrNotRecorded = errors.New("ofctrl: flow not recorded")

// Switch is the controller's handle for one datapath ID. It holds the recorded flows and
// groups — the single source of truth for what the switch should contain — across
// disconnects, and the current connection, if any.
//
// Mutations (InstallFlows, ModifyFlow, DeleteFlows, DeleteFlowsByCookie, InstallGroups,
// DeleteGroups) and Resync are serialised per switch: each one runs to completion
// (through its barrier) before the next starts, so the recorded state and the switch
// never see interleaved changes. Reads (Flows, Groups, DumpFlows, DumpGroups) do not
// wait for mutations.
type Switch struct {
	ctrl *Controller
	dpid uint64

	opMu sync.Mutex // serialises mutations and resync

	mu       sync.Mutex // guards everything below
	flows    map[FlowKey]*recFlow
	groups   map[uint32]Group
	meters   map[uint32]Meter
	conn     *conn
	ready    chan struct{} // closed while connected and resynchronised
	attached int           // connections attached so far in this process
	// leftover holds the groups the switch had at the last connect-time resync that
	// are not recorded and were not deleted (a previous owner's, kept by
	// DeferFirstResync), by ID: InstallGroups takes them over without an ADD that
	// OVS would refuse with OFPGMFC_GROUP_EXISTS.
	leftover map[uint32]Group
}

func newSwitch(c *Controller, dpid uint64) *Switch {
	return &Switch{ctrl: c, dpid: dpid, flows: map[FlowKey]*recFlow{},
		groups: map[uint32]Group{}, meters: map[uint32]Meter{}, leftover: map[uint32]Group{},
		ready: make(chan struct{})}
}

// DatapathID returns the switch's datapath ID.
func (s *Switch) DatapathID() uint64 { return s.dpid }

func (s *Switch) String() string { return "switch " + dpidString(s.dpid) }

// attach makes cn the switch's connection, closing an older one (the switch reconnected
// before the old connection was noticed dead).
func (s *Switch) attach(cn *conn) {
	s.mu.Lock()
	old := s.conn
	s.conn = cn
	s.attached++
	clear(s.leftover) // the connect-time resync dumps them again
	s.mu.Unlock()
	if old != nil {
		old.close(errors.New("replaced by a new connection from the same datapath"))
	}
}

// connectedBefore reports whether a connection of this datapath was attached before
// the current one in this process.
func (s *Switch) connectedBefore() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attached > 1
}

// markReady signals WaitConnected waiters, if cn is still the current connection.
func (s *Switch) markReady(cn *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == cn {
		select {
		case <-s.ready:
		default:
			close(s.ready)
		}
	}
}

// detach forgets cn if it is still the current connection and reports whether it was.
func (s *Switch) detach(cn *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != cn {
		return false
	}
	s.conn = nil
	select {
	case <-s.ready:
		s.ready = make(chan struct{})
	default:
	}
	return true
}

func (s *Switch) current() *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil && s.conn.err() != nil {
		return nil
	}
	return s.conn
}

// Connected reports whether the switch has a live connection.
func (s *Switch) Connected() bool { return s.current() != nil }

// WaitConnected blocks until the switch is connected and resynchronised, or ctx ends.
func (s *Switch) WaitConnected(ctx context.Context) error {
	s.mu.Lock()
	ready := s.ready
	s.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: wait for connection: %w", s, ctx.Err())
	}
}

// Flows returns the recorded flows, sorted by table, priority (high first) and match.
func (s *Switch) Flows() []Flow {
	s.mu.Lock()
	out := make([]Flow, 0, len(s.flows))
	keys := make([]FlowKey, 0, len(s.flows))
	for k, r := range s.flows {
		out = append(out, r.flow)
		keys = append(keys, k)
	}
	s.mu.Unlock()
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return keyLess(keys[idx[a]], keys[idx[b]]) })
	sorted := make([]Flow, len(out))
	for i, j := range idx {
		sorted[i] = out[j]
	}
	return sorted
}

func keyLess(a, b FlowKey) bool {
	if a.Table != b.Table {
		return a.Table < b.Table
	}
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	return a.Match < b.Match
}

// Groups returns the recorded groups, sorted by ID.
func (s *Switch) Groups() []Group {
	s.mu.Lock()
	out := make([]Group, 0, len(s.groups))
	for _, g := range s.groups {
		out = append(out, g)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// FlowError reports the flows OVS rejected in one operation.
type FlowError struct {
	Switch uint64
	Op     string
	Failed []FailedFlow
}

// FailedFlow is one rejected flow with the switch's error message.
type FailedFlow struct {
	Flow Flow
	Err  *of.ErrorMsg
}

func (e *FlowError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "switch %s: %s: %d flow(s) rejected", dpidString(e.Switch), e.Op, len(e.Failed))
	for i, f := range e.Failed {
		if i == 3 {
			fmt.Fprintf(&b, "; ... (%d more)", len(e.Failed)-3)
			break
		}
		fmt.Fprintf(&b, "; table %d: %s: %v", f.Flow.Table, f.Flow, f.Err)
	}
	return b.String()
}

// Unwrap returns the first OpenFlow error, so errors.As(err, **openflow13.ErrorMsg) works.
func (e *FlowError) Unwrap() error {
	if len(e.Failed) == 0 {
		return nil
	}
	return e.Failed[0].Err
}

// GroupError reports the groups OVS rejected in one operation.
type GroupError struct {
	Switch uint64
	Op     string
	Group  Group
	Err    *of.ErrorMsg
}

func (e *GroupError) Error() string {
	return fmt.Sprintf("switch %s: %s group %d: %v", dpidString(e.Switch), e.Op, e.Group.ID, e.Err)
}

func (e *GroupError) Unwrap() error { return e.Err }

// InstallFlows adds or replaces flows (OFPFC_ADD: a flow with the same table, priority
// and match is replaced) and records them. On a connected switch every flow mod is
// written in batches, followed by one barrier; if OVS rejects any of them, the ones it
// accepted are rolled back (new flows deleted, replaced flows restored), the record is
// unchanged and a *FlowError lists the rejected flows with OVS's errors: all or nothing.
// On a disconnected switch — or if the connection drops before the barrier reply — the
// flows are recorded and pushed by the Resync that follows the (re)connect; the call
// returns nil. If ctx ends first, the record is unchanged and the switch may keep some
// of the flows until the next Resync. Installing a flow that is already recorded with
// the same content is a no-op on the wire. Safe for concurrent use.
func (s *Switch) InstallFlows(ctx context.Context, flows ...Flow) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()

	type change struct {
		key  FlowKey
		rec  *recFlow
		prev *recFlow // recorded before, nil if new
	}
	changes := make([]change, 0, len(flows))
	seen := make(map[FlowKey]int, len(flows))
	s.mu.Lock()
	for _, f := range flows {
		k := f.Key()
		if strings.HasPrefix(k.Match, "!") {
			s.mu.Unlock()
			return fmt.Errorf("%s: table %d: install flow %s: bad match: %s", s, f.Table, f, k.Match[1:])
		}
		rec := newRecFlow(f)
		if strings.HasPrefix(rec.ins, "!") {
			s.mu.Unlock()
			return fmt.Errorf("%s: table %d: install flow %s: bad instructions: %s", s, f.Table, f, rec.ins[1:])
		}
		if i, dup := seen[k]; dup { // later duplicate in the same call wins
			changes[i].rec = rec
			continue
		}
		prev := s.flows[k]
		if prev != nil && prev.sameContent(f.Cookie, f.Instructions) {
			continue
		}
		seen[k] = len(changes)
		changes = append(changes, change{key: k, rec: rec, prev: prev})
	}
	s.mu.Unlock()
	if len(changes) == 0 {
		return nil
	}
	commit := func() {
		s.mu.Lock()
		for _, c := range changes {
			s.flows[c.key] = c.rec
		}
		s.mu.Unlock()
	}
	cn := s.current()
	if cn == nil {
		commit()
		return nil
	}
	msgs := make([]of.Message, len(changes))
	for i, c := range changes {
		msgs[i] = c.rec.flow.flowMod(of.FlowAdd)
	}
	errs, err := cn.runBatch(ctx, msgs)
	if err != nil {
		if !connLost(ctx, err) {
			return fmt.Errorf("%s: install %d flows: %w", s, len(msgs), err)
		}
		commit() // connection lost: the reconnect's Resync pushes the record
		return nil
	}
	if len(errs) == 0 {
		commit()
		return nil
	}
	fe := &FlowError{Switch: s.dpid, Op: "install flows"}
	var undo []of.Message
	for i, c := range changes {
		if e, bad := errs[i]; bad {
			fe.Failed = append(fe.Failed, FailedFlow{Flow: c.rec.flow, Err: e})
			if c.prev != nil { // a failed ADD may have left the old flow or nothing
				undo = append(undo, c.prev.flow.flowMod(of.FlowAdd))
			}
			continue
		}
		if c.prev != nil {
			undo = append(undo, c.prev.flow.flowMod(of.FlowAdd))
		} else {
			undo = append(undo, c.rec.flow.deleteStrict())
		}
	}
	sort.Slice(fe.Failed, func(i, j int) bool { return keyLess(fe.Failed[i].Flow.Key(), fe.Failed[j].Flow.Key()) })
	if len(undo) > 0 {
		if uerrs, err := cn.runBatch(ctx, undo); err != nil || len(uerrs) > 0 {
			s.ctrl.log.WithField("dpid", dpidString(s.dpid)).WithError(err).
				WithField("errors", len(uerrs)).Warn("ofctrl: rollback of a failed install incomplete; next Resync repairs it")
		}
	}
	return fe
}

// ModifyFlow changes the cookie and instructions of a recorded flow (same table,
// priority and match), keeping its counters when only the instructions change
// (OFPFC_MODIFY_STRICT; a cookie change needs OFPFC_ADD, which resets counters). It
// returns an error wrapping ErrNotRecorded if no flow with that identity is recorded.
// Like InstallFlows, it is all or nothing and records the change when the switch is
// disconnected.
func (s *Switch) ModifyFlow(ctx context.Context, f Flow) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	k := f.Key()
	s.mu.Lock()
	prev := s.flows[k]
	s.mu.Unlock()
	if prev == nil {
		return fmt.Errorf("%s: table %d: modify flow %s: %w", s, f.Table, f, ErrNotRecorded)
	}
	if prev.sameContent(f.Cookie, f.Instructions) {
		return nil
	}
	rec := newRecFlow(f)
	commit := func() {
		s.mu.Lock()
		s.flows[k] = rec
		s.mu.Unlock()
	}
	cn := s.current()
	if cn == nil {
		commit()
		return nil
	}
	cmd := of.FlowModifyStrict
	if f.Cookie != prev.flow.Cookie {
		cmd = of.FlowAdd
	}
	errs, err := cn.runBatch(ctx, []of.Message{f.flowMod(cmd)})
	if err != nil {
		if !connLost(ctx, err) {
			return fmt.Errorf("%s: table %d: modify flow: %w", s, f.Table, err)
		}
		commit()
		return nil
	}
	if e := errs[0]; e != nil {
		return &FlowError{Switch: s.dpid, Op: "modify flow", Failed: []FailedFlow{{Flow: f, Err: e}}}
	}
	commit()
	return nil
}

// DeleteFlows removes flows by identity (table, priority, match — OFPFC_DELETE_STRICT;
// cookie and instructions of the arguments are ignored) from the switch and the record.
// Deleting a flow that is not recorded still sends the strict delete (removing a stray
// flow is harmless). On a disconnected switch the record is updated and the next Resync
// removes the flows. Safe for concurrent use.
func (s *Switch) DeleteFlows(ctx context.Context, flows ...Flow) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	keys := make([]FlowKey, len(flows))
	msgs := make([]of.Message, len(flows))
	for i, f := range flows {
		keys[i] = f.Key()
		msgs[i] = f.deleteStrict()
	}
	commit := func(skip map[int]*of.ErrorMsg) {
		s.mu.Lock()
		for i, k := range keys {
			if _, bad := skip[i]; !bad {
				delete(s.flows, k)
			}
		}
		s.mu.Unlock()
	}
	cn := s.current()
	if cn == nil || len(msgs) == 0 {
		commit(nil)
		return nil
	}
	errs, err := cn.runBatch(ctx, msgs)
	if err != nil {
		if !connLost(ctx, err) {
			return fmt.Errorf("%s: delete %d flows: %w", s, len(msgs), err)
		}
		commit(nil)
		return nil
	}
	commit(errs)
	if len(errs) > 0 {
		fe := &FlowError{Switch: s.dpid, Op: "delete flows"}
		for i, e := range errs {
			fe.Failed = append(fe.Failed, FailedFlow{Flow: flows[i], Err: e})
		}
		return fe
	}
	return nil
}

// DeleteFlowsByCookie removes, in every table, the flows whose cookie matches cookie
// under mask (non-strict OFPFC_DELETE with an empty match), from the switch and from the
// record. Safe for concurrent use.
func (s *Switch) DeleteFlowsByCookie(ctx context.Context, cookie, mask uint64) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	commit := func() {
		s.mu.Lock()
		for k, r := range s.flows {
			if r.flow.Cookie&mask == cookie&mask {
				delete(s.flows, k)
			}
		}
		s.mu.Unlock()
	}
	cn := s.current()
	if cn == nil {
		commit()
		return nil
	}
	fm := of.NewFlowMod(of.OFPTTAll, 0, cookie)
	fm.Command, fm.CookieMask = of.FlowDelete, mask
	errs, err := cn.runBatch(ctx, []of.Message{fm})
	if err != nil {
		if !connLost(ctx, err) {
			return fmt.Errorf("%s: delete flows by cookie %#x/%#x: %w", s, cookie, mask, err)
		}
		commit()
		return nil
	}
	if e := errs[0]; e != nil {
		return fmt.Errorf("%s: delete flows by cookie %#x/%#x: %w", s, cookie, mask, e)
	}
	commit()
	return nil
}

// InstallGroups adds or replaces groups and records them: GROUP_MOD ADD for a group not
// recorded (falling back to MODIFY if the switch already has it), MODIFY for a recorded
// one whose content changed, nothing when unchanged. A group that is not recorded but
// that the switch had at connect (left by a previous owner and kept by
// DeferFirstResync) is taken over: MODIFY if its content differs, nothing otherwise,
// so a restarted owner never sends an ADD that fails with OFPGMFC_GROUP_EXISTS. On a
// disconnected switch the groups
// are recorded and pushed on connect. Groups that OVS rejects are not recorded; the
// first rejection is returned as a *GroupError. Install groups before the flows that
// use them. Safe for concurrent use.
func (s *Switch) InstallGroups(ctx context.Context, groups ...Group) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	var todo []Group
	var cmds []uint16
	s.mu.Lock()
	var adopted []Group
	for _, g := range groups {
		prev, ok := s.groups[g.ID]
		if !ok {
			prev, ok = s.leftover[g.ID]
			if ok && prev.canonical() == g.canonical() {
				adopted = append(adopted, g)
				continue
			}
		}
		switch {
		case !ok:
			cmds = append(cmds, of.GroupAdd)
		case prev.canonical() != g.canonical():
			cmds = append(cmds, of.GroupModify)
		default:
			continue
		}
		todo = append(todo, g)
	}
	s.mu.Unlock()
	record := func(gs ...Group) {
		s.mu.Lock()
		for _, g := range gs {
			s.groups[g.ID] = g
			delete(s.leftover, g.ID)
		}
		s.mu.Unlock()
	}
	record(adopted...)
	cn := s.current()
	if cn == nil {
		record(todo...)
		return nil
	}
	msgs := make([]of.Message, len(todo))
	for i, g := range todo {
		msgs[i] = g.groupMod(cmds[i])
	}
	if len(msgs) == 0 {
		return nil
	}
	errs, err := cn.runBatch(ctx, msgs)
	if err != nil {
		if !connLost(ctx, err) {
			return fmt.Errorf("%s: install %d groups: %w", s, len(msgs), err)
		}
		record(todo...)
		return nil
	}
	var retry []Group
	var first *GroupError
	for i, g := range todo {
		e, bad := errs[i]
		switch {
		case !bad:
			record(g)
		case cmds[i] == of.GroupAdd && e.ErrType == of.ErrTypeGroupModFailed && e.Code == groupExists:
			retry = append(retry, g)
		case first == nil:
			first = &GroupError{Switch: s.dpid, Op: "install", Group: g, Err: e}
		}
	}
	if len(retry) > 0 {
		msgs = msgs[:0]
		for _, g := range retry {
			msgs = append(msgs, g.groupMod(of.GroupModify))
		}
		errs, err := cn.runBatch(ctx, msgs)
		if err != nil {
			if !connLost(ctx, err) {
				return fmt.Errorf("%s: install %d groups: %w", s, len(msgs), err)
			}
			record(retry...)
			return nil
		}
		for i, g := range retry {
			if e, bad := errs[i]; !bad {
				record(g)
			} else if first == nil {
				first = &GroupError{Switch: s.dpid, Op: "install", Group: g, Err: e}
			}
		}
	}
	if first != nil {
		return first
	}
	return nil
}

// groupExists is OFPGMFC_GROUP_EXISTS.
const groupExists = 0

// DeleteGroups removes groups by ID from the switch and the record. Like OVS, which
// removes every flow that uses a deleted group, it also drops those flows from the
// record. Safe for concurrent use.
func (s *Switch) DeleteGroups(ctx context.Context, ids ...uint32) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	commit := func() {
		gone := make(map[uint32]bool, len(ids))
		s.mu.Lock()
		for _, id := range ids {
			delete(s.groups, id)
			delete(s.leftover, id)
			gone[id] = true
		}
		for k, r := range s.flows {
			if usesGroup(r.flow.Instructions, gone) {
				delete(s.flows, k)
			}
		}
		s.mu.Unlock()
	}
	cn := s.current()
	if cn == nil || len(ids) == 0 {
		commit()
		return nil
	}
	msgs := make([]of.Message, len(ids))
	for i, id := range ids {
		msgs[i] = Group{ID: id, Type: of.GroupTypeAll}.groupMod(of.GroupDelete)
	}
	errs, err := cn.runBatch(ctx, msgs)
	if err != nil && !connLost(ctx, err) {
		return fmt.Errorf("%s: delete %d groups: %w", s, len(ids), err)
	}
	commit()
	for i, id := range ids {
		if e, bad := errs[i]; bad {
			return &GroupError{Switch: s.dpid, Op: "delete", Group: Group{ID: id}, Err: e}
		}
	}
	return nil
}

// PacketOut sends a PACKET_OUT (no barrier); po.Xid is overwritten. It needs a live
// connection.
func (s *Switch) PacketOut(ctx context.Context, po *of.PacketOut) error {
	cn := s.current()
	if cn == nil {
		return fmt.Errorf("%s: packet-out: %w", s, ErrNotConnected)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	po.Xid = cn.xid.Add(1)
	return cn.send(po)
}

// Barrier sends a barrier request and waits for the reply.
func (s *Switch) Barrier(ctx context.Context) error {
	cn := s.current()
	if cn == nil {
		return fmt.Errorf("%s: barrier: %w", s, ErrNotConnected)
	}
	return cn.barrier(ctx)
}

// DumpFlows reads every flow of every table from the switch (multipart flow stats,
// all parts).
func (s *Switch) DumpFlows(ctx context.Context) ([]of.FlowStats, error) {
	cn := s.current()
	if cn == nil {
		return nil, fmt.Errorf("%s: dump flows: %w", s, ErrNotConnected)
	}
	return dumpFlows(ctx, cn)
}

func dumpFlows(ctx context.Context, cn *conn) ([]of.FlowStats, error) {
	parts, err := cn.multipart(ctx, of.NewFlowStatsRequest(of.OFPTTAll, 0, 0))
	if err != nil {
		return nil, fmt.Errorf("switch %s: dump flows: %w", dpidString(cn.dpid), err)
	}
	var out []of.FlowStats
	for _, p := range parts {
		if p.MPType != of.MultipartFlow {
			return nil, fmt.Errorf("switch %s: dump flows: reply of multipart type %d", dpidString(cn.dpid), p.MPType)
		}
		out = append(out, p.Flows...)
	}
	return out, nil
}

// DumpGroups reads every group's description from the switch.
func (s *Switch) DumpGroups(ctx context.Context) ([]of.GroupDesc, error) {
	cn := s.current()
	if cn == nil {
		return nil, fmt.Errorf("%s: dump groups: %w", s, ErrNotConnected)
	}
	return dumpGroups(ctx, cn)
}

func dumpGroups(ctx context.Context, cn *conn) ([]of.GroupDesc, error) {
	parts, err := cn.multipart(ctx, &of.MultipartRequest{MPType: of.MultipartGroupDesc})
	if err != nil {
		return nil, fmt.Errorf("switch %s: dump groups: %w", dpidString(cn.dpid), err)
	}
	var out []of.GroupDesc
	for _, p := range parts {
		if p.MPType != of.MultipartGroupDesc {
			return nil, fmt.Errorf("switch %s: dump groups: reply of multipart type %d", dpidString(cn.dpid), p.MPType)
		}
		out = append(out, p.Groups...)
	}
	return out, nil
}

// ResyncResult counts what a Resync changed on the switch.
type ResyncResult struct {
	FlowsAdded, FlowsReplaced, FlowsDeleted    int
	GroupsAdded, GroupsModified, GroupsDeleted int
}

// Changed reports whether the resync had to change anything.
func (r ResyncResult) Changed() bool { return r != ResyncResult{} }

func (r ResyncResult) String() string {
	return fmt.Sprintf("flows +%d ~%d -%d, groups +%d ~%d -%d", r.FlowsAdded, r.FlowsReplaced,
		r.FlowsDeleted, r.GroupsAdded, r.GroupsModified, r.GroupsDeleted)
}

// Resync brings the switch to the recorded state: it dumps the switch's flows and
// groups, deletes (strictly) the flows that are not recorded (except those
// Config.KeepUnrecorded keeps) and the groups that are
// not recorded, adds or modifies the recorded groups that are missing or differ, and
// adds the recorded flows that are missing or whose cookie or instructions differ; all
// in one batch with one barrier. It runs automatically when a switch (re)connects
// (see Config.DeferFirstResync for the exception). Rejections are returned as a
// *FlowError / *GroupError (joined); the record is not changed by Resync.
func (s *Switch) Resync(ctx context.Context) (ResyncResult, error) {
	return s.resync(ctx, true)
}

// resync is Resync; with prune false it only adds and modifies, deleting nothing that
// is on the switch but not recorded.
func (s *Switch) resync(ctx context.Context, prune bool) (ResyncResult, error) {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	var res ResyncResult
	cn := s.current()
	if cn == nil {
		return res, fmt.Errorf("%s: resync: %w", s, ErrNotConnected)
	}
	// Meters first: flows that use a meter are refused while it is missing.
	if err := s.resyncMeters(ctx, cn); err != nil {
		return res, err
	}
	dumped, err := dumpFlows(ctx, cn)
	if err != nil {
		return res, fmt.Errorf("resync: %w", err)
	}
	dgroups, err := dumpGroups(ctx, cn)
	if err != nil {
		return res, fmt.Errorf("resync: %w", err)
	}

	s.mu.Lock()
	want := make(map[FlowKey]*recFlow, len(s.flows))
	for k, r := range s.flows {
		want[k] = r
	}
	wantGroups := make(map[uint32]Group, len(s.groups))
	for id, g := range s.groups {
		wantGroups[id] = g
	}
	s.mu.Unlock()

	var msgs []of.Message
	var what []any // Flow or Group per message, for error reports
	replaced := map[FlowKey]bool{}
	for i := range dumped {
		f := FlowFromStats(&dumped[i])
		k := f.Key()
		r, ok := want[k]
		switch {
		case !ok && (!prune || (s.ctrl.cfg.KeepUnrecorded != nil && s.ctrl.cfg.KeepUnrecorded(f))):
		case !ok:
			msgs, what = append(msgs, f.deleteStrict()), append(what, f)
			res.FlowsDeleted++
		case r.sameContent(f.Cookie, f.Instructions):
			delete(want, k)
		default:
			// Present with other content: re-added below (ADD replaces it).
			replaced[k] = true
		}
	}
	have := make(map[uint32]bool, len(dgroups))
	leftover := map[uint32]Group{}
	for i := range dgroups {
		g := GroupFromDesc(&dgroups[i])
		have[g.ID] = true
		w, ok := wantGroups[g.ID]
		switch {
		case !ok && !prune:
			leftover[g.ID] = g
		case !ok:
			msgs, what = append(msgs, g.groupMod(of.GroupDelete)), append(what, g)
			res.GroupsDeleted++
		case w.canonical() != g.canonical():
			msgs, what = append(msgs, w.groupMod(of.GroupModify)), append(what, w)
			res.GroupsModified++
		}
	}
	for id, g := range wantGroups {
		if !have[id] {
			msgs, what = append(msgs, g.groupMod(of.GroupAdd)), append(what, g)
			res.GroupsAdded++
		}
	}
	s.mu.Lock()
	s.leftover = leftover
	s.mu.Unlock()
	adds := make([]FlowKey, 0, len(want))
	for k := range want {
		adds = append(adds, k)
	}
	sort.Slice(adds, func(i, j int) bool { return keyLess(adds[i], adds[j]) })
	for _, k := range adds {
		r := want[k]
		msgs, what = append(msgs, r.flow.flowMod(of.FlowAdd)), append(what, r.flow)
		if replaced[k] {
			res.FlowsReplaced++
		} else {
			res.FlowsAdded++
		}
	}
	if len(msgs) == 0 {
		return res, nil
	}
	errs, err := cn.runBatch(ctx, msgs)
	if err != nil {
		return res, fmt.Errorf("%s: resync: %w", s, err)
	}
	if len(errs) == 0 {
		return res, nil
	}
	fe := &FlowError{Switch: s.dpid, Op: "resync"}
	var all []error
	idx := make([]int, 0, len(errs))
	for i := range errs {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		switch w := what[i].(type) {
		case Flow:
			fe.Failed = append(fe.Failed, FailedFlow{Flow: w, Err: errs[i]})
		case Group:
			all = append(all, &GroupError{Switch: s.dpid, Op: "resync", Group: w, Err: errs[i]})
		}
	}
	if len(fe.Failed) > 0 {
		all = append(all, fe)
	}
	return res, errors.Join(all...)
}

// usesGroup reports whether the instructions have a group action for one of ids.
func usesGroup(ins []of.Instruction, ids map[uint32]bool) bool {
	for _, in := range ins {
		var acts []of.Action
		switch i := in.(type) {
		case of.InstrApplyActions:
			acts = i.Actions
		case of.InstrWriteActions:
			acts = i.Actions
		}
		for _, a := range acts {
			if g, ok := a.(of.ActionGroup); ok && ids[g.GroupID] {
				return true
			}
		}
	}
	return false
}
