package contivmodel_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	cm "github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/contivmodel/modeltest"
)

// exampleNetworks is a network controller that links each network into
// its tenant, the way the netmaster's does (docs/rest-api.md §2.4 step 10).
type exampleNetworks struct{ cm.NoopCallbacks[cm.Network] }

func (exampleNetworks) Create(_ context.Context, tx *cm.Tx, n *cm.Network) error {
	n.Links.Tenant = cm.NewLink(cm.TypeTenant, n.TenantName)
	err := cm.Modify(tx, n.TenantName, func(t *cm.Tenant) error {
		t.LinkSets.Networks.Add(cm.NewLink(cm.TypeNetwork, n.Key))
		return nil
	})
	if err != nil {
		// The client sees "Tenant not found"; the log gets the context.
		return fmt.Errorf("link network %s: %w", n.Key, cm.Errorf("Tenant not found"))
	}
	return nil
}

func Example() {
	ctx := context.Background()
	reg := cm.NewRegistry(modeltest.NewMemKV(), cm.WithLogger(modeltest.QuietLogger()))
	ctl := cm.NoopControllers()
	ctl.Network = exampleNetworks{}
	if err := cm.RegisterAll(reg, ctl); err != nil {
		panic(err)
	}
	if err := reg.Load(ctx); err != nil {
		panic(err)
	}
	if _, err := cm.Upsert(ctx, reg, &cm.Tenant{TenantName: "default"}); err != nil {
		panic(err)
	}
	srv := httptest.NewServer(cm.NewRouter(reg))
	defer srv.Close()

	post := func(path, body string) {
		resp, err := http.Post(srv.URL+path, "", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Printf("%d %s", resp.StatusCode, b)
	}
	post("/api/v1/networks/default:net1/", `{"tenantName":"default","networkName":"net1","encap":"vlan","subnet":"10.1.1.0/24"}`)
	post("/api/v1/networks/blue:net1/", `{"tenantName":"blue","networkName":"net1","encap":"vlan","subnet":"10.1.1.0/24"}`)
	post("/api/v1/networks/default:net2/", `{"tenantName":"default","networkName":"net2","encap":"vlan","subnet":"10.1.1.0/33"}`)

	tenant, _ := cm.Read[cm.Tenant](reg, "default")
	fmt.Println(tenant.LinkSets.Networks.Has("default:net1"))
	// Output:
	// 200 {"key":"default:net1","encap":"vlan","networkName":"net1","nwType":"data","subnet":"10.1.1.0/24","tenantName":"default","link-sets":{},"links":{"Tenant":{"type":"tenant","key":"default"}}}
	// 409 Tenant not found
	// 400 subnet string invalid format
	// true
}
