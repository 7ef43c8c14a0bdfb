package svcrec

import (
	"testing"

	"github.com/contiv/netplugin/ofnet/agent"
	"github.com/contiv/netplugin/state"
)

func TestServiceSpec(t *testing.T) {
	s := state.ServiceLB{Common: state.Common{ID: "web:t1"}, Tenant: "t1", IPAddress: "198.19.3.100",
		Ports: []string{"80:8080:tcp", "53:5353:UDP"}}
	spec, err := Spec(s)
	if err != nil {
		t.Fatal(err)
	}
	want := []agent.ServicePort{{Protocol: "TCP", SvcPort: 80, ProvPort: 8080}, {Protocol: "UDP", SvcPort: 53, ProvPort: 5353}}
	if spec.Vrf != "t1" || spec.IpAddress != "198.19.3.100" || len(spec.Ports) != 2 || spec.Ports[0] != want[0] || spec.Ports[1] != want[1] {
		t.Errorf("spec %+v", spec)
	}
	for _, bad := range []string{"80", "80:8080", "x:8080:TCP", "80:70000:TCP", "80:8080:TCP:1"} {
		s.Ports = []string{"80:8080:TCP", bad}
		if _, err := Spec(s); err == nil {
			t.Errorf("port %q accepted", bad)
		}
	}
}
