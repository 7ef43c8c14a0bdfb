package contivmodel

import (
	"context"
	"reflect"
)

// Callbacks is the per-type behaviour the netmaster implements (spec
// docs/rest-api.md §1.9, §2). Every method runs inside a transaction: tx reads
// see the transaction's own writes, and writes through tx (Put, Modify,
// Delete, RemoveIn — e.g. adding a network to its tenant's Networks link
// set) are persisted together with the object itself only if the whole
// operation succeeds. The generic layer serialises all writing operations,
// so a callback sees a stable model.
//
// Errors reach the REST client as the first line of the error body; build
// them with Errorf, Invalidf or Missingf (or return a *Error somewhere in
// the chain) so the message is exactly the documented text, whatever
// context is wrapped around it. The constructor decides the status (409,
// 400, 404; docs/rest-errors.md); an error without a *Error is a server
// fault (500).
//
// A callback must not call Registry.Update, Upsert or Remove (they would
// wait for the transaction it runs in); it uses the tx it was given.
type Callbacks[T any] interface {
	// Create runs for a new, validated object. It may set obj's links;
	// on success obj is stored.
	Create(ctx context.Context, tx *Tx, obj *T) error
	// Update runs when an object with the key exists. It decides which of
	// req's fields are taken over into stored; on success stored is
	// stored (the REST answer is req, docs/rest-api.md §1.6).
	Update(ctx context.Context, tx *Tx, stored, req *T) error
	// Delete runs before the object is removed; an error keeps it.
	Delete(ctx context.Context, tx *Tx, obj *T) error
	// Oper returns the operational state for inspect (a *<Type>Oper; nil
	// means empty). tx is read-only. Only called for kinds with HasOper.
	Oper(ctx context.Context, tx *Tx, obj *T) (any, error)
}

// NoopCallbacks accepts everything: Create and Delete do nothing, Update
// takes over every config field of the request, Oper reports empty state.
// It is the test controller, and can be embedded by controllers that only
// override some methods.
type NoopCallbacks[T any] struct{}

// Create accepts the object as is.
func (NoopCallbacks[T]) Create(context.Context, *Tx, *T) error { return nil }

// Update copies every config field of req into stored.
func (NoopCallbacks[T]) Update(_ context.Context, _ *Tx, stored, req *T) error {
	CopyConfig(stored, req)
	return nil
}

// Delete accepts the deletion.
func (NoopCallbacks[T]) Delete(context.Context, *Tx, *T) error { return nil }

// Oper reports empty operational state.
func (NoopCallbacks[T]) Oper(context.Context, *Tx, *T) (any, error) { return nil, nil }

// CopyConfig copies every config field of src into dst, leaving dst's key,
// links and link sets alone.
func CopyConfig[T any](dst, src *T) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	if d.Kind() != reflect.Struct {
		*dst = *src
		return
	}
	t := d.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		switch jsonName(f) {
		case "", "key", "link-sets", "links":
			continue
		}
		if f.IsExported() {
			d.Field(i).Set(s.Field(i))
		}
	}
}

// Controllers holds the callbacks of every type for RegisterAll. A nil
// member registers the type without a controller: create/update answer
// "Invalid object type" (docs/rest-api.md §1.7), as volume and volumeProfile must.
type Controllers struct {
	AciGw             Callbacks[AciGw]
	AppProfile        Callbacks[AppProfile]
	Bgp               Callbacks[Bgp]
	Endpoint          Callbacks[Endpoint] // only Oper is used
	EndpointGroup     Callbacks[EndpointGroup]
	ExtContractsGroup Callbacks[ExtContractsGroup]
	Global            Callbacks[Global]
	Netprofile        Callbacks[Netprofile]
	Network           Callbacks[Network]
	Policy            Callbacks[Policy]
	Rule              Callbacks[Rule]
	ServiceLB         Callbacks[ServiceLB]
	Tenant            Callbacks[Tenant]
	Volume            Callbacks[Volume]
	VolumeProfile     Callbacks[VolumeProfile]
}

// NoopControllers returns NoopCallbacks for every type that has a
// controller in the original (all but volume and volumeProfile); endpoint
// inspect answers "endpoint not found".
func NoopControllers() Controllers {
	return Controllers{
		AciGw:             NoopCallbacks[AciGw]{},
		AppProfile:        NoopCallbacks[AppProfile]{},
		Bgp:               NoopCallbacks[Bgp]{},
		Endpoint:          noEndpoints{},
		EndpointGroup:     NoopCallbacks[EndpointGroup]{},
		ExtContractsGroup: NoopCallbacks[ExtContractsGroup]{},
		Global:            NoopCallbacks[Global]{},
		Netprofile:        NoopCallbacks[Netprofile]{},
		Network:           NoopCallbacks[Network]{},
		Policy:            NoopCallbacks[Policy]{},
		Rule:              NoopCallbacks[Rule]{},
		ServiceLB:         NoopCallbacks[ServiceLB]{},
		Tenant:            NoopCallbacks[Tenant]{},
	}
}

type noEndpoints struct{ NoopCallbacks[Endpoint] }

func (noEndpoints) Oper(context.Context, *Tx, *Endpoint) (any, error) {
	return nil, NotFound(TypeEndpoint)
}

// RegisterAll registers the 15 kinds of the model with c's callbacks.
func RegisterAll(r *Registry, c Controllers) error {
	regs := []func() error{
		func() error { return Register(r, AciGwKind(), c.AciGw) },
		func() error { return Register(r, AppProfileKind(), c.AppProfile) },
		func() error { return Register(r, BgpKind(), c.Bgp) },
		func() error { return Register(r, EndpointKind(), c.Endpoint) },
		func() error { return Register(r, EndpointGroupKind(), c.EndpointGroup) },
		func() error { return Register(r, ExtContractsGroupKind(), c.ExtContractsGroup) },
		func() error { return Register(r, GlobalKind(), c.Global) },
		func() error { return Register(r, NetprofileKind(), c.Netprofile) },
		func() error { return Register(r, NetworkKind(), c.Network) },
		func() error { return Register(r, PolicyKind(), c.Policy) },
		func() error { return Register(r, RuleKind(), c.Rule) },
		func() error { return Register(r, ServiceLBKind(), c.ServiceLB) },
		func() error { return Register(r, TenantKind(), c.Tenant) },
		func() error { return Register(r, VolumeKind(), c.Volume) },
		func() error { return Register(r, VolumeProfileKind(), c.VolumeProfile) },
	}
	for _, reg := range regs {
		if err := reg(); err != nil {
			return err
		}
	}
	return nil
}
