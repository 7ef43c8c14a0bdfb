// Package orphans finds what killed test processes left behind. A test
// that creates something outside itself (a network namespace, an OVS
// instance, a testbed) writes a marker naming its process and its folder;
// a later run removes whatever a marker's owner, now gone, did not clean
// up (a -timeout panic runs no cleanups).
package orphans

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Markers is the folder holding one marker file per live resource.
type Markers string

// Write records this process as the owner of the resource name, whose
// files are in dir.
func (m Markers) Write(name, dir string) error {
	if err := os.MkdirAll(string(m), 0o755); err != nil {
		return fmt.Errorf("marker %s: %w", name, err)
	}
	content := fmt.Sprintf("%d\n%s\n", os.Getpid(), dir)
	if err := os.WriteFile(filepath.Join(string(m), name), []byte(content), 0o644); err != nil {
		return fmt.Errorf("marker %s: %w", name, err)
	}
	return nil
}

// Remove deletes the marker of name (a missing one is no error).
func (m Markers) Remove(name string) { os.Remove(filepath.Join(string(m), name)) }

// Orphan is a marked resource whose owner process is gone.
type Orphan struct {
	Name  string // the marker's name
	Dir   string // the folder the owner recorded
	Owner int    // the owner's pid
}

// Orphans lists the markers whose names start with prefix and whose owner
// is gone; unreadable or malformed markers are skipped.
func (m Markers) Orphans(prefix string) []Orphan {
	entries, err := os.ReadDir(string(m))
	if err != nil {
		return nil
	}
	var out []Orphan
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(string(m), name))
		if err != nil {
			continue
		}
		fields := strings.SplitN(strings.TrimSpace(string(data)), "\n", 2)
		if len(fields) != 2 {
			continue
		}
		owner, err := strconv.Atoi(fields[0])
		if err != nil || Alive(owner) {
			continue
		}
		out = append(out, Orphan{Name: name, Dir: fields[1], Owner: owner})
	}
	return out
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// Format: pid (comm) state ...; comm may contain spaces or ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return false
	}
	return data[i+2] != 'Z'
}
