package ofctrl

import (
	"context"
	"fmt"
	"sort"

	of "github.com/contiv/netplugin/ofnet/openflow13"
)

// Meter is a rate limit that flows reference with a meter instruction: one drop band
// of RateKbps kbit/s with a burst of BurstKb kbit (0: the switch's default).
type Meter struct {
	ID       uint32
	RateKbps uint32
	BurstKb  uint32
}

func (m Meter) meterMod(cmd uint16) *of.MeterMod {
	mm := &of.MeterMod{Command: cmd, MeterID: m.ID}
	if cmd == of.MeterDelete {
		return mm
	}
	mm.Flags = of.MeterFlagKbps
	if m.BurstKb > 0 {
		mm.Flags |= of.MeterFlagBurst
	}
	mm.Bands = []of.MeterBand{{Rate: m.RateKbps, BurstSize: m.BurstKb}}
	return mm
}

// MeterError reports a meter OVS rejected.
type MeterError struct {
	Switch uint64
	Op     string
	Meter  Meter
	Err    *of.ErrorMsg
}

func (e *MeterError) Error() string {
	return fmt.Sprintf("switch %s: %s meter %d: %v", dpidString(e.Switch), e.Op, e.Meter.ID, e.Err)
}

func (e *MeterError) Unwrap() error { return e.Err }

// meterExists is OFPMMFC_METER_EXISTS.
const meterExists = 1

// Meters returns the recorded meters, sorted by ID.
func (s *Switch) Meters() []Meter {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Meter, 0, len(s.meters))
	for _, m := range s.meters {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// InstallMeters adds or replaces meters and records them (ADD, or MODIFY when the
// switch has the meter already; nothing for a recorded, unchanged meter). On a
// disconnected switch they are recorded and pushed on connect, before the flows.
// Install meters before the flows that use them. Safe for concurrent use.
func (s *Switch) InstallMeters(ctx context.Context, meters ...Meter) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	var todo []Meter
	s.mu.Lock()
	for _, m := range meters {
		if prev, ok := s.meters[m.ID]; !ok || prev != m {
			todo = append(todo, m)
		}
	}
	s.mu.Unlock()
	if len(todo) == 0 {
		return nil
	}
	record := func(ms ...Meter) {
		s.mu.Lock()
		for _, m := range ms {
			s.meters[m.ID] = m
		}
		s.mu.Unlock()
	}
	cn := s.current()
	if cn == nil {
		record(todo...)
		return nil
	}
	failed, err := pushMeters(ctx, cn, todo)
	if err != nil {
		if !connLost(ctx, err) {
			return fmt.Errorf("%s: install %d meters: %w", s, len(todo), err)
		}
		record(todo...)
		return nil
	}
	for i, m := range todo {
		if e, bad := failed[i]; bad {
			return &MeterError{Switch: s.dpid, Op: "install", Meter: m, Err: e}
		}
		record(m)
	}
	return nil
}

// pushMeters sends ADD for each meter and MODIFY for those the switch already has; it
// returns the rejections by index.
func pushMeters(ctx context.Context, cn *conn, ms []Meter) (map[int]*of.ErrorMsg, error) {
	msgs := make([]of.Message, len(ms))
	for i, m := range ms {
		msgs[i] = m.meterMod(of.MeterAdd)
	}
	errs, err := cn.runBatch(ctx, msgs)
	if err != nil {
		return nil, err
	}
	var retry []int
	for i, e := range errs {
		if e.ErrType == of.ErrTypeMeterModFailed && e.Code == meterExists {
			retry = append(retry, i)
		}
	}
	if len(retry) == 0 {
		return errs, nil
	}
	msgs = msgs[:0]
	for _, i := range retry {
		msgs = append(msgs, ms[i].meterMod(of.MeterModify))
		delete(errs, i)
	}
	again, err := cn.runBatch(ctx, msgs)
	if err != nil {
		return nil, err
	}
	for j, e := range again {
		errs[retry[j]] = e
	}
	return errs, nil
}

// DeleteMeters removes meters by ID from the switch and the record. OVS also removes
// the flows that use a deleted meter: delete those flows first. Safe for concurrent
// use.
func (s *Switch) DeleteMeters(ctx context.Context, ids ...uint32) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	commit := func() {
		s.mu.Lock()
		for _, id := range ids {
			delete(s.meters, id)
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
		msgs[i] = Meter{ID: id}.meterMod(of.MeterDelete)
	}
	errs, err := cn.runBatch(ctx, msgs)
	if err != nil && !connLost(ctx, err) {
		return fmt.Errorf("%s: delete %d meters: %w", s, len(ids), err)
	}
	commit()
	for i, id := range ids {
		if e, bad := errs[i]; bad {
			return &MeterError{Switch: s.dpid, Op: "delete", Meter: Meter{ID: id}, Err: e}
		}
	}
	return nil
}

// resyncMeters pushes every recorded meter (ADD or MODIFY), before the flows are
// resynchronised. Meters on the switch that are not recorded are left alone: a
// restarted ovs-vswitchd has none, and a leftover costs nothing.
func (s *Switch) resyncMeters(ctx context.Context, cn *conn) error {
	s.mu.Lock()
	ms := make([]Meter, 0, len(s.meters))
	for _, m := range s.meters {
		ms = append(ms, m)
	}
	s.mu.Unlock()
	if len(ms) == 0 {
		return nil
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
	errs, err := pushMeters(ctx, cn, ms)
	if err != nil {
		return fmt.Errorf("%s: resync meters: %w", s, err)
	}
	for i, m := range ms {
		if e, bad := errs[i]; bad {
			return &MeterError{Switch: s.dpid, Op: "resync", Meter: m, Err: e}
		}
	}
	return nil
}
