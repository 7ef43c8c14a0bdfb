package kubewatch_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/contiv/netplugin/mgmtfn/k8splugin"
	"github.com/contiv/netplugin/mgmtfn/k8splugin/kubewatch"
	"github.com/contiv/netplugin/utils/runtest"
)

func pod(ns, name, uid string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), Labels: labels}}
}

// start runs a watcher on the fake clientset until the test ends.
func start(t *testing.T, client *fake.Clientset, opt kubewatch.Options) *kubewatch.Watcher {
	t.Helper()
	w := kubewatch.New(client, opt)
	runtest.GoLoop(t, w.Run)
	return w
}

func TestPodLabelsFromCache(t *testing.T) {
	client := fake.NewClientset(
		pod("web", "a", "uid-a", map[string]string{k8splugin.LabelTenant: "t1", k8splugin.LabelNetwork: "n1", k8splugin.LabelGroup: "g1"}),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"team": "blue"}}},
	)
	w := start(t, client, kubewatch.Options{})
	ctx := context.Background()
	got, err := w.PodLabels(ctx, k8splugin.PodRef{Namespace: "web", Name: "a", UID: "uid-a"})
	if err != nil {
		t.Fatal(err)
	}
	if pl := k8splugin.PlacementFrom(got, nil); pl != (k8splugin.Placement{Tenant: "t1", Network: "n1", Group: "g1"}) {
		t.Fatalf("placement %+v from labels %v", pl, got)
	}
	// The answer is a copy: changing it leaves the cache alone.
	got[k8splugin.LabelGroup] = "changed"
	again, err := w.PodLabels(ctx, k8splugin.PodRef{Namespace: "web", Name: "a"})
	if err != nil || again[k8splugin.LabelGroup] != "g1" {
		t.Fatalf("second lookup: %v, %v", again, err)
	}
	if l, ok := w.NamespaceLabels("web"); !ok || l["team"] != "blue" {
		t.Fatalf("namespace labels %v %v", l, ok)
	}
	if _, ok := w.NamespaceLabels("nope"); ok {
		t.Fatal("unknown namespace found")
	}
}

func TestPodCreatedAfterStartAndRelabelled(t *testing.T) {
	client := fake.NewClientset()
	w := start(t, client, kubewatch.Options{PodWait: 5 * time.Second})
	ctx := context.Background()
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("ns").Create(ctx, pod("ns", "late", "u1", map[string]string{k8splugin.LabelGroup: "g1"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := w.PodLabels(ctx, k8splugin.PodRef{Namespace: "ns", Name: "late", UID: "u1"})
	if err != nil || got[k8splugin.LabelGroup] != "g1" {
		t.Fatalf("late pod: %v, %v", got, err)
	}
	// Labels changed in the API server reach the cache.
	p := pod("ns", "late", "u1", map[string]string{k8splugin.LabelGroup: "g2"})
	if _, err := client.CoreV1().Pods("ns").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err = w.PodLabels(ctx, k8splugin.PodRef{Namespace: "ns", Name: "late"})
		if err == nil && got[k8splugin.LabelGroup] == "g2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("relabelled pod: %v, %v", got, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestUnknownPodAndOtherUID(t *testing.T) {
	client := fake.NewClientset(pod("ns", "a", "old", map[string]string{k8splugin.LabelGroup: "g"}))
	w := start(t, client, kubewatch.Options{PodWait: 100 * time.Millisecond})
	ctx := context.Background()
	for _, ref := range []k8splugin.PodRef{
		{Namespace: "ns", Name: "missing"},
		{Namespace: "other", Name: "a"},
		{Namespace: "ns", Name: "a", UID: "new"}, // a newer pod of that name the server does not know
		{Namespace: "", Name: "a"},
	} {
		if got, err := w.PodLabels(ctx, ref); !errors.Is(err, k8splugin.ErrPodNotFound) {
			t.Errorf("%+v: got %v, %v; want ErrPodNotFound", ref, got, err)
		}
	}
}

func TestCacheNeverSyncedIsAnError(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("apiserver down")
	})
	w := start(t, client, kubewatch.Options{SyncWait: 300 * time.Millisecond})
	_, err := w.PodLabels(context.Background(), k8splugin.PodRef{Namespace: "ns", Name: "a"})
	if err == nil || errors.Is(err, k8splugin.ErrPodNotFound) || !strings.Contains(err.Error(), "caches not filled") {
		t.Fatalf("got %v, want a cache error (not ErrPodNotFound)", err)
	}
}

func TestRESTConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c, err := kubewatch.RESTConfig(write("contiv.json", `{"K8S_API_SERVER":"https://198.18.0.1:6443","K8S_CA":"/ca.pem","K8S_TOKEN":"tok","SVC_SUBNET":"10.254.0.0/16"}`))
	if err != nil || c.Host != "https://198.18.0.1:6443" || c.CAFile != "/ca.pem" || c.BearerToken != "tok" || c.BearerTokenFile != "" {
		t.Fatalf("contiv.json: %+v, %v", c, err)
	}
	c, err = kubewatch.RESTConfig(write("sa.json", `{"K8S_API_SERVER":"https://198.18.0.1:6443","K8S_CA":"/ca.pem"}`))
	if err != nil || c.BearerTokenFile != kubewatch.ServiceAccountTokenFile {
		t.Fatalf("contiv.json without credentials: %+v, %v", c, err)
	}
	c, err = kubewatch.RESTConfig(write("kubeconfig", `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: secret}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`))
	if err != nil || c.Host != "https://127.0.0.1:6443" || c.BearerToken != "secret" {
		t.Fatalf("kubeconfig: %+v, %v", c, err)
	}
	for name, body := range map[string]string{
		"scheme.json":  `{"K8S_API_SERVER":"198.18.0.1:6443"}`,
		"half.json":    `{"K8S_API_SERVER":"https://198.18.0.1:6443","K8S_CERT":"/c.pem"}`,
		"types.json":   `{"K8S_API_SERVER":6443}`,
		"garbage.conf": "\x00\x01 not a config",
	} {
		if _, err := kubewatch.RESTConfig(write(name, body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := kubewatch.RESTConfig(filepath.Join(dir, "absent")); err == nil {
		t.Error("missing file accepted")
	}
}

func FuzzRESTConfig(f *testing.F) {
	f.Add([]byte(`{"K8S_API_SERVER":"https://198.18.0.1:6443","K8S_CA":"/ca.pem","K8S_TOKEN":"t"}`))
	f.Add([]byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\ncontexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "cfg")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := kubewatch.RESTConfig(p)
		if err == nil && c.Host == "" {
			t.Fatalf("accepted without a server: %q", b)
		}
	})
}
