// Package ofrpc is the wire contract between the ofnet master (in every
// netmaster) and the ofnet agents (two per netplugin host): the argument
// types, the well-known ports and the transport (docs/dataplane.md §6,
// docs/daemons.md §5.3).
//
// The transport is Go's net/rpc with the JSON-RPC 1.0 codec over plain TCP.
// A request is {"method":"Service.Method","params":[arg],"id":n}, a response
// {"id":n,"result":reply,"error":null|"text"}. Argument structs carry no
// JSON tags: the keys are the Go field names, as upstream ofnet sends them.
//
// Serve runs a server for a set of named receivers until its context ends.
// Pool keeps one persistent client per "addr:port" and is what both sides
// use to call each other.
package ofrpc
