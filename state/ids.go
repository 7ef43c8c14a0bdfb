package state

// NetworkID is the state id of network net of tenant: "<net>.<tenant>"
// (docs/daemons.md §3.1).
func NetworkID(tenant, net string) string { return net + "." + tenant }

// GroupID is the state id of endpoint group group of tenant:
// "<group>:<tenant>".
func GroupID(tenant, group string) string { return group + ":" + tenant }
