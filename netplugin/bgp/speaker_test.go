package bgp

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/state"
)

func TestParseConfig(t *testing.T) {
	good := state.Bgp{Hostname: "h", RouterIP: "198.18.50.11/24", As: "65001", NeighborAs: "65000", Neighbor: "198.18.50.1"}
	c, err := ParseConfig(good)
	if err != nil || c.AS != 65001 || c.NeighborAS != 65000 || c.Neighbor.String() != "198.18.50.1" || c.RouterIP.String() != "198.18.50.11/24" {
		t.Fatalf("ParseConfig(good) = %+v, %v", c, err)
	}
	for _, mut := range []func(*state.Bgp){
		func(b *state.Bgp) { b.RouterIP = "198.18.50.11" },
		func(b *state.Bgp) { b.RouterIP = "198.18.50.11/32" },
		func(b *state.Bgp) { b.RouterIP = "fd00::1/64" },
		func(b *state.Bgp) { b.Neighbor = "198.18.51.1" }, // not on the router subnet
		func(b *state.Bgp) { b.Neighbor = "198.18.50.11" },
		func(b *state.Bgp) { b.Neighbor = "" },
		func(b *state.Bgp) { b.As = "0" },
		func(b *state.Bgp) { b.As = "4294967295" },
		func(b *state.Bgp) { b.NeighborAs = "x" },
	} {
		b := good
		mut(&b)
		if _, err := ParseConfig(b); err == nil {
			t.Errorf("ParseConfig(%+v) accepted", b)
		}
	}
}

// freePort finds a free TCP port on 127.0.0.1.
func freePort(t *testing.T) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return int32(l.Addr().(*net.TCPAddr).Port)
}

// bgpMsg builds a BGP message: marker, length (the real one unless given),
// type and body.
func bgpMsg(typ byte, length int, body ...byte) []byte {
	b := make([]byte, 16, 19+len(body))
	for i := range b {
		b[i] = 0xff
	}
	if length < 0 {
		length = 19 + len(body)
	}
	b = binary.BigEndian.AppendUint16(b, uint16(length))
	return append(append(b, typ), body...)
}

// openFrom is a valid OPEN of AS 65000, hold time 9, id 127.0.0.2.
func openFrom() []byte { return bgpMsg(1, -1, 4, 0xfd, 0xe8, 0, 9, 127, 0, 0, 2, 0) }

// TestGarbageNeighbor: a neighbor that sends garbage instead of BGP, before
// or after a valid OPEN (random bytes, bad lengths, a truncated OPEN, an
// unknown message type, broken UPDATEs), only gets its session closed; the
// speaker keeps running and announcing. GoBGP v3.37.0 alone panics on a
// message of an unknown type; the framing guard in front of it stops that
// one (docs/dataplane.md §3.4). One speaker per case (a speaker holds a
// failed neighbor idle for a while); loopback only.
func TestGarbageNeighbor(t *testing.T) {
	random := make([]byte, 4096)
	_, _ = rand.Read(random)
	keepalive := bgpMsg(4, -1)
	cases := map[string][][]byte{
		"random bytes":             {random},
		"length below the header":  {bgpMsg(1, 0)},
		"length above the maximum": {bgpMsg(1, 65535)},
		"OPEN cut short":           {bgpMsg(1, 29, 4)},
		"HTTP":                     {[]byte("GET / HTTP/1.1\r\n\r\n")},
		"UPDATE with an impossible withdrawn length": {openFrom(), keepalive, bgpMsg(2, -1, 0xff, 0xff, 0, 0)},
		"UPDATE with a bad attribute":                {openFrom(), keepalive, bgpMsg(2, -1, 0, 0, 0, 4, 0x40, 1, 9, 9, 24, 198, 19, 2)},
		"UPDATE with a /40 prefix":                   {openFrom(), keepalive, bgpMsg(2, -1, 0, 0, 0, 0, 40, 1, 2, 3, 4, 5)},
		"random after OPEN":                          {openFrom(), keepalive, random},
		"unknown type before OPEN":                   {bgpMsg(7, -1)},
		"unknown type after OPEN":                    {openFrom(), keepalive, bgpMsg(6, -1, 1, 2, 3)},
		"type 0 after OPEN":                          {openFrom(), keepalive, bgpMsg(0, -1)},
	}
	for name, msgs := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			garbageCase(t, msgs)
		})
	}
}

func garbageCase(t *testing.T, msgs [][]byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	port := freePort(t)
	cfg := Config{RouterIP: netip.MustParsePrefix("127.0.0.1/8"), AS: 65001,
		Neighbor: netip.MustParseAddr("127.0.0.2"), NeighborAS: 65000}
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	sp, err := Start(ctx, cfg, Options{ListenPort: port, Passive: true}, Events{}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Stop()
	for ctx.Err() == nil { // wait until the neighbor's connection is accepted
		if st := sp.State(ctx); len(st.Neighbors) == 1 && st.Neighbors[0].State == "ACTIVE" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 2 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(int(port)))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	for _, m := range msgs {
		if _, err := conn.Write(m); err != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	buf := make([]byte, 4096)
	for { // read until the speaker closes the session (or the deadline: some garbage is only discarded)
		if _, err := conn.Read(buf); err != nil {
			break
		}
	}
	if err := sp.Announce(ctx, netip.MustParseAddr("198.19.2.1")); err != nil {
		t.Fatalf("announce after garbage: %v", err)
	}
	st := sp.State(ctx)
	if len(st.Neighbors) != 1 || st.Neighbors[0].Address != "127.0.0.2" || len(st.Announced) != 1 {
		t.Fatalf("state after garbage: %+v", st)
	}
	if err := sp.Withdraw(ctx, netip.MustParseAddr("198.19.2.1")); err != nil {
		t.Fatal(err)
	}
}
