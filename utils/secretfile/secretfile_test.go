package secretfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadModes(t *testing.T) {
	for _, tc := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o600, true}, {0o400, true}, {0o700, true}, {0o640, false}, {0o604, false}, {0o644, false}, {0o620, false}, {0o666, false}} {
		p := write(t, "s3cret\n", tc.mode)
		_, err := Read(p)
		if tc.ok && err != nil {
			t.Errorf("mode %#o: %v", tc.mode, err)
		}
		if !tc.ok {
			if !errors.Is(err, ErrMode) {
				t.Errorf("mode %#o: want ErrMode, got %v", tc.mode, err)
			} else if !strings.Contains(err.Error(), "chmod 600") || !strings.Contains(err.Error(), p) {
				t.Errorf("mode %#o: message does not say how to fix it: %v", tc.mode, err)
			}
		}
	}
}

func TestReadToken(t *testing.T) {
	if tok, err := ReadToken(write(t, "  abc-def\n", 0o600)); err != nil || tok != "abc-def" {
		t.Fatalf("ReadToken = %q, %v", tok, err)
	}
	if _, err := ReadToken(write(t, "\n \n", 0o600)); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty file: %v", err)
	}
	if _, err := ReadToken(write(t, "a\nb\n", 0o600)); err == nil || !strings.Contains(err.Error(), "more than one line") {
		t.Fatalf("two lines: %v", err)
	}
	if _, err := ReadToken(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := Read(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("directory: %v", err)
	}
}

func TestReadTooLarge(t *testing.T) {
	p := write(t, strings.Repeat("x", MaxSize+1), 0o600)
	if _, err := Read(p); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("large file: %v", err)
	}
}
