package nameserver

import (
	"net"
	"sort"
	"testing"

	"github.com/miekg/dns"
)

func query(t testing.TB, name string, qtype uint16) []byte {
	var m dns.Msg
	m.SetQuestion(dns.Fqdn(name), qtype)
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func answers(t *testing.T, b []byte) []string {
	t.Helper()
	var m dns.Msg
	if err := m.Unpack(b); err != nil {
		t.Fatalf("unpack answer: %v", err)
	}
	if !m.Authoritative || !m.RecursionAvailable || !m.Response {
		t.Errorf("answer flags: aa=%v ra=%v qr=%v", m.Authoritative, m.RecursionAvailable, m.Response)
	}
	var out []string
	for _, rr := range m.Answer {
		if rr.Header().Ttl != TTL {
			t.Errorf("TTL %d", rr.Header().Ttl)
		}
		switch r := rr.(type) {
		case *dns.A:
			out = append(out, r.A.String())
		case *dns.AAAA:
			out = append(out, r.AAAA.String())
		}
	}
	sort.Strings(out)
	return out
}

func sample() *Server {
	s := New()
	s.SetEndpoint(Endpoint{ID: "e1", Tenant: "t1", Name: "/web1", Group: "web", IPv4: net.ParseIP("198.19.1.1")})
	s.SetEndpoint(Endpoint{ID: "e2", Tenant: "t1", Name: "web2", Group: "web", IPv4: net.ParseIP("198.19.1.2"), IPv6: net.ParseIP("2001:db8::2")})
	s.SetEndpoint(Endpoint{ID: "e3", Tenant: "t2", Name: "web1", IPv4: net.ParseIP("198.19.9.1")})
	s.SetService("t1", "api", "198.19.1.100")
	return s
}

func TestLookup(t *testing.T) {
	s := sample()
	for _, tc := range []struct {
		tenant, name string
		qtype        uint16
		want         []string
		answered     bool
	}{
		{"t1", "web1", dns.TypeA, []string{"198.19.1.1"}, true},
		{"t1", "WEB1.", dns.TypeA, []string{"198.19.1.1"}, true},
		{"t2", "web1", dns.TypeA, []string{"198.19.9.1"}, true},
		{"t1", "web", dns.TypeA, []string{"198.19.1.1", "198.19.1.2"}, true},
		{"t1", "web", dns.TypeAAAA, []string{"2001:db8::2"}, true},
		{"t1", "api", dns.TypeA, []string{"198.19.1.100"}, true},
		{"t1", "api", dns.TypeAAAA, nil, true}, // known name, no record: empty authoritative answer
		{"t1", "web2", dns.TypeANY, []string{"198.19.1.2"}, true},
		{"t2", "api", dns.TypeA, nil, false}, // another tenant's service
		{"t1", "nosuch", dns.TypeA, nil, false},
		{"t3", "web1", dns.TypeA, nil, false},
	} {
		b, ok := s.Lookup(query(t, tc.name, tc.qtype), tc.tenant)
		if ok != tc.answered {
			t.Errorf("%s %s/%d: answered %v, want %v", tc.tenant, tc.name, tc.qtype, ok, tc.answered)
			continue
		}
		if !ok {
			continue
		}
		if got := answers(t, b); !equal(got, tc.want) {
			t.Errorf("%s %s/%d: %v, want %v", tc.tenant, tc.name, tc.qtype, got, tc.want)
		}
	}
	s.RemoveEndpoint("e1")
	s.SetService("t1", "api", "")
	if _, ok := s.Lookup(query(t, "web1", dns.TypeA), "t1"); ok {
		t.Error("a removed endpoint's name is still answered")
	}
	if _, ok := s.Lookup(query(t, "api", dns.TypeA), "t1"); ok {
		t.Error("a removed service is still answered")
	}
	b, _ := s.Lookup(query(t, "web", dns.TypeA), "t1")
	if got := answers(t, b); !equal(got, []string{"198.19.1.2"}) {
		t.Errorf("group after removal: %v", got)
	}
}

func TestLookupLimits(t *testing.T) {
	s := New()
	for i := 0; i < 30; i++ {
		s.SetEndpoint(Endpoint{ID: string(rune('a' + i)), Tenant: "t", Group: "big", IPv4: net.IPv4(198, 19, 2, byte(i+1))})
	}
	b, ok := s.Lookup(query(t, "big", dns.TypeA), "t")
	if !ok || len(answers(t, b)) != MaxRecords {
		t.Errorf("group of 30: answered %v with %d records, want %d", ok, len(answers(t, b)), MaxRecords)
	}
	for _, bad := range [][]byte{nil, {0}, []byte("not a dns message at all"), func() []byte {
		var m dns.Msg
		m.SetQuestion("big.", dns.TypeA)
		m.Response = true
		b, _ := m.Pack()
		return b
	}()} {
		if _, ok := s.Lookup(bad, "t"); ok {
			t.Errorf("Lookup(%x) answered", bad)
		}
	}
	if st := s.Inspect()["stats"].(map[string]map[string]uint64); st["t"]["invalidQuery"] != 4 || st["t"]["answered"] != 1 {
		t.Errorf("stats %v", st)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzLookup: no query may panic the name server, and every answer is a
// well-formed DNS response within the size limit.
func FuzzLookup(f *testing.F) {
	f.Add(query(f, "web1", dns.TypeA))
	f.Add(query(f, "web", dns.TypeAAAA))
	f.Add(query(f, "api", dns.TypeANY))
	f.Add([]byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 0x0c})
	s := sample()
	f.Fuzz(func(t *testing.T, q []byte) {
		b, ok := s.Lookup(q, "t1")
		if !ok {
			return
		}
		if len(b) > MaxAnswerSize {
			t.Fatalf("answer of %d bytes", len(b))
		}
		var m dns.Msg
		if err := m.Unpack(b); err != nil || !m.Response {
			t.Fatalf("bad answer %x: %v", b, err)
		}
	})
}
