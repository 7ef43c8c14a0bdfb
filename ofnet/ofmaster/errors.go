package ofmaster

import "errors"

// Errors of the local API and the RPC methods. The rule texts are the
// original's ("Rule already exists", "Rule does not exist").
var (
	ErrRuleExists   = errors.New("ofnet master: Rule already exists")
	ErrRuleNotFound = errors.New("ofnet master: Rule does not exist")
	ErrInvalid      = errors.New("ofnet master: invalid argument")
	ErrNotServing   = errors.New("ofnet master: not serving")
	// ErrLimit: a table is at its bound (Config.MaxNodes, MaxEndpoints);
	// the request was refused and nothing changed.
	ErrLimit = errors.New("ofnet master: limit reached")
)
