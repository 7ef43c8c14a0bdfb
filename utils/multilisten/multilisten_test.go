package multilisten

import (
	"errors"
	"io"
	"net"
	"testing"
)

// TestListen: the listener opens each given address once (not every
// interface) and accepts from all of them; Close ends everything.
func TestListen(t *testing.T) {
	ln, err := Listen([]string{"127.0.0.1", "127.0.0.2", "127.0.0.1", ""}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	ml, ok := ln.(*multiListener)
	if !ok || len(ml.lns) != 2 {
		t.Fatalf("got %T with %d listeners, want 2", ln, len(ml.lns))
	}
	for _, l := range ml.lns {
		if ip := l.Addr().(*net.TCPAddr).IP; ip.IsUnspecified() {
			t.Fatalf("listener on %v", ip)
		}
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		got, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if got.LocalAddr().String() != l.Addr().String() {
			t.Errorf("accepted on %v, dialled %v", got.LocalAddr(), l.Addr())
		}
		got.Close()
		_, _ = io.ReadAll(c)
		c.Close()
	}
	ln.Close()
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v", err)
	}
	if _, err := Listen(nil, 0, nil); err == nil {
		t.Error("no address accepted")
	}
}
