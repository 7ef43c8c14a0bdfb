// Package netutils holds address helpers shared by the daemons.
package netutils

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// ParseHostPort validates an "ip:port" flag value (IPv4 only, exactly one
// colon, port 1-65535) and names the flag in its error.
func ParseHostPort(flag, v string) (net.IP, int, error) {
	if v == "" {
		return nil, 0, fmt.Errorf("--%s is empty: want ip:port", flag)
	}
	if strings.Count(v, ":") != 1 {
		return nil, 0, fmt.Errorf("--%s %q: want ip:port (IPv4)", flag, v)
	}
	h, p, _ := strings.Cut(v, ":")
	ip := net.ParseIP(h)
	if ip == nil || ip.To4() == nil {
		return nil, 0, fmt.Errorf("--%s %q: %q is not an IPv4 address", flag, v, h)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return nil, 0, fmt.Errorf("--%s %q: port must be 1-65535", flag, v)
	}
	return ip.To4(), port, nil
}

// DefaultAddr is the host's default IPv4 address: the first non-loopback
// address the hostname resolves to that is configured locally, else the
// first IPv4 address of a link not named docker*, veth*, vport* or lo*.
func DefaultAddr() (string, error) {
	local := map[string]bool{}
	ifs, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("list interfaces: %w", err)
	}
	var fallback string
	for _, ifc := range ifs {
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || ipn.IP.To4() == nil {
				continue
			}
			local[ipn.IP.String()] = true
			if fallback == "" && !skipLink(ifc.Name) && !ipn.IP.IsLoopback() {
				fallback = ipn.IP.String()
			}
		}
	}
	if host, err := os.Hostname(); err == nil {
		if ips, err := net.LookupIP(host); err == nil {
			for _, ip := range ips {
				if v4 := ip.To4(); v4 != nil && !v4.IsLoopback() && local[v4.String()] {
					return v4.String(), nil
				}
			}
		}
	}
	if fallback == "" {
		return "", fmt.Errorf("no usable IPv4 address on this host")
	}
	return fallback, nil
}

func skipLink(name string) bool {
	for _, p := range []string{"docker", "veth", "vport", "lo"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
