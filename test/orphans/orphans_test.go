package orphans

import (
	"os"
	"path/filepath"
	"testing"
)

func TestOrphans(t *testing.T) {
	m := Markers(t.TempDir())
	if err := m.Write("x-live", "/tmp/live"); err != nil {
		t.Fatal(err)
	}
	// pid 0 has no /proc entry: its owner is gone.
	for name, content := range map[string]string{
		"x-dead":  "0\n/tmp/dead\n",
		"x-bad":   "garbage",
		"y-other": "0\n/tmp/other\n",
	} {
		if err := os.WriteFile(filepath.Join(string(m), name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := m.Orphans("x-")
	if len(got) != 1 || got[0] != (Orphan{Name: "x-dead", Dir: "/tmp/dead", Owner: 0}) {
		t.Fatalf("orphans %+v, want only x-dead", got)
	}
	m.Remove("x-dead")
	m.Remove("x-dead") // twice: no error
	if got := m.Orphans("x-"); len(got) != 0 {
		t.Fatalf("after Remove: %+v", got)
	}
	if !Alive(os.Getpid()) {
		t.Fatal("this process must be alive")
	}
}
