package hostnat

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// fakeIPTables keeps a list of nat POSTROUTING rules and answers -C, -A, -D.
type fakeIPTables struct{ rules [][]string }

func (f *fakeIPTables) run(_ context.Context, name string, args ...string) ([]byte, error) {
	if name != "iptables" || len(args) < 5 {
		return nil, errors.New("unexpected command " + name)
	}
	op, rule := args[4], args[5:]
	i := slices.IndexFunc(f.rules, func(r []string) bool { return slices.Equal(r, rule) })
	switch op {
	case "-C":
		if i < 0 {
			return []byte("rule does not exist"), errors.New("exit status 1")
		}
	case "-A":
		f.rules = append(f.rules, rule)
	case "-D":
		if i < 0 {
			return nil, errors.New("exit status 1")
		}
		f.rules = slices.Delete(f.rules, i, i+1)
	}
	return nil, nil
}

func TestIPTablesIdempotent(t *testing.T) {
	f := &fakeIPTables{}
	n, err := New(Config{Subnet: "172.19.0.0/16", HostIf: "contivh0", Backend: BackendIPTables, Run: f.run})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := n.Ensure(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.rules) != 1 || !strings.Contains(strings.Join(f.rules[0], " "), "-s 172.19.0.0/16 ! -o contivh0 -m comment --comment contiv-host-access -j MASQUERADE") {
		t.Fatalf("rules after three Ensure: %v", f.rules)
	}
	f.rules = append(f.rules, f.rules[0]) // a copy someone else added
	for i := 0; i < 2; i++ {
		if err := n.Remove(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.rules) != 0 {
		t.Fatalf("rules after Remove: %v", f.rules)
	}
}

func TestDetectAndBadInput(t *testing.T) {
	none := func(string) (string, error) { return "", errors.New("not found") }
	onlyNft := func(p string) (string, error) {
		if p == "nft" {
			return "/usr/sbin/nft", nil
		}
		return "", errors.New("not found")
	}
	if _, err := New(Config{Subnet: "172.19.0.0/16", HostIf: "contivh0", LookPath: none}); !errors.Is(err, ErrNoTool) {
		t.Errorf("no tool: %v", err)
	}
	n, err := New(Config{Subnet: "172.19.0.0/16", HostIf: "contivh0", LookPath: onlyNft})
	if err != nil || n.Backend() != BackendNft {
		t.Errorf("only nft: %v %v", n, err)
	}
	if !strings.Contains(n.nftScript(), `ip saddr 172.19.0.0/16 oifname != "contivh0" masquerade`) {
		t.Errorf("nft script:\n%s", n.nftScript())
	}
	for _, c := range []Config{
		{Subnet: "x", HostIf: "contivh0"},
		{Subnet: "fd00::/16", HostIf: "contivh0"},
		{Subnet: "172.19.0.0/16", HostIf: ""},
		{Subnet: "172.19.0.0/16", HostIf: "a\"b"},
		{Subnet: "172.19.0.0/16", HostIf: "contivh0", Backend: "pf"},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
}
