package pipeline

import (
	"regexp"
	"sort"
	"strings"

	"github.com/contiv/netplugin/ofnet/ofctrl"
)

// Render prints flows in `ovs-ofctl -O OpenFlow13 --no-stats dump-flows` syntax,
// sorted, optionally without cookies (golden sets should not depend on cookie hashes).
func Render(flows []ofctrl.Flow, withCookies bool) []string {
	out := make([]string, len(flows))
	for i, f := range flows {
		if !withCookies {
			f.Cookie = 0
		}
		out[i] = f.String()
	}
	sort.Strings(out)
	return out
}

// RenderGroups prints groups in `ovs-ofctl -O OpenFlow13 dump-groups` syntax, sorted.
func RenderGroups(groups []ofctrl.Group) []string {
	out := make([]string, len(groups))
	for i, g := range groups {
		out[i] = g.String()
	}
	sort.Strings(out)
	return out
}

var statsRE = regexp.MustCompile(`(duration|n_packets|n_bytes|idle_age|hard_age)=[^,]*, ?`)

// NormalizeDump turns `ovs-ofctl dump-flows` output into the lines Render prints:
// header and log lines dropped, statistics removed, optionally cookies removed,
// sorted.
func NormalizeDump(out string, withCookies bool) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if !strings.Contains(l, "actions=") || strings.HasPrefix(l, "OFPST_") {
			continue
		}
		l = statsRE.ReplaceAllString(l, "")
		if !withCookies && strings.HasPrefix(l, "cookie=") {
			if i := strings.Index(l, ", "); i >= 0 {
				l = l[i+2:]
			}
		}
		l = strings.Replace(l, "table=0, ", "", 1) // Render omits table 0

		lines = append(lines, l)
	}
	sort.Strings(lines)
	return lines
}
