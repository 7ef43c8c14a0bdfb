// Command nc is the part of OpenBSD netcat's client the upstream Kubernetes
// e2e cases run inside the agnhost image (`echo hostName | nc -v -t -w 2
// HOST PORT`, `-u` for UDP, `-W N`, `-p PORT`): scripts/k8s-e2e.sh puts it
// into the image, whose busybox nc lacks -u, -v and -t (docs/k8s.md,
// "Upstream e2e suites"). It sends standard input to HOST:PORT and copies
// what comes back to standard output until the peer closes, -W packets
// arrived, or nothing came for -w seconds. The exit status is 1 when the
// connection could not be made.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "nc:", err)
		os.Exit(1)
	}
}

func run(args []string, in io.Reader, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("nc", flag.ContinueOnError)
	verbose := fs.Bool("v", false, "report the connection on standard error")
	fs.Bool("t", false, "ignored (telnet negotiation)")
	udp := fs.Bool("u", false, "UDP instead of TCP")
	wait := fs.Int("w", 0, "connect timeout and idle timeout in seconds (0: none for the idle)")
	packets := fs.Int("W", 0, "quit after this many packets came back (0: no limit)")
	lport := fs.Int("p", 0, "local port")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return errors.New("usage: nc [-v] [-t] [-u] [-w SEC] [-W N] [-p PORT] HOST PORT")
	}
	network := "tcp"
	if *udp {
		network = "udp"
	}
	idle := time.Duration(*wait) * time.Second
	d := net.Dialer{Timeout: idle}
	if *lport != 0 {
		if *udp {
			d.LocalAddr = &net.UDPAddr{Port: *lport}
		} else {
			d.LocalAddr = &net.TCPAddr{Port: *lport}
		}
	}
	addr := net.JoinHostPort(fs.Arg(0), fs.Arg(1))
	ctx := context.Background()
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return fmt.Errorf("connect to %s (%s): %w", addr, network, err)
	}
	defer conn.Close()
	if *verbose {
		port, _ := strconv.Atoi(fs.Arg(1))
		fmt.Fprintf(errOut, "Connection to %s %d port [%s] succeeded!\n", fs.Arg(0), port, network)
	}
	go func() {
		// Standard input to the peer; closing the connection ends it.
		buf := make([]byte, 64<<10)
		for {
			n, rerr := in.Read(buf)
			if n > 0 {
				if _, werr := conn.Write(buf[:n]); werr != nil {
					return
				}
			}
			if rerr != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for got := 0; *packets == 0 || got < *packets; got++ {
		if idle > 0 {
			_ = conn.SetReadDeadline(time.Now().Add(idle))
		}
		n, rerr := conn.Read(buf)
		if n > 0 {
			if _, werr := out.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if rerr != nil {
			var ne net.Error
			if errors.Is(rerr, io.EOF) || errors.As(rerr, &ne) && ne.Timeout() {
				return nil
			}
			if *udp {
				return nil // a refused datagram: nothing came back, as OpenBSD nc
			}
			return rerr
		}
	}
	return nil
}
