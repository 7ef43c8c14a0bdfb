package contivmodel

import "regexp"

// Validation patterns of docs/rest-api.md §1.10 and §2, built from the
// spec's named pieces. Every pattern is applied as a full-string match:
// compile wraps it in ^(?:...)$, which changes nothing for the patterns
// that already carry their own anchors.

const (
	label      = `[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]*[a-zA-Z0-9]`
	lastLabel  = `[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9\-]*[A-Za-z0-9]`
	octet      = `25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9]`
	ipv4       = `(` + octet + `)(\.(` + octet + `)){3}`
	plen       = `3[0-1]|2[0-9]|1[0-9]|[1-9]`
	hex4       = `([0-9]|[a-f]|[A-F]){1,4}`
	ipv6       = `(((` + hex4 + `)((\:` + hex4 + `){7}))|(((` + hex4 + `\:){0,6}|\:)((\:` + hex4 + `){0,6}|\:)))`
	ipv6Len    = `1[0-2][0-7]|[1-9][0-9]|[1-9]`
	podNode    = `topology/pod-[0-9]{1,4}/node-[0-9]{1,4}`
	podPath    = `topology/pod-[0-9]{1,4}/paths-[0-9]{1,4}/pathep-\[eth[0-9]{1,2}/[0-9]{1,2}\]`
	bwUnitsOne = `([kmgKMG{1}]bps)|[kmgKMG{1}]|(kb|Kb|Gb|gb|Mb|mb)`
	bwUnitsTwo = `((k|m|g|K|G|M)bps)|(k|m|g|K|M|G)|(kb|Kb|Gb|gb|Mb|mb)`
)

func fullMatch(p string) *regexp.Regexp { return regexp.MustCompile(`^(?:` + p + `)$`) }

// The compiled patterns are immutable; sharing them is safe.
var (
	// NAME: mandatory dot-separated DNS-like labels.
	patName = fullMatch(`^((` + label + `)\.)*(` + lastLabel + `)$`)
	// NAME?: also "" and a trailing dot.
	patNameOpt = fullMatch(`^((` + label + `)\.)*(` + lastLabel + `)?$`)
	// TAG?: "" or a NAME.
	patTagOpt = fullMatch(`^(((` + label + `)\.)*(` + lastLabel + `))?$`)

	patIPv4Opt     = fullMatch(`^((` + ipv4 + `))?$`)
	patSubnet      = fullMatch(`^(` + ipv4 + `)(\-(` + ipv4 + `))?/(` + plen + `)$`)
	patIPPool      = fullMatch(`^$|^(` + ipv4 + `)(\-(` + ipv4 + `))?$`)
	patRuleIP      = fullMatch(`^((` + ipv4 + `)(\-(` + octet + `))?(/(` + plen + `))?)?$`)
	patRouterIP    = fullMatch(`^(` + ipv4 + `)(\-(` + octet + `))?/(` + plen + `)$`)
	patIPv6SubOpt  = fullMatch(`^((` + ipv6 + `)/(` + ipv6Len + `))?$`)
	patIPv6Opt     = fullMatch(`^(` + ipv6 + `)?$`)
	patPvtSubnet   = fullMatch(`^(` + ipv4 + `)/16$`)
	patVlanRange   = fullMatch(`^([0-9]{1,4}?-[0-9]{1,4}?)$`)
	patVxlanRange  = fullMatch(`^([0-9]{1,8}?-[0-9]{1,8}?)$`)
	patArpMode     = fullMatch(`^(proxy|flood)?$`)
	patFwdMode     = fullMatch(`^(bridge|routing)?$`)
	patInfraType   = fullMatch(`^(aci|aci-opflex|default)?$`)
	patGlobalName  = fullMatch(`^(global)$`)
	patAciGwName   = fullMatch(`^(aciGw)$`)
	patYesNo       = fullMatch(`^(yes|no){1}$`)
	patNodeBinding = fullMatch(`^$|^(` + podNode + `){1}(,` + podNode + `)*$`)
	patPathBinding = fullMatch(`^$|^(` + podPath + `){1}(,` + podPath + `)*$`)
	patEncap       = fullMatch(`^(vlan|vxlan)$`)
	patNwType      = fullMatch(`^(infra|data)$`)
	patBandwidth   = fullMatch(`^([1-9][0-9]* (` + bwUnitsOne + `))?$|^([1-9][0-9]*(` + bwUnitsTwo + `))?$`)
	patAction      = fullMatch(`^(allow|deny)$`)
	patDirection   = fullMatch(`^(in|out)$`)
	patProtocol    = fullMatch(`^(tcp|udp|icmp||[0-9]{1,3}?)$`)
)
