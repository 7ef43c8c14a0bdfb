package ofctrl

import (
	"context"
	"fmt"

	of "github.com/contiv/netplugin/ofnet/openflow13"
)

// FlowStats reads the counters of the flows of one table (of.OFPTTAll: every table)
// whose cookie matches cookie under mask.
func (s *Switch) FlowStats(ctx context.Context, table uint8, cookie, mask uint64) ([]of.FlowStats, error) {
	cn := s.current()
	if cn == nil {
		return nil, fmt.Errorf("%s: flow stats: %w", s, ErrNotConnected)
	}
	parts, err := cn.multipart(ctx, of.NewFlowStatsRequest(table, cookie, mask))
	if err != nil {
		return nil, fmt.Errorf("%s: flow stats: %w", s, err)
	}
	var out []of.FlowStats
	for _, p := range parts {
		if p.MPType != of.MultipartFlow {
			return nil, fmt.Errorf("%s: flow stats: reply of multipart type %d", s, p.MPType)
		}
		out = append(out, p.Flows...)
	}
	return out, nil
}

// GroupStats reads the counters of every group, with one counter per bucket.
func (s *Switch) GroupStats(ctx context.Context) ([]of.GroupStats, error) {
	cn := s.current()
	if cn == nil {
		return nil, fmt.Errorf("%s: group stats: %w", s, ErrNotConnected)
	}
	parts, err := cn.multipart(ctx, of.NewGroupStatsRequest(of.OFPGAll))
	if err != nil {
		return nil, fmt.Errorf("%s: group stats: %w", s, err)
	}
	var out []of.GroupStats
	for _, p := range parts {
		if p.MPType != of.MultipartGroup {
			return nil, fmt.Errorf("%s: group stats: reply of multipart type %d", s, p.MPType)
		}
		gs, err := of.DecodeGroupStats(p.Body)
		if err != nil {
			return nil, fmt.Errorf("%s: group stats: %w", s, err)
		}
		out = append(out, gs...)
	}
	return out, nil
}
