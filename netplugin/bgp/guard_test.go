package bgp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

func TestCheckHeader(t *testing.T) {
	good := map[string][]byte{
		"OPEN":          bgpMsg(1, 29),
		"UPDATE":        bgpMsg(2, 23),
		"largest":       bgpMsg(2, 4096),
		"NOTIFICATION":  bgpMsg(3, 21),
		"KEEPALIVE":     bgpMsg(4, 19),
		"ROUTE-REFRESH": bgpMsg(5, 23),
	}
	for name, h := range good {
		n, err := checkHeader(h[:headerLen])
		if want := int(h[16])<<8 | int(h[17]); err != nil || n != want {
			t.Errorf("%s: checkHeader = %d, %v; want %d", name, n, err, want)
		}
	}
	bad := map[string]struct {
		h       []byte
		subcode byte
		data    []byte
	}{
		"marker":              {append([]byte{0xfe}, bgpMsg(4, -1)[1:]...), subNotSynchronized, nil},
		"HTTP":                {[]byte("GET / HTTP/1.1\r\nHost: x\r\n"), subNotSynchronized, nil},
		"length 0":            {bgpMsg(4, 0), subBadLength, []byte{0, 0}},
		"length 18":           {bgpMsg(4, 18), subBadLength, []byte{0, 18}},
		"length 4097":         {bgpMsg(2, 4097), subBadLength, []byte{0x10, 0x01}},
		"length 65535":        {bgpMsg(9, 65535), subBadLength, []byte{0xff, 0xff}},
		"OPEN of 28":          {bgpMsg(1, 28), subBadLength, []byte{0, 28}},
		"UPDATE of 22":        {bgpMsg(2, 22), subBadLength, []byte{0, 22}},
		"NOTIFICATION of 20":  {bgpMsg(3, 20), subBadLength, []byte{0, 20}},
		"KEEPALIVE of 20":     {bgpMsg(4, 20), subBadLength, []byte{0, 20}},
		"ROUTE-REFRESH of 24": {bgpMsg(5, 24), subBadLength, []byte{0, 24}},
		"type 0":              {bgpMsg(0, 19), subBadType, []byte{0}},
		"type 6":              {bgpMsg(6, 40), subBadType, []byte{6}},
		"type 255":            {bgpMsg(255, 19), subBadType, []byte{255}},
	}
	for name, c := range bad {
		_, err := checkHeader(c.h[:headerLen])
		var he *headerError
		if !errors.As(err, &he) || he.subcode != c.subcode || !bytes.Equal(he.data, c.data) {
			t.Errorf("%s: checkHeader error %#v, want subcode %d data %v", name, err, c.subcode, c.data)
			continue
		}
		n := he.notification()
		if want := append(bgpMsg(3, -1, errMsgHeader, c.subcode), c.data...); !bytes.Equal(n[:16], want[:16]) ||
			int(n[16])<<8|int(n[17]) != len(n) || !bytes.Equal(n[18:], append([]byte{3, errMsgHeader, c.subcode}, c.data...)) {
			t.Errorf("%s: NOTIFICATION % x", name, n)
		}
		if _, err := checkHeader(n[:headerLen]); err != nil {
			t.Errorf("%s: our own NOTIFICATION fails the check: %v", name, err)
		}
	}
	if _, err := checkHeader(bgpMsg(4, -1)[:10]); err == nil {
		t.Error("a short header was accepted")
	}
}

// TestGuard runs the guard in front of a stand-in for GoBGP: checked
// messages from the neighbor reach it whole, a malformed one gets the
// neighbor a NOTIFICATION and both connections closed, and a connection
// from another address is closed at once. Loopback only.
func TestGuard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	backend, err := net.Listen("tcp", net.JoinHostPort(gobgpAddr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	log := logrus.New()
	log.SetOutput(io.Discard)
	g, err := listenGuard(netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2"), 0, 179, log)
	if err != nil {
		t.Fatal(err)
	}
	gctx, stop := context.WithCancel(ctx)
	served := make(chan struct{})
	go func() {
		defer close(served)
		g.serve(gctx, backend.Addr().String())
	}()
	defer func() { stop(); <-served }()
	outer := g.outer.Addr().String()

	dial := func(from string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}
		c, err := d.DialContext(ctx, "tcp", outer)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		return c
	}

	t.Run("another address is closed", func(t *testing.T) {
		c := dial("127.0.0.9")
		defer c.Close()
		if n, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatalf("read %d bytes from the guard, want the connection closed", n)
		}
	})

	for name, c := range map[string]struct {
		bad     []byte
		subcode byte
	}{
		"unknown type": {bgpMsg(7, -1, 1, 2), subBadType},
		"bad length":   {bgpMsg(4, 18), subBadLength},
		"bad marker":   {append([]byte{0}, bgpMsg(4, -1)[1:]...), subNotSynchronized},
	} {
		t.Run(name, func(t *testing.T) {
			nc := dial("127.0.0.2")
			defer nc.Close()
			bl, ok := backend.(*net.TCPListener)
			if !ok {
				t.Fatal("backend is not TCP")
			}
			_ = bl.SetDeadline(time.Now().Add(5 * time.Second))
			bc, err := backend.Accept()
			if err != nil {
				t.Fatalf("the guard did not connect to GoBGP: %v", err)
			}
			defer bc.Close()
			_ = bc.SetDeadline(time.Now().Add(5 * time.Second))
			if got := bc.RemoteAddr().(*net.TCPAddr).IP.String(); got != guardAddr {
				t.Fatalf("the guard connects to GoBGP from %s, want %s", got, guardAddr)
			}
			// A whole OPEN and KEEPALIVE, written in pieces, arrive as they are.
			valid := append(openFrom(), bgpMsg(4, -1)...)
			for i := 0; i < len(valid); i += 7 {
				if _, err := nc.Write(valid[i:min(i+7, len(valid))]); err != nil {
					t.Fatal(err)
				}
			}
			got := make([]byte, len(valid))
			if _, err := io.ReadFull(bc, got); err != nil || !bytes.Equal(got, valid) {
				t.Fatalf("GoBGP got % x, %v; want % x", got, err, valid)
			}
			// GoBGP's messages reach the neighbor.
			ka := bgpMsg(4, -1)
			if _, err := bc.Write(ka); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(nc, got[:len(ka)]); err != nil || !bytes.Equal(got[:len(ka)], ka) {
				t.Fatalf("the neighbor got % x, %v; want a KEEPALIVE", got[:len(ka)], err)
			}
			if _, err := nc.Write(c.bad); err != nil {
				t.Fatal(err)
			}
			rest, err := io.ReadAll(nc)
			if err != nil {
				t.Fatalf("read the neighbor's side: %v", err)
			}
			if len(rest) < 21 || rest[18] != msgNotification || rest[19] != errMsgHeader || rest[20] != c.subcode {
				t.Fatalf("the neighbor got % x, want a NOTIFICATION (1, %d)", rest, c.subcode)
			}
			if n, err := bc.Read(got); err == nil {
				t.Fatalf("GoBGP's side read %d more bytes (% x), want it closed", n, got[:n])
			}
		})
	}
}

// TestSpeakersThroughGuards: two speakers, each behind its guard, bring
// their session up and exchange a route. Loopback only.
func TestSpeakersThroughGuards(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pa, pb := freePort(t), freePort(t)
	log := logrus.New()
	log.SetOutput(io.Discard)
	learned := make(chan netip.Prefix, 4)
	a, err := Start(ctx, Config{RouterIP: netip.MustParsePrefix("127.0.0.1/8"), AS: 65001,
		Neighbor: netip.MustParseAddr("127.0.0.3"), NeighborAS: 65002},
		Options{ListenPort: pa, NeighborPort: pb}, Events{}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	b, err := Start(ctx, Config{RouterIP: netip.MustParsePrefix("127.0.0.3/8"), AS: 65002,
		Neighbor: netip.MustParseAddr("127.0.0.1"), NeighborAS: 65001},
		Options{ListenPort: pb, NeighborPort: pa, Passive: true}, Events{Route: func(p netip.Prefix, add bool) {
			if add {
				learned <- p
			}
		}}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	if err := a.Announce(ctx, netip.MustParseAddr("198.19.2.1")); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-learned:
		if p.String() != "198.19.2.1/32" {
			t.Fatalf("learned %s, want 198.19.2.1/32", p)
		}
	case <-ctx.Done():
		t.Fatalf("no route learned through the guards; state %+v / %+v", a.State(ctx), b.State(ctx))
	}
	st := b.State(ctx)
	if len(st.Neighbors) != 1 || st.Neighbors[0].Address != "127.0.0.1" || st.Neighbors[0].State != "ESTABLISHED" {
		t.Fatalf("state: %+v", st)
	}
}

// FuzzCheckHeader: any 19 bytes are accepted as a valid header or refused
// with a NOTIFICATION that itself passes the check; never a panic.
func FuzzCheckHeader(f *testing.F) {
	f.Add(bgpMsg(4, -1))
	f.Add(bgpMsg(1, 29))
	f.Add(bgpMsg(7, 19))
	f.Add(bgpMsg(2, 4097))
	f.Add([]byte("GET / HTTP/1.1\r\nHost"))
	f.Fuzz(func(t *testing.T, h []byte) {
		n, err := checkHeader(h)
		if err == nil {
			if n < headerLen || n > maxMsgLen || h[18] < msgOpen || h[18] > msgRouteRefresh {
				t.Fatalf("accepted % x as a message of %d bytes", h, n)
			}
			return
		}
		var he *headerError
		if !errors.As(err, &he) {
			if len(h) >= headerLen {
				t.Fatalf("% x: %v without a NOTIFICATION", h, err)
			}
			return
		}
		msg := he.notification()
		if m, err := checkHeader(msg); err != nil || m != len(msg) {
			t.Fatalf("NOTIFICATION % x for % x fails the check: %d, %v", msg, h, m, err)
		}
	})
}
