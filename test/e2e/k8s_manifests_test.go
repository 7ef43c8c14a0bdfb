package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/containernetworking/cni/libcni"

	"github.com/contiv/netplugin/test/testbed"
)

// manifests is the deployment of docs/k8s.md, "Installing on a cluster".
const manifests = "../../packaging/k8s/contiv.yaml"

// manifestDir is what the operator applies (kubectl apply -f
// packaging/k8s/): every .yaml, .yml and .json file in it.
const manifestDir = "../../packaging/k8s"

// readManifestDir reads the files kubectl apply -f takes from the folder,
// in its (lexical) order, as one stream of objects.
func readManifestDir(t *testing.T) ([]*unstructured.Unstructured, []byte) {
	t.Helper()
	ents, err := os.ReadDir(manifestDir)
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	for _, e := range ents {
		switch filepath.Ext(e.Name()) {
		case ".yaml", ".yml", ".json":
		default:
			continue
		}
		b, err := os.ReadFile(filepath.Join(manifestDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, []byte("\n---\n")...)
		all = append(all, b...)
	}
	return readManifests(t, all), all
}

// readManifests decodes every object of a multi-document YAML file.
func readManifests(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("decode %s: %v", manifests, err)
		}
		if m != nil {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// TestManifestsDryRun sends every object of packaging/k8s to
// a real kube-apiserver as a server-side dry-run create with strict field
// validation: each is accepted (schema, defaults, validation and
// admission run), nothing is stored, and a copy with a misspelt field is
// refused (the check has teeth).
func TestManifestsDryRun(t *testing.T) {
	objs, data := readManifestDir(t)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	for _, want := range []string{"DaemonSet", "Deployment", "ConfigMap", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"} {
		if kinds[want] == 0 {
			t.Errorf("%s has no %s (kinds: %v)", manifests, want, kinds)
		}
	}

	k := testbed.StartKubeAPIServer(t, testbed.KubeOptions{})
	cfg := k.RESTConfig(t)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(dc)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resource := func(o *unstructured.Unstructured) dynamic.ResourceInterface {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk, o.GetName(), err)
		}
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			return dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		return dyn.Resource(m.Resource)
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"}
	for _, o := range objs {
		if _, err := resource(o).Create(ctx, o, dryRun); err != nil {
			t.Errorf("dry-run create %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	for _, o := range objs {
		if _, err := resource(o).Get(ctx, o.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s %s/%s exists after a dry run: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}

	// A misspelt field in the DaemonSet's pod template is refused.
	bad := readManifests(t, []byte(strings.Replace(string(data), "hostNetwork: true\n      hostPID", "hostNetwrk: true\n      hostPID", 1)))
	for _, o := range bad {
		if o.GetKind() != "DaemonSet" {
			continue
		}
		_, err := resource(o).Create(ctx, o, dryRun)
		if err == nil || !strings.Contains(err.Error(), "hostNetwrk") {
			t.Errorf("dry-run of a DaemonSet with a misspelt field: %v, want a strict-validation error", err)
		}
	}
}

// TestManifestsContent checks, without a cluster, what an operator relies
// on in packaging/k8s (docs/k8s.md, "Installing on a cluster"): the images
// are the three scripts/build-images.sh makes, at the release of
// packaging/k8s/VERSION (never :latest); no store address is built in
// (the site's ConfigMap contiv-site must name one); netmaster runs two
// replicas with both probes and no API access; netplugin's role only
// reads what its informers and CNI server read.
func TestManifestsContent(t *testing.T) {
	objs, raw := readManifestDir(t)
	v, err := os.ReadFile(filepath.Join(manifestDir, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(v))
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$`).MatchString(version) {
		t.Fatalf("packaging/k8s/VERSION %q is not a release version", version)
	}
	script, err := os.ReadFile("../../scripts/build-images.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "packaging/k8s/VERSION") {
		t.Errorf("scripts/build-images.sh does not take its default tag from packaging/k8s/VERSION")
	}
	built := map[string]bool{"contiv/netmaster": false, "contiv/netplugin": false, "contiv/cni-install": false}
	for _, m := range regexp.MustCompile(`(?m)^\s*image:\s*(\S+)`).FindAllSubmatch(raw, -1) {
		img := string(m[1])
		repo, tag, _ := strings.Cut(img, ":")
		if _, ok := built[repo]; !ok || tag != version {
			t.Errorf("image %s: want one of the images scripts/build-images.sh makes, tagged %s", img, version)
			continue
		}
		built[repo] = true
	}
	for repo, used := range built {
		if !used {
			t.Errorf("%s is built but no manifest runs it", repo)
		}
	}
	for _, bad := range []string{"127.0.0.1:2379", "localhost:2379", "127.0.0.1:8500", "ETCD_ENDPOINTS:", "CONSUL_ENDPOINTS:"} {
		if bytes.Contains(raw, []byte(bad)) {
			t.Errorf("the manifests set a store (%q): the store is the site's, in ConfigMap contiv-site", bad)
		}
	}

	byKind := func(kind, name string) *unstructured.Unstructured {
		for _, o := range objs {
			if o.GetKind() == kind && o.GetName() == name {
				return o
			}
		}
		t.Fatalf("no %s %s in %s", kind, name, manifestDir)
		return nil
	}
	dep := byKind("Deployment", "contiv-netmaster")
	if n, _, _ := unstructured.NestedFieldNoCopy(dep.Object, "spec", "replicas"); fmt.Sprint(n) != "2" {
		t.Errorf("netmaster replicas %v, want 2 (leader election in the store)", n)
	}
	if auto, found, _ := unstructured.NestedBool(dep.Object, "spec", "template", "spec", "automountServiceAccountToken"); !found || auto {
		t.Errorf("netmaster mounts an API token; it does not read the Kubernetes API")
	}
	for _, w := range []struct {
		o    *unstructured.Unstructured
		name string
	}{{dep, "netmaster"}, {byKind("DaemonSet", "contiv-netplugin"), "netplugin"}} {
		cs, _, _ := unstructured.NestedSlice(w.o.Object, "spec", "template", "spec", "containers")
		var c map[string]any
		for _, x := range cs {
			if m := x.(map[string]any); m["name"] == w.name {
				c = m
			}
		}
		if c == nil {
			t.Fatalf("no container %s", w.name)
		}
		for _, probe := range []string{"readinessProbe", "livenessProbe"} {
			if p, _, _ := unstructured.NestedString(c, probe, "httpGet", "path"); p == "" {
				t.Errorf("%s has no %s", w.name, probe)
			}
		}
		// The site's settings override the defaults: contiv-site comes
		// after contiv-config and is required.
		ef, _, _ := unstructured.NestedSlice(c, "envFrom")
		var refs []string
		for _, x := range ef {
			name, _, _ := unstructured.NestedString(x.(map[string]any), "configMapRef", "name")
			opt, _, _ := unstructured.NestedBool(x.(map[string]any), "configMapRef", "optional")
			if name == "contiv-site" && opt {
				t.Errorf("%s: contiv-site is optional; the store must be given", w.name)
			}
			refs = append(refs, name)
		}
		i, j := slices.Index(refs, "contiv-config"), slices.Index(refs, "contiv-site")
		if i < 0 || j < i {
			t.Errorf("%s envFrom %v: want contiv-config, then contiv-site", w.name, refs)
		}
	}

	// netplugin's role: read-only, and only what the code reads.
	want := map[string][]string{
		"/pods": {"get", "list", "watch"}, "/namespaces": {"list", "watch"}, "/services": {"list", "watch"},
		"discovery.k8s.io/endpointslices": {"list", "watch"}, "networking.k8s.io/networkpolicies": {"list", "watch"},
		"apps/daemonsets": {"get"}, // contiv-node-cleanup, its own DaemonSet only (resourceNames)
	}
	got := map[string][]string{}
	rules, _, _ := unstructured.NestedSlice(byKind("ClusterRole", "contiv-netplugin").Object, "rules")
	for _, r := range rules {
		m := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(m, "apiGroups")
		res, _, _ := unstructured.NestedStringSlice(m, "resources")
		verbs, _, _ := unstructured.NestedStringSlice(m, "verbs")
		for _, g := range groups {
			for _, x := range res {
				got[g+"/"+x] = append(got[g+"/"+x], verbs...)
			}
		}
	}
	for k, v := range got {
		slices.Sort(v)
		w := slices.Clone(want[k])
		slices.Sort(w)
		if !slices.Equal(v, w) {
			t.Errorf("netplugin may %v on %s, want %v", v, k, w)
		}
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("netplugin's role lacks %s", k)
		}
	}
	for _, o := range objs {
		if o.GetKind() == "ClusterRoleBinding" || o.GetKind() == "RoleBinding" {
			if subj, _, _ := unstructured.NestedSlice(o.Object, "subjects"); len(subj) > 0 {
				if n, _, _ := unstructured.NestedString(subj[0].(map[string]any), "name"); n == "contiv-netmaster" {
					t.Errorf("%s %s binds a role to netmaster, which reads no Kubernetes API", o.GetKind(), o.GetName())
				}
			}
		}
	}
}

// TestManifestsCNIChain checks the CNI configuration list the DaemonSet
// installs (docs/k8s.md, "Host ports"): contivk8s, then portmap with the
// portMappings capability, its iptables backend with snat and masqAll;
// every plugin it names is in the cni-install image, copied onto the node
// by the init container and removed by contiv-node-cleanup; the example
// list of cmd/contivk8s names the same plugins.
func TestManifestsCNIChain(t *testing.T) {
	objs, _ := readManifestDir(t)
	var cfg, ds *unstructured.Unstructured
	for _, o := range objs {
		switch {
		case o.GetKind() == "ConfigMap" && o.GetName() == "contiv-config":
			cfg = o
		case o.GetKind() == "DaemonSet" && o.GetName() == "contiv-netplugin":
			ds = o
		}
	}
	if cfg == nil || ds == nil {
		t.Fatal("no ConfigMap contiv-config or DaemonSet contiv-netplugin")
	}
	raw, _, _ := unstructured.NestedString(cfg.Object, "data", "10-contiv.conflist")
	list, err := libcni.ConfListFromBytes([]byte(raw))
	if err != nil {
		t.Fatalf("10-contiv.conflist: %v", err)
	}
	types := func(l *libcni.NetworkConfigList) []string {
		var out []string
		for _, p := range l.Plugins {
			out = append(out, p.Network.Type)
		}
		return out
	}
	if got := types(list); !slices.Equal(got, []string{"contivk8s", "contiv-portmap"}) {
		t.Fatalf("plugins %v, want contivk8s then contiv-portmap", got)
	}
	var pm struct {
		Capabilities map[string]bool `json:"capabilities"`
		Backend      string          `json:"backend"`
		SNAT         *bool           `json:"snat"`
		MasqAll      bool            `json:"masqAll"`
	}
	if err := json.Unmarshal(list.Plugins[1].Bytes, &pm); err != nil {
		t.Fatal(err)
	}
	if !pm.Capabilities["portMappings"] || pm.Backend != "iptables" || pm.SNAT == nil || !*pm.SNAT || !pm.MasqAll {
		t.Errorf("portmap configuration %s: want capabilities.portMappings, backend iptables, snat and masqAll", list.Plugins[1].Bytes)
	}
	example, err := libcni.ConfListFromFile("../../cmd/contivk8s/10-contiv.conflist")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(types(example), types(list)) || example.CNIVersion != list.CNIVersion {
		t.Errorf("cmd/contivk8s/10-contiv.conflist: %s %v, the manifests' %s %v", example.CNIVersion, types(example), list.CNIVersion, types(list))
	}

	inits, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "initContainers")
	var install string
	for _, x := range inits {
		if m := x.(map[string]any); m["name"] == "install-cni" {
			args, _, _ := unstructured.NestedStringSlice(m, "args")
			install = strings.Join(args, " ")
		}
	}
	dockerfile, err := os.ReadFile("../../packaging/docker/Dockerfile.cni-install")
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("../../scripts/build-images.sh")
	if err != nil {
		t.Fatal(err)
	}
	cleanup, err := os.ReadFile("../../cmd/contiv-node-cleanup/main.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range types(list) {
		if !strings.Contains(string(dockerfile), fmt.Sprintf("COPY %s /%s\n", p, p)) {
			t.Errorf("the cni-install image does not hold /%s", p)
		}
		if !strings.Contains(string(script), `"$ctx/`+p+`"`) && !regexp.MustCompile(`for bin in [^;]*\b`+p+`\b`).Match(script) {
			t.Errorf("scripts/build-images.sh does not build %s", p)
		}
		if !strings.Contains(install, "/host/opt/cni/bin/"+p+" ") && !strings.HasSuffix(install, "/host/opt/cni/bin/"+p) {
			t.Errorf("the install-cni init container does not install %s", p)
		}
		if !strings.Contains(string(cleanup), `"opt/cni/bin/`+p+`"`) {
			t.Errorf("contiv-node-cleanup does not remove /opt/cni/bin/%s", p)
		}
	}
	// The list goes last, once the plugins it names are in place.
	if i, j := strings.Index(install, "10-contiv.conflist"), strings.LastIndex(install, "/host/opt/cni/bin/"); i < j {
		t.Errorf("the install-cni init container installs the list before a plugin: %s", install)
	}
}

// TestManifestsInitChecks runs the init containers' checks of
// packaging/k8s (ConfigMap contiv-config, check-store.sh and
// check-ovs.sh) with Debian's static busybox alone, as the cni-install
// image does: without a store in contiv-site, without an ovsdb-server
// socket, or without ovs-vswitchd, each stops with its message in the
// termination log; with all three it goes on.
func TestManifestsInitChecks(t *testing.T) {
	if _, err := os.Stat("/bin/busybox"); err != nil {
		testbed.RequireComponent(t, "/bin/busybox (busybox-static)", err)
		return
	}
	objs, _ := readManifestDir(t)
	var scripts map[string]any
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GetName() == "contiv-config" {
			scripts, _, _ = unstructured.NestedMap(o.Object, "data")
		}
	}
	dir := t.TempDir()
	for _, name := range []string{"check-store.sh", "check-ovs.sh"} {
		s, _ := scripts[name].(string)
		if s == "" {
			t.Fatalf("contiv-config has no %s", name)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	root := filepath.Join(dir, "host")
	run := filepath.Join(root, "var/run/openvswitch")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	check := func(script string, env ...string) (string, error) {
		t.Helper()
		logf := filepath.Join(dir, "termination-log")
		_ = os.Remove(logf)
		cmd := exec.Command("/bin/busybox", "sh", filepath.Join(dir, script))
		cmd.Env = append([]string{"PATH=/nonexistent", "TERMINATION_LOG=" + logf, "HOST_ROOT=" + root, "NODE_NAME=n1"}, env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			if l, rerr := os.ReadFile(logf); rerr != nil || string(l) != string(out) {
				t.Errorf("%s: termination log %q (%v), want the message %q", script, l, rerr, out)
			}
		}
		return string(out), err
	}
	if out, err := check("check-store.sh"); err == nil || !strings.Contains(out, "contiv-site sets neither ETCD_ENDPOINTS nor CONSUL_ENDPOINTS") {
		t.Errorf("check-store.sh without a store: %v %q", err, out)
	}
	for _, env := range []string{"SITE_ETCD_ENDPOINTS=https://198.18.1.5:2379", "SITE_CONSUL_ENDPOINTS=198.18.1.5:8500"} {
		if out, err := check("check-store.sh", env); err != nil {
			t.Errorf("check-store.sh with %s: %v %q", env, err, out)
		}
	}
	if out, err := check("check-ovs.sh"); err == nil || !strings.Contains(out, "Open vSwitch is not running on node n1: no ovsdb-server socket at /var/run/openvswitch/db.sock") {
		t.Errorf("check-ovs.sh without OVS: %v %q", err, out)
	}
	l, err := net.Listen("unix", filepath.Join(run, "db.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if out, err := check("check-ovs.sh"); err == nil || !strings.Contains(out, "no ovs-vswitchd") {
		t.Errorf("check-ovs.sh with ovsdb-server only: %v %q", err, out)
	}
	// Debian's ovs-vswitchd.<pid>.ctl, and ovs-vswitchd.ctl of an
	// ovs-vswitchd started with --unixctl in the run folder (the
	// testbed's OVS, TestInstallFromManifests).
	for _, ctl := range []string{"ovs-vswitchd.ctl", "ovs-vswitchd.4242.ctl"} {
		f := filepath.Join(run, ctl)
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := check("check-ovs.sh"); err != nil {
			t.Errorf("check-ovs.sh with OVS running (%s): %v %q", ctl, err, out)
		}
		os.Remove(f)
	}
}
