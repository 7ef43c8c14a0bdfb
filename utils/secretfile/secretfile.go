// Package secretfile reads files that hold a secret (netmaster's token
// file, an etcd password, a consul ACL token, netctl's token) and refuses
// one that other users can read (docs/security.md, "Tokens").
package secretfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxSize is the largest secret file read (a token file of many lines fits).
const MaxSize = 1 << 20

// ErrMode is wrapped by the error of a file whose permission bits let
// the group or others read or write it.
var ErrMode = errors.New("secretfile: readable or writable by group or others")

// Read returns the content of path after checking that only its owner may
// read or write it (mode 0600 or stricter). The check is made on the open
// file, so a file swapped after the check is not read.
func Read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("secret file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("secret file %s: %w", path, err)
	}
	if err := CheckMode(path, st.Mode()); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("secret file %s: %w", path, err)
	}
	if len(b) > MaxSize {
		return nil, fmt.Errorf("secret file %s: larger than %d bytes", path, MaxSize)
	}
	return b, nil
}

// CheckMode refuses a mode that is not a regular file or that gives the
// group or others any permission.
func CheckMode(path string, m os.FileMode) error {
	if !m.IsRegular() {
		return fmt.Errorf("secret file %s: not a regular file (%v)", path, m.Type())
	}
	if perm := m.Perm(); perm&0o077 != 0 {
		return fmt.Errorf("secret file %s has mode %#o: %w; run chmod 600 %s", path, perm, ErrMode, path)
	}
	return nil
}

// ReadToken reads a file holding one secret (a password or a token): the
// content without surrounding white space, which must not be empty nor
// span several lines.
func ReadToken(path string) (string, error) {
	b, err := Read(path)
	if err != nil {
		return "", err
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return "", fmt.Errorf("secret file %s is empty", path)
	}
	if bytes.ContainsAny(b, "\r\n") {
		return "", fmt.Errorf("secret file %s: more than one line; it holds a single secret", path)
	}
	return string(b), nil
}
