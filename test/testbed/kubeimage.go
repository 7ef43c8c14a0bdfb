package testbed

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// KubepodImage is the workload image of the testbed cluster: kubepod
// (test/tools/kubepod) and netprobe, built locally (no registry).
const KubepodImage = "docker.io/contiv/testbed-kubepod:1"

// CoreDNSImage is CoreDNS (test/tools/coredns, installed by
// scripts/install-deps.sh) packed as an image.
const CoreDNSImage = "docker.io/contiv/testbed-coredns:1"

// ImageFile is one file of a locally built image.
type ImageFile struct {
	Name string // path inside the image, without the leading slash
	Data []byte
	Mode int64
}

// ImageArchive packs files into a single-layer image named ref (a
// "docker save" archive that "ctr images import" takes), the same bytes
// for the same input: fixed times and owners.
func ImageArchive(ref string, files []ImageFile, entrypoint []string) ([]byte, error) {
	if len(files) == 0 {
		return nil, errors.New("testbed: image " + ref + ": no files")
	}
	epoch := time.Unix(0, 0).UTC()
	var layer bytes.Buffer
	lw := tar.NewWriter(&layer)
	dirs := map[string]bool{}
	for _, f := range files {
		for d := filepath.Dir(f.Name); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
			if err := lw.WriteHeader(&tar.Header{Name: d + "/", Mode: 0o755, ModTime: epoch, Typeflag: tar.TypeDir, Format: tar.FormatPAX}); err != nil {
				return nil, fmt.Errorf("testbed: image %s: %w", ref, err)
			}
		}
		if err := lw.WriteHeader(&tar.Header{Name: f.Name, Mode: f.Mode, Size: int64(len(f.Data)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return nil, fmt.Errorf("testbed: image %s: %w", ref, err)
		}
		if _, err := lw.Write(f.Data); err != nil {
			return nil, fmt.Errorf("testbed: image %s: %w", ref, err)
		}
	}
	if err := lw.Close(); err != nil {
		return nil, fmt.Errorf("testbed: image %s: %w", ref, err)
	}
	layerSum := sha256.Sum256(layer.Bytes())
	layerDigest := "sha256:" + hex.EncodeToString(layerSum[:])
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"created":      epoch.Format(time.RFC3339),
		"config":       map[string]any{"Entrypoint": entrypoint},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
	})
	if err != nil {
		return nil, fmt.Errorf("testbed: image %s: %w", ref, err)
	}
	configSum := sha256.Sum256(config)
	configName := hex.EncodeToString(configSum[:]) + ".json"
	layerName := hex.EncodeToString(layerSum[:]) + "/layer.tar"
	manifest, err := json.Marshal([]map[string]any{{
		"Config":   configName,
		"RepoTags": []string{strings.TrimPrefix(ref, "docker.io/")},
		"Layers":   []string{layerName},
	}})
	if err != nil {
		return nil, fmt.Errorf("testbed: image %s: %w", ref, err)
	}
	var out bytes.Buffer
	w := tar.NewWriter(&out)
	for _, f := range []struct {
		name string
		data []byte
	}{{configName, config}, {layerName, layer.Bytes()}, {"manifest.json", manifest}} {
		if dir := filepath.Dir(f.name); dir != "." {
			if err := w.WriteHeader(&tar.Header{Name: dir + "/", Mode: 0o755, ModTime: epoch, Typeflag: tar.TypeDir, Format: tar.FormatPAX}); err != nil {
				return nil, fmt.Errorf("testbed: image %s: %w", ref, err)
			}
		}
		if err := w.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return nil, fmt.Errorf("testbed: image %s: %w", ref, err)
		}
		if _, err := w.Write(f.data); err != nil {
			return nil, fmt.Errorf("testbed: image %s: %w", ref, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("testbed: image %s: %w", ref, err)
	}
	return out.Bytes(), nil
}

// writeImageArchive writes an archive into the process's build folder.
func writeImageArchive(name string, archive []byte) (string, error) {
	dir, err := buildDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".tar")
	if err := os.WriteFile(path, archive, 0o644); err != nil {
		return "", fmt.Errorf("testbed: image archive: %w", err)
	}
	return path, nil
}

// KubepodArchive builds test/tools/kubepod and test/tools/netprobe
// statically and packs them as KubepodImage (/kubepod the entrypoint,
// /netprobe beside it).
func KubepodArchive() (string, error) {
	dir, err := buildDir()
	if err != nil {
		return "", err
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "image-kubepod")
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out+"/", "./test/tools/kubepod", "./test/tools/netprobe")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testbed: build kubepod: %w\n%s", err, b)
	}
	var files []ImageFile
	for _, n := range []string{"kubepod", "netprobe"} {
		data, err := os.ReadFile(filepath.Join(out, n))
		if err != nil {
			return "", fmt.Errorf("testbed: kubepod image: %w", err)
		}
		files = append(files, ImageFile{Name: n, Data: data, Mode: 0o755})
	}
	archive, err := ImageArchive(KubepodImage, files, []string{"/kubepod"})
	if err != nil {
		return "", err
	}
	return writeImageArchive("kubepod", archive)
}

// CoreDNSArchive packs the coredns binary at bin as CoreDNSImage
// (entrypoint /coredns).
func CoreDNSArchive(bin string) (string, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("testbed: coredns image: %w", err)
	}
	archive, err := ImageArchive(CoreDNSImage, []ImageFile{{Name: "coredns", Data: data, Mode: 0o755}}, []string{"/coredns"})
	if err != nil {
		return "", err
	}
	return writeImageArchive("coredns", archive)
}

// ImportImage imports an image archive into this runtime's k8s.io
// namespace, where the kubelet finds it (no pull: the pods'
// imagePullPolicy is Never or IfNotPresent).
func (c *CRI) ImportImage(archive string) error {
	if out, err := c.ctr("images", "import", archive); err != nil {
		return fmt.Errorf("testbed: import %s on %s: %w\n%s", filepath.Base(archive), c.Host.Name, err, out)
	}
	return nil
}
