package testbed

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"os"
	"strings"
	"testing"
)

// TestPauseImageArchive checks the image archive the hosts' containerd
// imports: the same bytes for the same binary, a manifest naming
// PauseImage, a configuration whose layer digest is the layer's, and the
// binary as /pause in that layer.
func TestPauseImageArchive(t *testing.T) {
	exe := []byte("\x7fELF not really a binary")
	a, err := PauseImageArchive(exe)
	if err != nil {
		t.Fatal(err)
	}
	b, err := PauseImageArchive(exe)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two archives of the same binary differ")
	}
	if _, err := PauseImageArchive(nil); err == nil {
		t.Fatal("an empty binary was packed")
	}
	files := untar(t, a)
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		t.Fatal(err)
	}
	if len(manifest) != 1 || len(manifest[0].Layers) != 1 || "docker.io/"+strings.Join(manifest[0].RepoTags, ",") != PauseImage {
		t.Fatalf("manifest: %+v", manifest)
	}
	var config struct {
		Config struct{ Entrypoint []string }
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(files[manifest[0].Config], &config); err != nil {
		t.Fatal(err)
	}
	layer := files[manifest[0].Layers[0]]
	sum := sha256.Sum256(layer)
	if len(config.RootFS.DiffIDs) != 1 || config.RootFS.DiffIDs[0] != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("diff ids %v, layer digest %x", config.RootFS.DiffIDs, sum)
	}
	if strings.Join(config.Config.Entrypoint, " ") != "/pause" {
		t.Fatalf("entrypoint %v", config.Config.Entrypoint)
	}
	if got := untar(t, layer)["pause"]; !bytes.Equal(got, exe) {
		t.Fatalf("layer holds %q as pause", got)
	}
}

func untar(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	r := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			out[h.Name] = b
		}
	}
}

// TestCRI runs a containerd with its CRI plugin in a simulated host in
// kubernetes mode and a pod sandbox through crictl: the runtime's CNI ADD
// reaches contivk8s and netplugin, the pod gets an address of the
// network from netmaster on the eth0 containerd asked for;
// stopp and rmp (two DELs) leave no sandbox, no namespace and no
// attachment record; after the cleanup no shim of the runtime is left.
func TestCRI(t *testing.T) {
	tb := New(t, Config{Hosts: 1, NetpluginArgs: []string{"--mode", "kubernetes"}})
	if out, err := tb.Netctl("net", "create", "--encap", "vxlan", "--subnet", "198.19.22.0/24", "--gateway", "198.19.22.254", "default-net"); err != nil {
		t.Fatalf("net create: %v\n%s", err, out)
	}
	h := tb.Hosts[0]
	var sock string
	t.Run("runtime", func(t *testing.T) {
		c := h.StartCRI(t, CRIOptions{})
		sock = c.Socket
		p := c.RunPod(t, PodConfig{Name: "pod-a", Labels: map[string]string{"app": "a"}})
		_, subnet, _ := net.ParseCIDR("198.19.22.0/24")
		if !subnet.Contains(net.ParseIP(p.IP)) {
			t.Fatalf("pod got %s, outside default-net", p.IP)
		}
		if !strings.HasPrefix(p.NS, "cni-") {
			t.Fatalf("pod namespace %s (%s), want containerd's cni-<uuid>", p.NS, p.NetNS)
		}
		if out, err := p.Exec("ip", "-o", "addr", "show", "eth0"); err != nil || !strings.Contains(out, p.IP+"/") {
			t.Fatalf("eth0 in the pod: %v\n%s", err, out)
		}
		if recs, _ := os.ReadDir(h.CNIStateDir()); len(recs) != 1 {
			t.Fatalf("%d attachment records, want 1", len(recs))
		}
		if err := p.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := p.Remove(); err != nil {
			t.Fatal(err)
		}
		if ids, err := c.Sandboxes(); err != nil || len(ids) != 0 {
			t.Fatalf("sandboxes after rmp: %v %v", ids, err)
		}
		if recs, _ := os.ReadDir(h.CNIStateDir()); len(recs) != 0 {
			t.Fatalf("attachment records after rmp: %v", recs)
		}
		if _, err := os.Stat(p.NetNS); !os.IsNotExist(err) {
			t.Fatalf("pod namespace %s after rmp: %v", p.NetNS, err)
		}
		// A second pod stays for the cleanup to remove.
		c.RunPod(t, PodConfig{Name: "pod-b"})
	})
	if pids := shimPids(sock); len(pids) != 0 {
		t.Fatalf("shims left after the cleanup: %v", pids)
	}
	if recs, _ := os.ReadDir(h.CNIStateDir()); len(recs) != 0 {
		t.Fatalf("attachment records after the cleanup: %v", recs)
	}
}
