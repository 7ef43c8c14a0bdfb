// Command netprobe sends and answers the application traffic of the tests
// and the quickstart (package trafficprobe) from inside a namespace:
//
//	netprobe serve [-tcp host:port,...] [-udp host:port,...] [-lifetime 10m]
//	netprobe tcp -addr host:port [-bytes N] [-timeout 10s]
//	netprobe udp -addr host:port [-timeout 5s]
//
// serve prints "ready" once every socket listens and stops by itself after
// its lifetime. tcp sends N random bytes (default a 64-byte request) to the
// echo and checks the SHA-256 of what comes back; udp prints the TOS byte
// and DSCP the server saw. Both exit non-zero on failure.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/contiv/netplugin/test/trafficprobe"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "netprobe:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: netprobe serve|tcp|udp [flags]")
	}
	fs := flag.NewFlagSet("netprobe "+args[0], flag.ContinueOnError)
	switch args[0] {
	case "serve":
		tcp := fs.String("tcp", "", "comma-separated TCP echo addresses")
		udp := fs.String("udp", "", "comma-separated UDP echo addresses")
		life := fs.Duration("lifetime", 10*time.Minute, "stop after this long")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return serve(split(*tcp), split(*udp), *life)
	case "tcp", "udp":
		addr := fs.String("addr", "", "server address host:port")
		n := fs.Int("bytes", 64, "bytes to send (tcp)")
		timeout := fs.Duration("timeout", 10*time.Second, "bound of the whole exchange")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *addr == "" {
			return fmt.Errorf("%s: -addr is required", args[0])
		}
		if *n < 0 {
			return fmt.Errorf("%s: -bytes %d is negative", args[0], *n)
		}
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		defer cancel()
		start := time.Now()
		if args[0] == "tcp" {
			if err := trafficprobe.TCPEcho(ctx, *addr, trafficprobe.Payload(*n)); err != nil {
				return err
			}
			fmt.Printf("tcp ok: %d bytes echoed by %s, SHA-256 matches (%v)\n", *n, *addr, time.Since(start).Round(time.Millisecond))
			return nil
		}
		tos, err := trafficprobe.UDPEcho(ctx, *addr, []byte("netprobe udp"))
		if err != nil {
			return err
		}
		fmt.Printf("udp ok: echoed by %s, tos=%d dscp=%d\n", *addr, tos, tos>>2)
		return nil
	}
	return fmt.Errorf("unknown command %q (want serve, tcp or udp)", args[0])
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func serve(tcp, udp []string, life time.Duration) error {
	if len(tcp)+len(udp) == 0 {
		return fmt.Errorf("serve: give -tcp or -udp")
	}
	s, err := trafficprobe.Listen(tcp, udp)
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	ctx, cancel2 := context.WithTimeout(ctx, life)
	defer cancel2()
	fmt.Println("ready")
	s.Serve(ctx)
	return nil
}
