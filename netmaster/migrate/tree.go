// Package migrate carries an original Contiv cluster's store (etcd through
// its v2 keys API, consul KV, or a dump of either) into this project's
// layout (docs/upgrade.md, docs/daemons.md §2–§4.8):
//
//   - tree.go reads a source's keys into memory (Tree) and decodes the two
//     dump formats;
//   - source.go reads a live etcd v2 or consul store, never writing to it;
//   - plan.go maps the original's records to this project's keys (Map):
//     model objects, state, tags, and the address bitmaps turned into
//     ipam pools; records it cannot map are listed, never dropped;
//   - apply.go writes a Plan to the target store: refusing a non-empty
//     target unless merging, all checks before the first write, a marker
//     key (migrate/status) that makes a cut-short run resumable and a
//     second run a no-op.
//
// migratecmd is the `netmaster migrate` command over this package.
package migrate

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Root is the original's key root (docs/daemons.md §2.1); consul keys
// have no leading "/".
const Root = "contiv.io"

// ErrSource: the source could not be read or decoded.
var ErrSource = errors.New("migrate: source unreadable")

// maxDepth bounds the nesting of an etcd v2 dump (the original's deepest
// key has six segments).
const maxDepth = 64

// Tree is a source store in memory: every leaf under the root, by key
// relative to the root ("state/nets/web-net.blue"), plus the keys found
// outside the root.
type Tree struct {
	KV      map[string][]byte
	Outside []string
}

// Keys are the tree's keys in order.
func (t *Tree) Keys() []string {
	ks := make([]string, 0, len(t.KV))
	for k := range t.KV {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func newTree() *Tree { return &Tree{KV: map[string][]byte{}} }

// add files key (a full store key, with or without the leading "/").
func (t *Tree) add(key string, val []byte) error {
	k := strings.TrimPrefix(key, "/")
	rel, ok := strings.CutPrefix(k, Root+"/")
	if !ok || rel == "" {
		t.Outside = append(t.Outside, key)
		return nil
	}
	// etcd collapses "//"; consul trims it (docs/daemons.md §2.5).
	for strings.Contains(rel, "//") {
		rel = strings.ReplaceAll(rel, "//", "/")
	}
	if _, dup := t.KV[rel]; dup {
		return fmt.Errorf("%w: key %q appears twice", ErrSource, key)
	}
	t.KV[rel] = val
	return nil
}

// v2Node is one node of an etcd v2 keys API answer.
type v2Node struct {
	Key   string            `json:"key"`
	Dir   bool              `json:"dir"`
	Value *string           `json:"value"`
	Nodes []json.RawMessage `json:"nodes"`
}

// DecodeEtcdV2 decodes the answer of `GET /v2/keys/?recursive=true` (or of
// any directory under it): {"action":"get","node":{…}}.
func DecodeEtcdV2(data []byte) (*Tree, error) {
	var top struct {
		Node      json.RawMessage `json:"node"`
		ErrorCode int             `json:"errorCode"`
		Message   string          `json:"message"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("%w: etcd v2 answer: %w", ErrSource, err)
	}
	if top.ErrorCode != 0 {
		return nil, fmt.Errorf("%w: etcd v2 error %d: %s", ErrSource, top.ErrorCode, top.Message)
	}
	if len(top.Node) == 0 {
		return nil, fmt.Errorf("%w: etcd v2 answer has no node", ErrSource)
	}
	t := newTree()
	if err := t.walkV2(top.Node, 0); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Tree) walkV2(raw json.RawMessage, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: etcd v2 tree deeper than %d", ErrSource, maxDepth)
	}
	var n v2Node
	if err := json.Unmarshal(raw, &n); err != nil {
		return fmt.Errorf("%w: etcd v2 node at depth %d: %w", ErrSource, depth, err)
	}
	if n.Dir {
		for _, c := range n.Nodes {
			if err := t.walkV2(c, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if n.Value == nil {
		return fmt.Errorf("%w: etcd v2 leaf %q has no value", ErrSource, n.Key)
	}
	return t.add(n.Key, []byte(*n.Value))
}

// consulPair is one entry of `consul kv export` (and of the KV API's
// recursive answer, whose field names differ only in case).
type consulPair struct {
	Key   string  `json:"key"`
	Value *string `json:"value"` // base64
}

// DecodeConsul decodes a `consul kv export` array (or the KV API's
// `?recurse` answer).
func DecodeConsul(data []byte) (*Tree, error) {
	var pairs []consulPair
	if err := json.Unmarshal(data, &pairs); err != nil {
		return nil, fmt.Errorf("%w: consul export: %w", ErrSource, err)
	}
	t := newTree()
	for _, p := range pairs {
		if strings.HasSuffix(p.Key, "/") && (p.Value == nil || *p.Value == "") {
			continue // a folder entry
		}
		var val []byte
		if p.Value != nil {
			v, err := base64.StdEncoding.DecodeString(*p.Value)
			if err != nil {
				return nil, fmt.Errorf("%w: consul key %q: value: %w", ErrSource, p.Key, err)
			}
			val = v
		}
		if err := t.add(p.Key, val); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// DecodeDump decodes either dump format: an etcd v2 answer (a JSON object)
// or a consul export (a JSON array).
func DecodeDump(data []byte) (*Tree, error) {
	trimmed := bytes.TrimSpace(data)
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		return DecodeConsul(data)
	case len(trimmed) > 0 && trimmed[0] == '{':
		return DecodeEtcdV2(data)
	}
	return nil, fmt.Errorf("%w: neither an etcd v2 answer nor a consul export", ErrSource)
}
