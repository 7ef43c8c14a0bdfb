// Command kubepod is the workload of the testbed cluster's pods
// (docs/testbed.md, "Kubernetes cluster"), packed into a local image:
//
//	kubepod serve [-http :8080] [-echo 7000] [-lifetime 1h]
//	kubepod check [-lookup name]... [-tcp host:port]... [-udp host:port]... [-http url]... [-timeout 60s]
//
// serve answers HTTP on /healthz and /readyz (the kubelet's probes) and
// /name (the pod's name, from $POD_NAME), and runs the TCP and UDP echo of
// package trafficprobe on the echo port; it stops after its lifetime.
// check resolves names through the pod's /etc/resolv.conf (the cluster DNS),
// exchanges one echo with each TCP and UDP address and GETs each URL,
// retrying each until it succeeds or the timeout passes; it writes what it
// found to /dev/termination-log (the pod's termination message) and exits
// non-zero when a check failed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/contiv/netplugin/test/trafficprobe"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kubepod:", err)
		os.Exit(1)
	}
}

// list is a repeatable string flag.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: kubepod serve|check [flags]")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	fs := flag.NewFlagSet("kubepod "+args[0], flag.ContinueOnError)
	switch args[0] {
	case "serve":
		httpAddr := fs.String("http", ":8080", "HTTP address of the probes")
		echo := fs.Int("echo", 7000, "TCP and UDP echo port")
		life := fs.Duration("lifetime", time.Hour, "stop after this long")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, *life)
		defer cancel()
		return serve(ctx, *httpAddr, *echo)
	case "check":
		var lookups, tcps, udps, urls list
		fs.Var(&lookups, "lookup", "name to resolve (repeatable)")
		fs.Var(&tcps, "tcp", "TCP echo address (repeatable)")
		fs.Var(&udps, "udp", "UDP echo address (repeatable)")
		fs.Var(&urls, "http", "URL to GET (repeatable)")
		timeout := fs.Duration("timeout", time.Minute, "give up on a check after this long")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return check(ctx, lookups, tcps, udps, urls, *timeout)
	}
	return fmt.Errorf("unknown command %q", args[0])
}

func serve(ctx context.Context, httpAddr string, echo int) error {
	port := fmt.Sprint(echo)
	srv, err := trafficprobe.Listen([]string{":" + port}, []string{":" + port})
	if err != nil {
		return err
	}
	go srv.Serve(ctx)
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") }
	mux.HandleFunc("/healthz", ok)
	mux.HandleFunc("/readyz", ok)
	mux.HandleFunc("/name", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, os.Getenv("POD_NAME")+"\n") })
	hs := &http.Server{Addr: httpAddr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	fmt.Println("ready")
	if err := hs.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http: %w", err)
	}
	return nil
}

// check runs every check (each retried until it passes or timeout ends)
// and reports them all.
func check(ctx context.Context, lookups, tcps, udps, urls []string, timeout time.Duration) error {
	var report []string
	failed := false
	try := func(what string, f func(ctx context.Context) (string, error)) {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var last error
		for {
			actx, acancel := context.WithTimeout(cctx, 5*time.Second)
			res, err := f(actx)
			acancel()
			if err == nil {
				report = append(report, fmt.Sprintf("ok %s %s", what, res))
				return
			}
			last = err
			select {
			case <-cctx.Done():
				failed = true
				report = append(report, fmt.Sprintf("fail %s: %v", what, last))
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	for _, name := range lookups {
		try("lookup "+name, func(ctx context.Context) (string, error) {
			addrs, err := net.DefaultResolver.LookupHost(ctx, name)
			return strings.Join(addrs, ","), err
		})
	}
	for _, a := range tcps {
		try("tcp "+a, func(ctx context.Context) (string, error) {
			return "", trafficprobe.TCPEcho(ctx, a, trafficprobe.Payload(64))
		})
	}
	for _, a := range udps {
		try("udp "+a, func(ctx context.Context) (string, error) {
			_, err := trafficprobe.UDPEcho(ctx, a, trafficprobe.Payload(32))
			return "", err
		})
	}
	for _, u := range urls {
		try("http "+u, func(ctx context.Context) (string, error) {
			return get(ctx, u)
		})
	}
	msg := strings.Join(report, "\n") + "\n"
	fmt.Print(msg)
	os.WriteFile("/dev/termination-log", []byte(msg), 0o644)
	if failed {
		return errors.New("a check failed")
	}
	return nil
}

// get fetches url and answers the first line of the body; any status
// below 500 counts (the API server answers 401/403 to an anonymous
// client, which still proves the path).
func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	tr := &http.Transport{TLSClientConfig: insecureTLS()}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode >= 500 {
		return "", fmt.Errorf("%s", resp.Status)
	}
	return fmt.Sprintf("%s %s", resp.Status, strings.SplitN(string(body), "\n", 2)[0]), nil
}
