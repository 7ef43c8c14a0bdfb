package ipam

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error this package returns wraps one of them (or an
// objdb error); test with errors.Is.
var (
	// ErrExhausted: no free address is left in the pool.
	ErrExhausted = errors.New("ipam: subnet exhausted")
	// ErrInUse: a requested address (or an address of a requested
	// sub-pool) is already allocated or reserved.
	ErrInUse = errors.New("ipam: address in use")
	// ErrOutOfSubnet: the address is not inside the pool's subnet.
	ErrOutOfSubnet = errors.New("ipam: address outside subnet")
	// ErrNotAllocatable: the address is inside the subnet but never handed
	// out by this pool (network or broadcast address, outside the pool's
	// range).
	ErrNotAllocatable = errors.New("ipam: address not allocatable")
	// ErrInvalid: malformed subnet, range, pool or address.
	ErrInvalid = errors.New("ipam: invalid argument")
	// ErrPoolNotFound: no pool with this id.
	ErrPoolNotFound = errors.New("ipam: pool not found")
	// ErrPoolExists: a pool with this id exists with another definition.
	ErrPoolExists = errors.New("ipam: pool exists")
	// ErrClosed: the allocator was closed.
	ErrClosed = errors.New("ipam: allocator closed")
)

// UserError carries the user-visible text the REST API returns (spec
// rest-api.md §2.4, §2.5, §3.1) next to its sentinel. Error() is exactly
// that text; errors.Is(err, sentinel) holds. The package wraps it with
// context naming the pool, so a REST handler gets the bare text back with
// Message.
type UserError struct {
	Kind error  // one of the sentinels
	Text string // exact user-visible message
}

func (e *UserError) Error() string { return e.Text }

// Unwrap makes errors.Is(err, e.Kind) work.
func (e *UserError) Unwrap() error { return e.Kind }

func userErr(kind error, format string, args ...any) error {
	return &UserError{Kind: kind, Text: fmt.Sprintf(format, args...)}
}

// Message returns the user-visible text of the first UserError in err's
// chain, or err.Error() when there is none.
func Message(err error) string {
	var ue *UserError
	if errors.As(err, &ue) {
		return ue.Text
	}
	if err == nil {
		return ""
	}
	return err.Error()
}
