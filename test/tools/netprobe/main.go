// Command netprobe sends and answers the application traffic of the tests
// and the quickstart (package trafficprobe) from inside a namespace:
//
//	netprobe serve [-tcp host:port,...] [-udp host:port,...] [-lifetime 10m]
//	netprobe tcp -addr host:port [-bytes N] [-timeout 10s]
//	netprobe udp -addr host:port [-timeout 5s]
//	netprobe watch -addr host:port [-interval 200ms] [-timeout 1s] [-duration 10m]
//
// serve prints "ready" once every socket listens and stops by itself after
// its lifetime. tcp sends N random bytes (default a 64-byte request) to the
// echo and checks the SHA-256 of what comes back; udp prints the TOS byte
// and DSCP the server saw. Both exit non-zero on failure. watch probes the
// echo continuously, a TCP exchange on a new connection and a UDP exchange
// every interval (each bounded by timeout), and prints one line per probe,
// "<unix ms at its start> tcp|udp ok|fail [error]", until its duration
// ends or it is interrupted.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
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
		n := fs.Int("bytes", 64, "bytes to send (tcp; udp: the datagram's payload, default a short text)")
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
		payload := []byte("netprobe udp")
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "bytes" {
				payload = trafficprobe.Payload(*n)
			}
		})
		tos, err := trafficprobe.UDPEcho(ctx, *addr, payload)
		if err != nil {
			return err
		}
		fmt.Printf("udp ok: echoed by %s, tos=%d dscp=%d\n", *addr, tos, tos>>2)
		return nil
	case "watch":
		addr := fs.String("addr", "", "server address host:port")
		every := fs.Duration("interval", 200*time.Millisecond, "time between probes of each protocol")
		timeout := fs.Duration("timeout", time.Second, "bound of one probe")
		dur := fs.Duration("duration", 10*time.Minute, "stop after this long")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *addr == "" {
			return fmt.Errorf("watch: -addr is required")
		}
		if *every <= 0 || *timeout <= 0 || *dur <= 0 {
			return fmt.Errorf("watch: -interval, -timeout and -duration must be positive")
		}
		return watch(*addr, *every, *timeout, *dur)
	}
	return fmt.Errorf("unknown command %q (want serve, tcp, udp or watch)", args[0])
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

// watch probes addr over TCP and UDP every interval until dur ends or a
// signal arrives, printing one line per probe.
func watch(addr string, every, timeout, dur time.Duration) error {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	ctx, cancel2 := context.WithTimeout(ctx, dur)
	defer cancel2()
	var mu sync.Mutex
	report := func(start time.Time, proto string, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			fmt.Printf("%d %s fail %s\n", start.UnixMilli(), proto, strings.ReplaceAll(err.Error(), "\n", " "))
			return
		}
		fmt.Printf("%d %s ok\n", start.UnixMilli(), proto)
	}
	probes := map[string]func(context.Context) error{
		"tcp": func(ctx context.Context) error { return trafficprobe.TCPEcho(ctx, addr, trafficprobe.Payload(64)) },
		"udp": func(ctx context.Context) error {
			_, err := trafficprobe.UDPEcho(ctx, addr, []byte("netprobe watch"))
			return err
		},
	}
	fmt.Println("ready")
	var wg sync.WaitGroup
	for proto, probe := range probes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				start := time.Now()
				pctx, pcancel := context.WithTimeout(ctx, timeout)
				err := probe(pctx)
				pcancel()
				if ctx.Err() != nil {
					return // cut short by the end: not a result
				}
				report(start, proto, err)
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		}()
	}
	wg.Wait()
	return nil
}
