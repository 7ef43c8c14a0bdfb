// Package ofmaster is the ofnet master: the JSON-RPC service "OfnetMaster"
// that ofnet agents register with and report their local endpoints to, and
// that distributes endpoints and policy rules to every registered agent
// (docs/dataplane.md §6.2, docs/daemons.md §5.3).
//
// State is in memory only: the agents (keyed "addr:port"), the endpoints
// (by EndpointID, newest Timestamp wins) and the policy rules (by RuleId).
// Agents report their endpoints again when they (re-)register, and
// netmaster restores the rules from the store, so a new master converges.
//
// Every message to an agent goes through that agent's own bounded queue and
// sender goroutine, so one slow or dead agent delays nobody else and each
// agent sees changes in the order the master applied them. Messages are
// idempotent at the agent (timestamp de-dup, identical rule re-add), which
// lets the sender replace a backlog by a full replay of the current state:
// on (re-)registration, on queue overflow and after the agent was
// unreachable.
package ofmaster
