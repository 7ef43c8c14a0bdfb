// Package trace turns ovs-vswitchd's "ofproto/trace" answer into what an
// operator asks of a packet trace: which tables the packet went through,
// which flow of which contiv object decided, and whether it was forwarded
// (to which port or tunnel) or dropped (docs/operations.md, "Packet
// trace"). The text is parsed, never trusted: any input gives a result or
// an error, no panic. It sits under api/ because netctl and netplugin both
// carry its Request and Result (docs/architecture.md,
// "Dependency direction").
package trace

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"github.com/contiv/netplugin/ofnet/pipeline"
)

// Hop is one flow table the packet was looked up in.
type Hop struct {
	Bridge    string   `json:"bridge"`
	Table     int      `json:"table"`
	TableName string   `json:"tableName,omitempty"`
	Match     string   `json:"match,omitempty"`
	Priority  int      `json:"priority"`
	Cookie    string   `json:"cookie,omitempty"`
	NoMatch   bool     `json:"noMatch,omitempty"`
	Actions   []string `json:"actions,omitempty"`
	// Object is the contiv object the flow belongs to ("rule
	// default:p1:1", "remote-endpoint …"), from the cookie.
	Object string `json:"object,omitempty"`
}

// Parsed is the structure of one ofproto/trace answer.
type Parsed struct {
	Flow            string
	Hops            []Hop
	DatapathActions string
}

var (
	hopRE    = regexp.MustCompile(`^\s*(\d+)\. (.*)$`)
	bridgeRE = regexp.MustCompile(`^bridge\("([^"]*)"\)$`)
	tailRE   = regexp.MustCompile(`^(?:(.*), )?priority (\d+)(?:, cookie (0x[0-9a-fA-F]+))?$`)
)

// Parse reads the text of ofproto/trace.
func Parse(text string) (Parsed, error) {
	var p Parsed
	bridge := ""
	var cur *Hop
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "Flow: "):
			p.Flow = strings.TrimPrefix(line, "Flow: ")
			cur = nil
			continue
		case strings.HasPrefix(line, "Datapath actions: "):
			p.DatapathActions = strings.TrimPrefix(line, "Datapath actions: ")
			cur = nil
			continue
		case strings.HasPrefix(line, "Final flow:"), strings.HasPrefix(line, "Megaflow:"), trimmed == "":
			cur = nil
			continue
		}
		if m := bridgeRE.FindStringSubmatch(trimmed); m != nil {
			bridge, cur = m[1], nil
			continue
		}
		if strings.Trim(trimmed, "-") == "" {
			continue
		}
		if m := hopRE.FindStringSubmatch(line); m != nil && bridge != "" {
			table, err := strconv.Atoi(m[1])
			if err != nil || table > 255 {
				return p, fmt.Errorf("trace: bad table number in %q", line)
			}
			h := Hop{Bridge: bridge, Table: table}
			rest := strings.TrimSpace(m[2])
			if strings.HasPrefix(rest, "No match") {
				h.NoMatch = true
			} else if t := tailRE.FindStringSubmatch(rest); t != nil {
				h.Match = t[1]
				h.Priority, _ = strconv.Atoi(t[2])
				h.Cookie = strings.ToLower(t[3])
			} else {
				h.Match = rest
			}
			p.Hops = append(p.Hops, h)
			cur = &p.Hops[len(p.Hops)-1]
			continue
		}
		if cur != nil {
			cur.Actions = append(cur.Actions, trimmed)
		}
	}
	if p.Flow == "" && len(p.Hops) == 0 {
		return p, errors.New("trace: no flow and no table in the answer")
	}
	return p, nil
}

// Output is the last "output:N" of bridge's hops (0 when none).
func (p Parsed) Output(bridge string) uint32 {
	var port uint32
	for _, h := range p.Hops {
		if h.Bridge != bridge {
			continue
		}
		for _, a := range h.Actions {
			// "output:3", or a set of actions "set_field:…,output:3"
			for _, part := range strings.Split(a, ",") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(part), "output:"); ok {
					if n, err := strconv.ParseUint(v, 10, 32); err == nil {
						port = uint32(n)
					}
				}
			}
		}
	}
	return port
}

// Request is one trace asked of netplugin.
type Request struct {
	Endpoint string // endpoint id, container id or a unique part of one
	Dst      netip.Addr
	Proto    string // tcp, udp or icmp
	Port     int    // destination port (tcp, udp)
}

// ParseRequest validates the query parameters of a trace request.
func ParseRequest(endpoint, dst, proto, port string) (Request, error) {
	r := Request{Endpoint: strings.TrimSpace(endpoint), Proto: strings.ToLower(strings.TrimSpace(proto))}
	if r.Endpoint == "" {
		return r, errors.New("trace: endpoint is required")
	}
	a, err := netip.ParseAddr(strings.TrimSpace(dst))
	if err != nil || !a.Is4() {
		return r, fmt.Errorf("trace: destination %q is not an IPv4 address", dst)
	}
	r.Dst = a
	if r.Proto == "" {
		r.Proto = "tcp"
	}
	switch r.Proto {
	case "tcp", "udp":
		if port == "" {
			return r, fmt.Errorf("trace: a %s trace needs a destination port", r.Proto)
		}
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return r, fmt.Errorf("trace: destination port %q is not 1-65535", port)
		}
		r.Port = n
	case "icmp":
		if port != "" {
			return r, errors.New("trace: icmp has no port")
		}
	default:
		return r, fmt.Errorf("trace: protocol %q: want tcp, udp or icmp", proto)
	}
	return r, nil
}

// FlowSpec is the ofproto/trace flow of a packet from an endpoint at port
// inPort with mac and ip, sent to dstMAC.
func (r Request) FlowSpec(inPort uint32, mac, dstMAC string, src netip.Addr) string {
	s := fmt.Sprintf("%s,in_port=%d,dl_src=%s,dl_dst=%s,nw_src=%s,nw_dst=%s,nw_ttl=64", r.Proto, inPort, mac, dstMAC, src, r.Dst)
	switch r.Proto {
	case "tcp":
		s += fmt.Sprintf(",tcp_src=40000,tcp_dst=%d,tcp_flags=0x002", r.Port)
	case "udp":
		s += fmt.Sprintf(",udp_src=40000,udp_dst=%d", r.Port)
	case "icmp":
		s += ",icmp_type=8,icmp_code=0"
	}
	return s
}

// Packet describes the traced packet ("tcp 10.1.1.1 -> 10.1.1.2:80").
func (r Request) Packet(src netip.Addr) string {
	if r.Proto == "icmp" {
		return fmt.Sprintf("icmp echo %s -> %s", src, r.Dst)
	}
	return fmt.Sprintf("%s %s -> %s:%d", r.Proto, src, r.Dst, r.Port)
}

// Result is the answer of a trace (netplugin's /inspect/trace, netmaster's
// /trace, netctl trace).
type Result struct {
	Endpoint string `json:"endpoint"`
	Host     string `json:"host"`
	Bridge   string `json:"bridge"`
	InPort   uint32 `json:"inPort"`
	Packet   string `json:"packet"`
	Hops     []Hop  `json:"hops"`
	// Verdict is "forwarded" or "dropped".
	Verdict string `json:"verdict"`
	// OutPort and OutPortName: where a forwarded packet leaves; Tunnel
	// when that is a VXLAN port to RemoteIP.
	OutPort     uint32 `json:"outPort,omitempty"`
	OutPortName string `json:"outPortName,omitempty"`
	Tunnel      bool   `json:"tunnel,omitempty"`
	RemoteIP    string `json:"remoteIP,omitempty"`
	// DecidedBy is the hop that decided: "table Policy: rule <id>" or
	// "table IP: no flow matched".
	DecidedBy string `json:"decidedBy"`
	// Rule is the contiv policy rule that decided, when one did.
	Rule string `json:"rule,omitempty"`
	// KnownDestination: the destination is an endpoint this host knows.
	KnownDestination bool   `json:"knownDestination"`
	DatapathActions  string `json:"datapathActions"`
	Summary          string `json:"summary"`
}

// Decide fills the verdict of r from its hops: a packet with an output in
// the endpoint's bridge was forwarded; otherwise the last hop of that
// bridge decided (a policy rule's drop, or a table with no match).
func (r *Result) Decide(p Parsed) {
	r.Hops, r.DatapathActions = p.Hops, p.DatapathActions
	var last *Hop
	for i := range r.Hops {
		h := &r.Hops[i]
		if h.Bridge != r.Bridge {
			continue
		}
		last = h
		if strings.HasPrefix(h.Object, "rule ") {
			r.Rule = strings.TrimPrefix(h.Object, "rule ")
		}
	}
	if r.OutPort != 0 {
		r.Verdict = "forwarded"
		where := fmt.Sprintf("port %s (%d)", r.OutPortName, r.OutPort)
		if r.Tunnel {
			where = fmt.Sprintf("tunnel port %s to %s", r.OutPortName, r.RemoteIP)
		}
		r.DecidedBy = describeHop(last)
		r.Summary = fmt.Sprintf("%s: forwarded to %s", r.Packet, where)
		if r.Rule != "" {
			r.Summary += fmt.Sprintf(", allowed by policy rule %s", r.Rule)
		}
		return
	}
	r.Verdict = "dropped"
	r.DecidedBy = describeHop(last)
	switch {
	case last != nil && strings.HasPrefix(last.Object, "rule "):
		r.Summary = fmt.Sprintf("%s: dropped by policy rule %s (table %s)", r.Packet, r.Rule, last.TableName)
	case !r.KnownDestination:
		r.Summary = fmt.Sprintf("%s: dropped, %s is not a known endpoint (%s)", r.Packet, lastDst(r.Packet), r.DecidedBy)
	default:
		r.Summary = fmt.Sprintf("%s: dropped (%s)", r.Packet, r.DecidedBy)
	}
}

func describeHop(h *Hop) string {
	switch {
	case h == nil:
		return "no table"
	case h.NoMatch:
		return fmt.Sprintf("table %s: no flow matched", h.TableName)
	case h.Priority <= pipeline.MissPriority && h.Object == "init base":
		return fmt.Sprintf("table %s: no flow matched (table miss: %s)", h.TableName, strings.Join(h.Actions, "; "))
	case h.Object != "":
		return fmt.Sprintf("table %s: %s (priority %d)", h.TableName, h.Object, h.Priority)
	}
	return fmt.Sprintf("table %s: priority %d flow %s", h.TableName, h.Priority, h.Match)
}

// lastDst is the destination address of a Packet text.
func lastDst(packet string) string {
	_, after, _ := strings.Cut(packet, "-> ")
	if host, _, ok := strings.Cut(after, ":"); ok {
		return host
	}
	return after
}
