package trafficprobe

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEchoOnLoopback(t *testing.T) {
	s, err := Listen([]string{"127.0.0.1:0"}, []string{"127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { s.Serve(sctx); close(done) }()
	defer func() { stop(); <-done }()

	tcpAddr, udpAddr := s.lns[0].Addr().String(), s.pcs[0].LocalAddr().String()
	for _, n := range []int{0, 5, 3 << 20} {
		if err := TCPEcho(ctx, tcpAddr, Payload(n)); err != nil {
			t.Errorf("TCPEcho(%d bytes): %v", n, err)
		}
	}
	// Nothing marks loopback traffic: the server reports TOS 0.
	tos, err := UDPEcho(ctx, udpAddr, []byte("probe"))
	if err != nil || tos != 0 {
		t.Errorf("UDPEcho = %#x, %v; want 0, nil", tos, err)
	}
}

func TestUDPNoAnswer(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0") // never answers
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	_, err = UDPEcho(ctx, pc.LocalAddr().String(), []byte("x"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("UDPEcho to a silent socket = %v, want a deadline error", err)
	}
}

func TestListenBadAddress(t *testing.T) {
	if _, err := Listen([]string{"127.0.0.1:0"}, []string{"not an address"}); err == nil {
		t.Error("Listen accepted a bad UDP address")
	}
}
