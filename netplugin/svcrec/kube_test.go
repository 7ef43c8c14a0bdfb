package svcrec

import (
	"context"
	"reflect"
	"testing"

	"github.com/contiv/netplugin/mgmtfn/k8splugin/k8ssvc"
	"github.com/contiv/netplugin/ofnet/agent"
)

func TestPickTenant(t *testing.T) {
	for _, tc := range []struct {
		name        string
		provs       []string
		vrfs        map[string][]string
		tenant      string
		in, unknown []string
	}{
		{"all in one", []string{"a", "b"}, map[string][]string{"a": {"t1"}, "b": {"t1"}}, "t1", []string{"a", "b"}, nil},
		{"majority wins, the rest unknown", []string{"a", "b", "c"},
			map[string][]string{"a": {"t2"}, "b": {"t1", "t2"}, "c": {"t1"}}, "t1", []string{"b", "c"}, []string{"a"}},
		{"tie: first by name", []string{"a", "b"}, map[string][]string{"a": {"z"}, "b": {"m"}}, "m", []string{"b"}, []string{"a"}},
		{"none known", []string{"a"}, map[string][]string{}, "", nil, []string{"a"}},
		{"no providers", nil, nil, "", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tenant, in, unknown := pickTenant(tc.provs, tc.vrfs)
			if tenant != tc.tenant || !reflect.DeepEqual(in, tc.in) || !reflect.DeepEqual(unknown, tc.unknown) {
				t.Errorf("pickTenant = %q %v %v; want %q %v %v", tenant, in, unknown, tc.tenant, tc.in, tc.unknown)
			}
		})
	}
}

// recDatapath records the specs and providers a sink gives it.
type recDatapath struct {
	specs map[string]agent.ServiceSpec
	provs map[string][]string
}

func (d *recDatapath) AddSvcSpec(_ context.Context, name string, spec agent.ServiceSpec) error {
	d.specs[name] = spec
	return nil
}
func (d *recDatapath) DelSvcSpec(_ context.Context, name string) error {
	delete(d.specs, name)
	return nil
}
func (d *recDatapath) SvcProviderUpdate(_ context.Context, name string, p []string) error {
	d.provs[name] = p
	return nil
}
func (d *recDatapath) ServiceStats(context.Context) ([]agent.ServiceStats, error) { return nil, nil }
func (d *recDatapath) EndpointVrfs(ips []string) map[string][]string {
	out := map[string][]string{}
	for _, ip := range ips {
		out[ip] = []string{"default"}
	}
	return out
}

// TestKubeSinkAffinity: a Kubernetes load balancer's session affinity reaches the
// datapath's spec, and turning it off clears it there.
func TestKubeSinkAffinity(t *testing.T) {
	d := &recDatapath{specs: map[string]agent.ServiceSpec{}, provs: map[string][]string{}}
	s := &KubeSink{Datapaths: []Datapath{d}}
	lb := k8ssvc.LB{Name: "ns/web", VIP: "198.19.200.20", Ports: []k8ssvc.Port{{Protocol: "TCP", SvcPort: 80, ProvPort: 8080}},
		Providers: []string{"198.19.1.3"}, AffinityTimeout: 10800}
	if err := s.Put(context.Background(), lb); err != nil {
		t.Fatal(err)
	}
	want := agent.ServiceSpec{Vrf: "default", IpAddress: "198.19.200.20",
		Ports: []agent.ServicePort{{Protocol: "TCP", SvcPort: 80, ProvPort: 8080}}, AffinityTimeout: 10800}
	if got := d.specs["ns/web"]; !reflect.DeepEqual(got, want) {
		t.Errorf("spec %+v, want %+v", got, want)
	}
	lb.AffinityTimeout = 0
	if err := s.Put(context.Background(), lb); err != nil {
		t.Fatal(err)
	}
	if got := d.specs["ns/web"].AffinityTimeout; got != 0 {
		t.Errorf("affinity %d after it was turned off", got)
	}
}
