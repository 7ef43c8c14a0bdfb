package k8splugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/contiv/netplugin/mgmtfn/k8splugin/cniapi"
)

// Record states: a record is written "adding" before the endpoint is
// created and turned "attached" after, so an ADD cut short by a crash
// leaves a record that DEL, GC or the next ADD clean up.
const (
	stateAdding   = "adding"
	stateAttached = "attached"
)

// record is one CNI attachment made on this host.
type record struct {
	CNINetwork   string           `json:"cniNetwork,omitempty"`
	ContainerID  string           `json:"containerID"`
	IfName       string           `json:"ifName"`
	NetNS        string           `json:"netns"`
	PodName      string           `json:"podName,omitempty"`
	PodNamespace string           `json:"podNamespace,omitempty"`
	Tenant       string           `json:"tenant"`
	Network      string           `json:"network"`
	Group        string           `json:"group,omitempty"`
	EndpointCtr  string           `json:"endpointContainer"` // the attach API's containerID
	State        string           `json:"state"`
	Result       cniapi.RspAddPod `json:"result"`
}

func (r record) attachment() cniapi.Attachment {
	return cniapi.Attachment{ContainerID: r.ContainerID, IfName: r.IfName}
}

// records keeps one JSON file per attachment in a directory (mode 0700):
// <containerID>@<ifname>.json. Container ids cannot contain '@' (CNI's
// rule), so names do not collide. Writes are atomic (rename).
type records struct{ dir string }

func (s records) path(containerID, ifName string) string {
	return filepath.Join(s.dir, containerID+"@"+ifName+".json")
}

func (s records) read(containerID, ifName string) (record, bool, error) {
	b, err := os.ReadFile(s.path(containerID, ifName))
	if errors.Is(err, os.ErrNotExist) {
		return record{}, false, nil
	}
	if err != nil {
		return record{}, false, fmt.Errorf("read attachment record: %w", err)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return record{}, false, fmt.Errorf("attachment record %s: %w", s.path(containerID, ifName), err)
	}
	return r, true, nil
}

func (s records) write(r record) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("attachment record directory: %w", err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode attachment record: %w", err)
	}
	p := s.path(r.ContainerID, r.IfName)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write attachment record: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write attachment record: %w", err)
	}
	return nil
}

func (s records) remove(containerID, ifName string) error {
	if err := os.Remove(s.path(containerID, ifName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove attachment record: %w", err)
	}
	return nil
}

// list returns every readable record; unreadable files are reported.
func (s records) list() ([]record, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list attachment records: %w", err)
	}
	var out []record
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		cid, ifName, ok := strings.Cut(strings.TrimSuffix(name, ".json"), "@")
		if !ok {
			continue
		}
		r, found, err := s.read(cid, ifName)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if found {
			out = append(out, r)
		}
	}
	return out, errors.Join(errs...)
}
