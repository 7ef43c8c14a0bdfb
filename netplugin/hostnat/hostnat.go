// Package hostnat owns the host's NAT rule behind contivh0 (docs/dataplane.md
// §3.7): traffic from the host-private subnet that leaves by any other interface
// is masqueraded. The rule lives in the host's own firewall tool: iptables when
// the host has it (on Debian 12 that is iptables-nft, the nftables backend),
// else nft with a table of its own. Rules carry a marker so Remove takes out
// exactly what Ensure added.
package hostnat

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// Marker is the iptables comment and the nft table name of contiv's rule.
const Marker = "contiv-host-access"

// nftTable is the nftables table used when iptables is absent.
const nftTable = "contiv_host_access"

// Backend names.
const (
	BackendIPTables = "iptables"
	BackendNft      = "nft"
)

// Runner runs a command and returns its combined output.
type Runner func(ctx context.Context, name string, args ...string) ([]byte, error)

// execRunner runs the command in the process's own network namespace.
func execRunner(ctx context.Context, name string, args ...string) ([]byte, error) {
	return exec.CommandContext(ctx, name, args...).CombinedOutput()
}

// NAT manages the masquerade rule of one private subnet through one host
// interface (contivh0).
type NAT struct {
	backend string
	subnet  netip.Prefix
	hostIf  string
	run     Runner
}

// Config configures New.
type Config struct {
	Subnet  string // the host-private subnet, e.g. 172.19.0.0/16
	HostIf  string // the host port, e.g. contivh0
	Backend string // "" detects: iptables when found, else nft
	Run     Runner // nil runs the commands in this process's namespace
	// LookPath finds programs (nil: exec.LookPath); tests replace it.
	LookPath func(string) (string, error)
}

// ErrNoTool is returned when neither iptables nor nft is installed.
var ErrNoTool = errors.New("hostnat: neither iptables nor nft is installed")

// New checks cfg and picks the backend.
func New(cfg Config) (*NAT, error) {
	pfx, err := netip.ParsePrefix(cfg.Subnet)
	if err != nil || !pfx.Addr().Is4() {
		return nil, fmt.Errorf("hostnat: private subnet %q is not an IPv4 prefix", cfg.Subnet)
	}
	if cfg.HostIf == "" || len(cfg.HostIf) > 15 || strings.ContainsAny(cfg.HostIf, " \t\"'/") {
		return nil, fmt.Errorf("hostnat: host interface name %q is not valid", cfg.HostIf)
	}
	look := cfg.LookPath
	if look == nil {
		look = exec.LookPath
	}
	n := &NAT{subnet: pfx.Masked(), hostIf: cfg.HostIf, run: cfg.Run, backend: cfg.Backend}
	if n.run == nil {
		n.run = execRunner
	}
	switch n.backend {
	case BackendIPTables, BackendNft:
	case "":
		if _, err := look("iptables"); err == nil {
			n.backend = BackendIPTables
		} else if _, err := look("nft"); err == nil {
			n.backend = BackendNft
		} else {
			return nil, ErrNoTool
		}
	default:
		return nil, fmt.Errorf("hostnat: backend %q: want %q or %q", cfg.Backend, BackendIPTables, BackendNft)
	}
	return n, nil
}

// Backend is the firewall tool in use.
func (n *NAT) Backend() string { return n.backend }

func (n *NAT) iptRule() []string {
	return []string{"POSTROUTING", "-s", n.subnet.String(), "!", "-o", n.hostIf,
		"-m", "comment", "--comment", Marker, "-j", "MASQUERADE"}
}

func (n *NAT) ipt(ctx context.Context, op string) error {
	args := append([]string{"-w", "5", "-t", "nat", op}, n.iptRule()...)
	out, err := n.run(ctx, "iptables", args...)
	if err != nil {
		return fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// nftScript is the whole table, written at once: re-running it gives the same
// table (idempotent).
func (n *NAT) nftScript() string {
	return fmt.Sprintf("table ip %[1]s\ndelete table ip %[1]s\ntable ip %[1]s {\n"+
		"  chain postrouting {\n    type nat hook postrouting priority srcnat; policy accept;\n"+
		"    ip saddr %[2]s oifname != \"%[3]s\" masquerade comment \"%[4]s\"\n  }\n}\n",
		nftTable, n.subnet, n.hostIf, Marker)
}

// Ensure adds the masquerade rule unless it is there. Idempotent.
func (n *NAT) Ensure(ctx context.Context) error {
	if n.backend == BackendNft {
		return n.nftApply(ctx, n.nftScript())
	}
	if err := n.ipt(ctx, "-C"); err == nil {
		return nil
	}
	return n.ipt(ctx, "-A")
}

// Remove deletes the rule Ensure added (every copy); absent is fine.
func (n *NAT) Remove(ctx context.Context) error {
	if n.backend == BackendNft {
		return n.nftApply(ctx, fmt.Sprintf("table ip %[1]s\ndelete table ip %[1]s\n", nftTable))
	}
	for i := 0; i < 16; i++ {
		if err := n.ipt(ctx, "-C"); err != nil {
			return nil // no (more) copies
		}
		if err := n.ipt(ctx, "-D"); err != nil {
			return err
		}
	}
	return fmt.Errorf("hostnat: the masquerade rule of %s is still present after 16 deletions", n.subnet)
}

// nftApply feeds script to nft on stdin.
func (n *NAT) nftApply(ctx context.Context, script string) error {
	out, err := n.run(ctx, "sh", "-c", "printf '%s' \"$1\" | nft -f -", "sh", script)
	if err != nil {
		return fmt.Errorf("nft -f: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
