package main

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/contiv/netplugin/utils/certgen"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"ca", "--dir", dir},
		{"master", "--dir", dir, "--ip", "198.18.1.1"},
		{"agent", "--dir", dir, "--host", "node1", "--ip", "198.18.0.11", "--ip", "198.18.1.11"},
	} {
		if err := run(args, io.Discard); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	if err := run([]string{"agent", "--dir", dir}, io.Discard); err == nil {
		t.Error("agent without --host accepted")
	}
	if err := run([]string{"agent", "--dir", dir, "--host", "h", "--ip", "x"}, io.Discard); err == nil {
		t.Error("bad --ip accepted")
	}
	if _, err := certgen.LoadCA(filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")); err != nil {
		t.Fatal(err)
	}
}
