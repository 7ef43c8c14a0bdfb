// Package contivmodel is the netmaster's REST object model (spec
// docs/rest-api.md §1, §2): the 15 object types with their JSON encoding, the
// field tables that validate them, one generic collection persisted through
// objdb at obj/modeldb/<type>/<key>, and generic HTTP handlers for list,
// get, create-or-update, delete and inspect.
//
// Each type is described once by a Kind (names, key fields, field table,
// links). A Registry holds the registered kinds with their Callbacks — the
// per-type controller behaviour the netmaster implements — and an
// in-memory cache of the objects, loaded from the store by Load.
//
// Typical wiring in the netmaster:
//
//	reg := contivmodel.NewRegistry(store)
//	if err := contivmodel.RegisterAll(reg, contivmodel.Controllers{Tenant: tenantCtl, …}); err != nil { … }
//	if err := reg.Load(ctx); err != nil { … }
//	router := contivmodel.NewRouter(reg)
//	contivmodel.HandlePlugin(router, "/plugin/allocAddress", allocHandler)
//	router.Handle("/version", versionHandler).Methods("GET")
//
// Callbacks change other objects (links, link sets) through the Tx they
// are given, with Get, Modify, Put, Delete and RemoveIn; all of an
// operation's writes are committed together or not at all.
package contivmodel
