// Package ipam hands out IPv4 and IPv6 addresses for the netmaster (spec
// docs/daemons.md §4.8, docs/rest-api.md §2.4, §2.5, §3.1, §3.2).
//
// Every change is a compare-and-swap on the store (docs/architecture.md decision 2)
// and writes one fixed-size piece of allocation state, so its cost does not
// depend on the subnet size (decision 3):
//
//   - V4 keeps a pool's bitmap in chunks of 4096 addresses (512 bytes),
//     writes only the chunk that changed, skips full chunks through a small
//     per-pool summary, and batches concurrent requests of one process into
//     one chunk write. It hands out the lowest free address, as the
//     original did. Endpoint-group IP pools are sub-pools: CreateSubPool
//     takes their range out of the network's pool and gives it to a pool of
//     their own.
//   - V6 keeps one key per taken host ID, created with a create-only write,
//     and hands out the host ID after the last one, wrapping to ::1.
//
// Pools are named by the caller (the netmaster uses the network state id
// "<net>.<tenant>" for a network and "<group>:<tenant>" for a group's IP
// pool) and live under "state/ipam/<pool>/v4/" and "state/ipam/<pool>/v6/".
//
// The stored form of an IPv4 pool and its compare-and-swap reads and
// writes are netmaster/ipam/v4store; this package is the allocators.
//
// Errors wrap a sentinel of this package (errors.Is) and, where the REST API
// shows a fixed text, a *usererr.Error whose Error() is exactly that text;
// usererr.Message(err) returns it.
package ipam
