package embedetcd

import (
	"context"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/storage/wal"
)

// Disk use of the embedded server (docs/dataplane-scale.md). etcd keeps
// every revision of every key until it is compacted, a compacted bolt file
// keeps its size until it is defragmented, and its write-ahead log
// preallocates 64 MB segments, one in use and the next one waiting: a
// fresh server took 128 MB for a database of a few. Compaction, a
// periodic defragmentation and small log segments keep the data folder
// near the size of the database.
const (
	// walSegmentBytes is the preallocated size of a log segment.
	walSegmentBytes = 4 << 20
	// maxWALFiles and maxSnapFiles are the log segments and snapshot
	// files kept once a snapshot made older ones unnecessary.
	maxWALFiles  = 3
	maxSnapFiles = 3
	// snapshotCount is the number of applied entries between snapshots,
	// after which older log segments can go.
	snapshotCount = 5000
	// defragMinFree is the least free space a defragmentation gives back.
	defragMinFree = 1 << 20
)

// walSegmentOnce sets etcd's log segment size, a variable of the wal
// package that every server of the process reads when it opens a segment.
// All embedded servers are started here, and the assignment happens
// before the first of them starts, so no server reads it while it changes.
var walSegmentOnce sync.Once

// configureDisk sets compaction, snapshot and log retention of ec.
func configureDisk(ec *embed.Config, cfg Config) {
	walSegmentOnce.Do(func() { wal.SegmentSizeBytes = walSegmentBytes })
	ec.SnapshotCount = snapshotCount
	ec.MaxWalFiles = maxWALFiles
	ec.MaxSnapFiles = maxSnapFiles
	if cfg.CompactionRetention > 0 {
		ec.AutoCompactionMode = embed.CompactorModePeriodic
		ec.AutoCompactionRetention = strconv.FormatInt(int64(cfg.CompactionRetention/time.Second), 10) + "s"
	}
}

// maintain looks every interval whether defragmenting the database is
// worth it (defragIfWorth), until ctx ends.
func (s *Server) maintain(ctx context.Context, interval time.Duration) {
	defer close(s.maintDone)
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	var compactedAtLast int64 // the compaction revision at the last defragmentation
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		compactedAtLast = s.defragIfWorth(compactedAtLast)
	}
}

// defragIfWorth defragments a database file of at least defragMinFree
// when a quarter of it (and defragMinFree) is free, or when a compaction
// ran since the last defragmentation (compactedAtLast is the compaction
// revision then); it returns the compaction revision of the last
// defragmentation. The second case is needed because bolt counts the
// pages a compaction freed as in use until a later write transaction
// releases them, which on an idle store may never come.
func (s *Server) defragIfWorth(compactedAtLast int64) int64 {
	be := s.e.Server.Backend()
	size, inUse := be.Size(), be.SizeInUse()
	compacted := s.e.Server.KV().FirstRev() // the compaction revision; at most 1 before any
	free := size - inUse
	switch {
	case size < defragMinFree:
		return compactedAtLast // nothing worth giving back
	case free >= defragMinFree && free*4 >= size:
	case compacted > 1 && compacted > compactedAtLast:
	default:
		return compactedAtLast
	}
	start := time.Now()
	if err := be.Defrag(); err != nil {
		s.log.WithError(err).Warn("defragment the embedded etcd database")
		return compactedAtLast
	}
	s.log.WithField("before", size).WithField("after", be.Size()).
		WithField("took", time.Since(start).Round(time.Millisecond)).Info("embedded etcd database defragmented")
	return compacted
}
