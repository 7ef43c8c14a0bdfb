package unixctl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeServer answers each request with reply(method, params).
func fakeServer(t *testing.T, reply func(req request) string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ctl")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			var req request
			if err := json.NewDecoder(bufio.NewReader(c)).Decode(&req); err == nil {
				c.Write([]byte(reply(req)))
			}
			c.Close()
		}
	}()
	return path
}

func TestCall(t *testing.T) {
	path := fakeServer(t, func(req request) string {
		switch req.Method {
		case "ofproto/trace":
			b, _ := json.Marshal(map[string]any{"id": req.ID, "result": "bridge " + strings.Join(req.Params, " "), "error": nil})
			return string(b)
		case "garbage":
			return "{not json"
		}
		return `{"id":0,"result":null,"error":"\"` + req.Method + `\" is not a valid command\n"}`
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := Call(ctx, path, "ofproto/trace", "br0", "in_port=1")
	if err != nil || got != "bridge br0 in_port=1" {
		t.Fatalf("Call = %q, %v", got, err)
	}
	if _, err := Call(ctx, path, "nope"); !errors.Is(err, ErrCommand) || !strings.Contains(err.Error(), `"nope" is not a valid command`) {
		t.Fatalf("refused command: %v", err)
	}
	if _, err := Call(ctx, path, "garbage"); err == nil {
		t.Fatal("garbage reply accepted")
	}
	if _, err := Call(ctx, filepath.Join(t.TempDir(), "missing"), "x"); err == nil || !strings.Contains(err.Error(), "connect to") {
		t.Fatalf("missing socket: %v", err)
	}
}

func FuzzReadReply(f *testing.F) {
	f.Add(`{"id":0,"result":"ok","error":null}`)
	f.Add(`{"id":0,"result":null,"error":"bad"}`)
	f.Add(`{"id":0,"result":5}`)
	f.Fuzz(func(t *testing.T, in string) {
		_, _ = readReply(strings.NewReader(in))
	})
}
