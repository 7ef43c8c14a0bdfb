package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
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

	"github.com/contiv/netplugin/test/testbed"
)

// manifests is the deployment of docs/k8s.md.
const manifests = "../../packaging/k8s/contiv.yaml"

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

// TestManifestsDryRun sends every object of packaging/k8s/contiv.yaml to
// a real kube-apiserver as a server-side dry-run create with strict field
// validation: each is accepted (schema, defaults, validation and
// admission run), nothing is stored, and a copy with a misspelt field is
// refused (the check has teeth).
func TestManifestsDryRun(t *testing.T) {
	data, err := os.ReadFile(manifests)
	if err != nil {
		t.Fatal(err)
	}
	objs := readManifests(t, data)
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
