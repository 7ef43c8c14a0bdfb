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
	// snapshot, as one List is. A backend that cannot page (a wrapper over
	// one that cannot) returns an error wrapping errors.ErrUnsupported.
	ListPage(ctx context.Context, prefix, after string, limit int, rev int64) ([]KeyValue, int64, error)
}

// DefaultPageSize is the page size of ListPages callers that have no
// reason to pick another: large enough that a page's round trip is small
// next to its decoding, small enough that a page of endpoint records is
// well under a megabyte.
const DefaultPageSize = 1000

// ListPages calls fn with successive pages of at most size keys under
// prefix, in key order, together covering what List returns. On a Pager
// the pages are read one at a time from one snapshot, so only one page is
// in memory; otherwise the keys are listed at once and handed out in
// pages. fn must not keep the page's slice. An error of fn stops the walk
// and is returned as it is.
func ListPages(ctx context.Context, kv KV, prefix string, size int, fn func([]KeyValue) error) error {
	if size <= 0 {
		size = DefaultPageSize
	}
	if p, ok := kv.(Pager); ok {
		after, rev := "", int64(0)
		for {
			page, at, err := p.ListPage(ctx, prefix, after, size, rev)
			if rev == 0 && errors.Is(err, errors.ErrUnsupported) {
				break // fall back to List
			}
			if err != nil {
				return fmt.Errorf("list page of %q after %q: %w", prefix, after, err)
			}
			if len(page) == 0 {
				return nil
			}
			rev, after = at, page[len(page)-1].Key
			if err := fn(page); err != nil {
				return err
			}
			if len(page) < size {
				return nil
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
