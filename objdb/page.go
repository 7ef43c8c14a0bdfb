package objdb

import (
	"context"
	"errors"
	"fmt"
)

// Pager is implemented by backends that read a prefix page by page, so a
// caller walking many keys (a leader's term start over every endpoint)
// never holds them all at once.
type Pager interface {
	// ListPage returns at most limit keys under prefix that sort after
	// `after` ("" starts at the first), sorted by key, read at store
	// version rev (0: the current one). It returns the version it read at:
	// passed back as rev for the following pages, all pages are one
	// snapshot, as one List is. remaining is how many keys the range held
	// from `after` on, this page's included (-1: the backend does not
	// know). A backend that cannot page (a wrapper over one that cannot)
	// returns an error wrapping errors.ErrUnsupported.
	ListPage(ctx context.Context, prefix, after string, limit int, rev int64) (kvs []KeyValue, atRev, remaining int64, err error)
}

// maxPages bounds the pages of one ListPages walk: the page size grows
// with the prefix's size so that a walk reads it in at most this many
// pages. etcd 3.4 servers walk their index over the whole rest of the
// range for every limited read (to count it), so a fixed page size makes
// a walk quadratic in the number of keys; with at most maxPages pages it
// stays linear, and a page holds a sixteenth of the prefix at most.
const maxPages = 16

// DefaultPageSize is the page size of ListPages callers that have no
// reason to pick another: large enough that a page's round trip is small
// next to its decoding, small enough that a page of endpoint records is
// well under a megabyte. A walk over more than maxPages of them reads
// larger pages.
const DefaultPageSize = 1000

// ListPages calls fn with successive pages of at least size keys (the
// last may be smaller; more than size when the prefix holds over maxPages
// of them) under prefix, in key order, together covering what List
// returns. On a Pager the pages are read one at a time from one snapshot,
// so only one page is in memory; otherwise the keys are listed at once and handed out in
// pages. fn must not keep the page's slice. An error of fn stops the walk
// and is returned as it is.
func ListPages(ctx context.Context, kv KV, prefix string, size int, fn func([]KeyValue) error) error {
	if size <= 0 {
		size = DefaultPageSize
	}
	if p, ok := kv.(Pager); ok {
		after, rev := "", int64(0)
		for {
			page, at, remaining, err := p.ListPage(ctx, prefix, after, size, rev)
			if rev == 0 && errors.Is(err, errors.ErrUnsupported) {
				break // fall back to List
			}
			if err != nil {
				return fmt.Errorf("list page of %q after %q: %w", prefix, after, err)
			}
			if len(page) == 0 {
				return nil
			}
			// The last page: the count says so, or (not counted) it is short.
			if (remaining >= 0 && remaining <= int64(len(page))) || (remaining < 0 && len(page) < size) {
				return fn(page)
			}
			if rev == 0 && remaining > int64(size)*maxPages {
				size = int((remaining + maxPages - 1) / maxPages)
			}
			rev, after = at, page[len(page)-1].Key
			if err := fn(page); err != nil {
				return err
			}
		}
	}
	all, err := kv.List(ctx, prefix)
	if err != nil {
		return err
	}
	for len(all) > 0 {
		n := min(size, len(all))
		if err := fn(all[:n:n]); err != nil {
			return err
		}
		all = all[n:]
	}
	return nil
}

// VersionLister is implemented by backends that tell the store version a
// listing was taken at (etcd: the response header's revision; consul: the
// query's index). A watch started from that version misses nothing and,
// unlike the highest version of the listed keys, it is never older than
// the store's compaction: a re-list after "history compacted" resumes
// (docs/architecture.md, "Watches after a compaction").
type VersionLister interface {
	ListVersion(ctx context.Context, prefix string) ([]KeyValue, int64, error)
}

// ListVersion lists prefix and returns the version to watch from: the
// store's version of the listing when kv is a VersionLister, else the
// highest version of the listed keys.
func ListVersion(ctx context.Context, kv KV, prefix string) ([]KeyValue, int64, error) {
	if vl, ok := kv.(VersionLister); ok {
		kvs, ver, err := vl.ListVersion(ctx, prefix)
		if !errors.Is(err, errors.ErrUnsupported) {
			return kvs, ver, err
		}
	}
	kvs, err := kv.List(ctx, prefix)
	if err != nil {
		return nil, 0, err
	}
	var ver int64
	for _, e := range kvs {
		ver = max(ver, e.Version)
	}
	return kvs, ver, nil
}
