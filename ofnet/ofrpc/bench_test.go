package ofrpc_test

import (
	"context"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"testing"

	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// BenchmarkCall is one Pool call of a rule over loopback, served by
// ServeLimits and, for comparison, by the standard library's JSON-RPC codec
// without limits: the cost of framing each request before decoding it.
func BenchmarkCall(b *testing.B) {
	r := ofrpc.OfnetPolicyRule{RuleId: "t1:g1:t1:p1:t1:p1:1:inRx", Priority: 10, SrcEndpointGroup: 3, DstEndpointGroup: 4,
		IpProtocol: 6, DstPort: 80, TcpFlags: "syn,!ack", Action: "allow", SrcEndpointGroupName: "t1:g0"}
	for _, c := range []struct {
		name  string
		serve func(ctx context.Context, ln net.Listener, svc any)
	}{
		{"ServeLimits", func(ctx context.Context, ln net.Listener, svc any) {
			ofrpc.ServeLimits(ctx, ln, map[string]any{"Echo": svc}, ofrpc.Limits{})
		}},
		{"stdlib-jsonrpc", func(ctx context.Context, ln net.Listener, svc any) {
			srv := rpc.NewServer()
			srv.RegisterName("Echo", svc)
			context.AfterFunc(ctx, func() { ln.Close() })
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				go srv.ServeCodec(jsonrpc.NewServerCodec(conn))
			}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				c.serve(ctx, ln, &echo{stop: ctx.Done(), blocked: make(chan struct{}, 1)})
			}()
			p := ofrpc.NewPool()
			var out ofrpc.OfnetPolicyRule
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := p.Call(ctx, ln.Addr().String(), "Echo.Rule", r, &out); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			p.Close()
			cancel()
			<-done
		})
	}
}
