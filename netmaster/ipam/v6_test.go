package ipam_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

func TestV6(t *testing.T) {
	s := newStore(t)
	newV6 := func(t *testing.T) *ipam.V6 { return ipam.NewV6(s.client(t, objdbtest.UniqueRoot(t))) }
	alloc := func(t *testing.T, a *ipam.V6, id string) netip.Addr {
		t.Helper()
		got, err := a.Allocate(testCtx(t), id)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	t.Run("NextAfterLastWithGateway", func(t *testing.T) {
		a := newV6(t)
		pfx, err := a.CreatePool(testCtx(t), "n", "2016:0617::/120", ipam.WithGateway("2016:617::1"))
		if err != nil || pfx.String() != "2016:617::/120" {
			t.Fatalf("create: %v %v", pfx, err)
		}
		for _, want := range []string{"2016:617::2", "2016:617::3", "2016:617::4"} {
			if got := alloc(t, a, "n"); got != ip(want) {
				t.Fatalf("got %s, want %s", got, want)
			}
		}
		if released, err := a.Release(testCtx(t), "n", ip("2016:617::2")); err != nil || !released {
			t.Fatalf("release: %v %v", released, err)
		}
		if released, err := a.Release(testCtx(t), "n", ip("2016:617::2")); err != nil || released {
			t.Fatalf("second release: %v %v", released, err)
		}
		if got := alloc(t, a, "n"); got != ip("2016:617::5") {
			t.Fatalf("got %s, want the next after the last (::5)", got)
		}
		_, err = a.AllocateSpecific(testCtx(t), "n", ip("2016:617::1"))
		expectErr(t, err, ipam.ErrInUse, "ip address 2016:617::1 is not available")
		_, err = a.AllocateSpecific(testCtx(t), "n", ip("2016:618::1"))
		expectErr(t, err, ipam.ErrOutOfSubnet, "")
		_, err = a.Release(testCtx(t), "n", ip("10.0.0.1"))
		expectErr(t, err, ipam.ErrOutOfSubnet, "")
		if got, err := a.AllocateSpecific(testCtx(t), "n", ip("2016:617::2")); err != nil || got != ip("2016:617::2") {
			t.Fatalf("preferred: %v %v", got, err)
		}
		list, err := a.Allocated(testCtx(t), "n")
		if err != nil || fmt.Sprint(list) != "[2016:617::1 2016:617::2 2016:617::3 2016:617::4 2016:617::5]" {
			t.Fatalf("allocated: %v %v", list, err)
		}
	})

	t.Run("WrapAndMaxHosts", func(t *testing.T) {
		a := newV6(t)
		if _, err := a.CreatePool(testCtx(t), "w", "fd00::/126"); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"fd00::1", "fd00::2", "fd00::3"} {
			if got := alloc(t, a, "w"); got != ip(want) {
				t.Fatalf("got %s, want %s", got, want)
			}
		}
		_, err := a.Allocate(testCtx(t), "w")
		expectErr(t, err, ipam.ErrExhausted, "Reached MaxHosts")
		if _, err := a.Release(testCtx(t), "w", ip("fd00::2")); err != nil {
			t.Fatal(err)
		}
		if got := alloc(t, a, "w"); got != ip("fd00::2") {
			t.Fatalf("after wrap got %s, want fd00::2", got)
		}
		if _, err := a.CreatePool(testCtx(t), "one", "fd01::5/128"); err != nil {
			t.Fatal(err)
		}
		_, err = a.Allocate(testCtx(t), "one")
		expectErr(t, err, ipam.ErrExhausted, "Reached MaxHosts")
	})

	t.Run("BadInput", func(t *testing.T) {
		a := newV6(t)
		_, err := a.CreatePool(testCtx(t), "b", "2001::/8")
		expectErr(t, err, ipam.ErrInvalid, "subnet length 8 not supported")
		_, err = a.CreatePool(testCtx(t), "b", "10.0.0.0/24")
		expectErr(t, err, ipam.ErrInvalid, "")
		_, err = a.CreatePool(testCtx(t), "b", "2001::/64", ipam.WithGateway("2002::1"))
		expectErr(t, err, ipam.ErrOutOfSubnet, "")
		_, err = a.Allocate(testCtx(t), "b")
		expectErr(t, err, ipam.ErrPoolNotFound, "")
	})

	t.Run("ConcurrentTwoClients", func(t *testing.T) {
		root := objdbtest.UniqueRoot(t)
		as := []*ipam.V6{ipam.NewV6(s.client(t, root)), ipam.NewV6(s.client(t, root))}
		if _, err := as[0].CreatePool(testCtx(t), "c", "fd02::/122"); err != nil {
			t.Fatal(err)
		}
		ctx := testCtx(t)
		got := drain(t, 16, func(g int) (netip.Addr, error) { return as[g%2].Allocate(ctx, "c") })
		if len(got) != 63 {
			t.Fatalf("%d distinct addresses, want 63", len(got))
		}
	})

	t.Run("Delete", func(t *testing.T) {
		a := newV6(t)
		if _, err := a.CreatePool(testCtx(t), "d", "fd03::/64"); err != nil {
			t.Fatal(err)
		}
		alloc(t, a, "d")
		if err := a.DeletePool(testCtx(t), "d"); err != nil {
			t.Fatal(err)
		}
		if _, err := a.CreatePool(testCtx(t), "d", "fd04::/64"); err != nil {
			t.Fatal(err)
		}
		if got := alloc(t, a, "d"); got != ip("fd04::1") {
			t.Fatalf("after re-create got %s", got)
		}
	})
}
