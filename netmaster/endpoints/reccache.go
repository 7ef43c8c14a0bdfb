package endpoints

import (
	"sync"

	"github.com/contiv/netplugin/state"
)

// recordCache remembers the endpoint records this term's joined creates
// wrote, at the version they were written, so that a delete on the common
// path needs no read first: its transaction's condition on that version
// checks the copy (a record changed or removed since fails it, and
// removeJoined reads the record). A hint only: correctness rests on the
// condition. Bounded to a few MiB at most (docs/scale.md): a full cache
// drops an arbitrary entry for a new one, so that under churn the
// endpoints recently created are the ones kept.
type recordCache struct {
	mu   sync.Mutex
	recs map[string]cachedRecord
}

type cachedRecord struct {
	ep  state.Endpoint
	ver int64
}

const maxCachedRecords = 8192

func (c *recordCache) put(ep state.Endpoint, ver int64) {
	if ver <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.recs == nil {
		c.recs = map[string]cachedRecord{}
	}
	if len(c.recs) >= maxCachedRecords {
		for id := range c.recs {
			delete(c.recs, id)
			break
		}
	}
	c.recs[ep.ID] = cachedRecord{ep: ep, ver: ver}
}

// take removes and returns the copy of epID.
func (c *recordCache) take(epID string) (cachedRecord, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.recs[epID]
	delete(c.recs, epID)
	return r, ok
}
