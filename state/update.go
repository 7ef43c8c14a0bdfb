package state

import (
	"context"
	"errors"

	"github.com/contiv/netplugin/objdb"
)

// Update is a compare-and-swap loop on object id: it reads the object,
// applies fn and writes it back if nobody wrote it meanwhile, else starts
// over. It returns the value written (or the one fn refused).
func (c Collection[T]) Update(ctx context.Context, id string, fn func(cur *T) error) (T, error) {
	for {
		cur, ver, err := c.ReadVersion(ctx, id)
		if err != nil {
			return cur, err
		}
		if err := fn(&cur); err != nil {
			return cur, err
		}
		_, err = c.Write(ctx, cur, objdb.WithPrevVersion(ver))
		if errors.Is(err, objdb.ErrConflict) {
			if err := ctx.Err(); err != nil {
				return cur, err
			}
			continue
		}
		return cur, err
	}
}
