package controllers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/contiv/netplugin/objdb"
)

// Endpoint-group ids (docs/daemons.md §4.9, §10 #2) are persisted: id n is
// held by the key "state/epgids/<n>" (value: the group's state id), created
// with a create-only write, so restarts and fail-overs never reuse an id in
// use, and two netmasters racing for one id cannot both get it.
const (
	epgIDPrefix = "state/epgids/"
	maxEPGID    = 65535
)

func epgIDKey(id int) string { return epgIDPrefix + strconv.Itoa(id) }

// allocEPGID takes the lowest id in 1…65535 that neither an id key nor an
// existing group state holds.
func (m *Objects) allocEPGID(ctx context.Context, owner string) (int, error) {
	for {
		used := map[int]bool{}
		kvs, err := m.kv.List(ctx, epgIDPrefix)
		if err != nil {
			return 0, fmt.Errorf("list endpoint group ids: %w", err)
		}
		for _, kv := range kvs {
			if n, err := strconv.Atoi(strings.TrimPrefix(kv.Key, epgIDPrefix)); err == nil {
				used[n] = true
			}
		}
		groups, _, err := m.st.EndpointGroups.ReadAll(ctx)
		if err != nil {
			return 0, fmt.Errorf("read endpoint groups: %w", err)
		}
		for _, g := range groups {
			used[g.EndpointGroupID] = true
		}
		id := 0
		for n := 1; n <= maxEPGID; n++ {
			if !used[n] {
				id = n
				break
			}
		}
		if id == 0 {
			return 0, errors.New("no endpoint group ids available")
		}
		// The value names the group being created, so a write of unknown
		// outcome is settled by reading it back
		// (docs/allocation-integrity.md): a conflict is another writer's.
		_, err = objdb.PutResolved(ctx, m.kv, epgIDKey(id), []byte(owner), objdb.WithCreateOnly())
		if errors.Is(err, objdb.ErrConflict) && !errors.Is(err, objdb.ErrUncertain) {
			continue // taken meanwhile by another netmaster
		}
		if err != nil {
			return 0, fmt.Errorf("take endpoint group id %d: %w", id, err)
		}
		return id, nil
	}
}

// freeEPGID gives an id back.
func (m *Objects) freeEPGID(ctx context.Context, id int) error {
	if id <= 0 {
		return nil
	}
	if err := m.kv.Delete(ctx, epgIDKey(id)); err != nil {
		return fmt.Errorf("free endpoint group id %d: %w", id, err)
	}
	return nil
}
