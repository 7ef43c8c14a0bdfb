package migrate

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// A Source reads the original's whole tree. Sources only read: every
// request they send is a GET.
type Source interface {
	Read(ctx context.Context) (*Tree, error)
	String() string
}

// maxSourceBytes bounds what a source may return (a cluster of 100 000
// endpoints is about 60 MB, test/bench/migrate).
const maxSourceBytes = 4 << 30

// FileSource reads a dump file: the etcd v2 answer of
// `curl 'http://HOST:2379/v2/keys/?recursive=true'` or `consul kv export contiv.io/`.
type FileSource struct{ Path string }

func (s FileSource) String() string { return "file " + s.Path }

// Read decodes the file.
func (s FileSource) Read(ctx context.Context) (*Tree, error) {
	data, err := os.ReadFile(s.Path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSource, err)
	}
	return DecodeDump(data)
}

// EtcdV2Source reads an etcd through its v2 keys API (etcd 2.x, or 3.x
// started with --enable-v2), as the original wrote it.
type EtcdV2Source struct {
	URL    string // e.g. http://127.0.0.1:2379
	Client *http.Client
}

func (s EtcdV2Source) String() string { return "etcd v2 " + s.URL }

// Read lists /contiv.io recursively with a quorum read.
func (s EtcdV2Source) Read(ctx context.Context) (*Tree, error) {
	base, err := checkURL(s.URL)
	if err != nil {
		return nil, err
	}
	data, status, err := get(ctx, s.Client, base+"/v2/keys/"+Root+"?recursive=true&sorted=true&quorum=true")
	if err != nil {
		return nil, err
	}
	if status == http.StatusNotFound {
		return nil, fmt.Errorf("%w: etcd at %s holds no /%s (is this the original's store, with the v2 API on?)", ErrSource, s.URL, Root)
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("%w: etcd at %s answered %d: %s", ErrSource, s.URL, status, snippet(data))
	}
	return DecodeEtcdV2(data)
}

// ConsulSource reads consul KV under contiv.io/.
type ConsulSource struct {
	Addr   string // host:port or http://host:port
	Client *http.Client
}

func (s ConsulSource) String() string { return "consul " + s.Addr }

// Read lists contiv.io/ recursively with a consistent read.
func (s ConsulSource) Read(ctx context.Context) (*Tree, error) {
	addr := s.Addr
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	base, err := checkURL(addr)
	if err != nil {
		return nil, err
	}
	data, status, err := get(ctx, s.Client, base+"/v1/kv/"+Root+"/?recurse=true&consistent=")
	if err != nil {
		return nil, err
	}
	if status == http.StatusNotFound {
		return nil, fmt.Errorf("%w: consul at %s holds no %s/", ErrSource, s.Addr, Root)
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("%w: consul at %s answered %d: %s", ErrSource, s.Addr, status, snippet(data))
	}
	return DecodeConsul(data)
}

func checkURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%w: source address %q: want http(s)://host:port", ErrSource, s)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

func get(ctx context.Context, c *http.Client, u string) ([]byte, int, error) {
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Minute}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrSource, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrSource, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxSourceBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: read %s: %w", ErrSource, u, err)
	}
	if len(data) > maxSourceBytes {
		return nil, 0, fmt.Errorf("%w: %s: answer larger than %d bytes", ErrSource, u, maxSourceBytes)
	}
	return data, resp.StatusCode, nil
}

func snippet(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
