package netctl

import (
	"net/http"
	"testing"
	"time"

	"github.com/contiv/netplugin/netmaster/netmastertest"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

// The golden session of docs/netctl.md §8 against our own netmaster, started here
// on an embedded etcd (a real daemon on a loopback port, as an operator
// would run it).
func TestGoldenSessionAgainstNetmaster(t *testing.T) {
	replayGolden(t, startNetmaster(t))
}

// startNetmaster runs a netmaster (leader logic of netmaster/master) on a
// fresh embedded etcd and returns its base URL once it leads.
func startNetmaster(t *testing.T) string {
	t.Helper()
	srv := objdbtest.StartEmbeddedEtcd(t)
	addr := netmastertest.Start(t, srv.Endpoint, "routing", nil).Addr
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/api/v1/tenants/default/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("netmaster at %s not serving as leader: %v", base, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
