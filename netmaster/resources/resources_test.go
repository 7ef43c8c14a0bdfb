package resources_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"github.com/contiv/netplugin/netmaster/resources"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/objdb/objdbtest"
	"github.com/contiv/netplugin/state"
	"github.com/contiv/netplugin/utils/usererr"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, objdbtest.LeakOptions()...) }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func connect(t *testing.T, srv objdbtest.Server, root string) objdb.Store {
	t.Helper()
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	log.SetOutput(os.Stderr)
	c, err := etcd.New(testCtx(t), etcd.Config{Endpoints: []string{srv.Endpoint}, Root: root, Logger: logrus.NewEntry(log)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func expectErr(t *testing.T, err, kind error, text string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("error %v, want %v", err, kind)
	}
	if text != "" && usererr.Message(err) != text {
		t.Fatalf("message %q, want %q", usererr.Message(err), text)
	}
}

func TestParseTagRanges(t *testing.T) {
	for _, tc := range []struct {
		in   string
		kind resources.TagKind
		want string // fmt of the ranges, or the error text
	}{
		{"1-4094", resources.VLAN, "[{1 4094}]"},
		{" 1-10 , 20-30", resources.VLAN, "[{1 10} {20 30}]"},
		{"", resources.VLAN, "[{0 0}]"},
		{"", resources.VXLAN, "[{0 0}]"},
		{"7", resources.VLAN, "[{7 7}]"},
		{"1-4095", resources.VLAN, "[{1 4095}]"},
		{"1-5000", resources.VLAN, "invalid range 1-5000, vlan values exceed 4095 max allowed"},
		{"0-4094", resources.VLAN, "invalid range 0-4094, values less than 1"},
		{"10-5", resources.VLAN, "invalid range 10-5, min is greater than max"},
		{"abcd", resources.VLAN, "invalid range abcd"},
		{"1?2", resources.VLAN, "invalid range 1?2"},
		{"1-10000", resources.VXLAN, "[{1 10000}]"},
		{"1-16001", resources.VXLAN, "[{1 16001}]"},
		{"1-16002", resources.VXLAN, "does not allow vxlan range to exceed 16000 range 1-16002"},
		{"1-20000", resources.VXLAN, "does not allow vxlan range to exceed 16000 range 1-20000"},
		{"1-100000", resources.VXLAN, "invalid range 1-100000, vxlan values exceed 65535 max allowed"},
		{"60000-65535", resources.VXLAN, "[{60000 65535}]"},
		{"1-10, 20-30", resources.VXLAN, "invalid range 1-10, 20-30, only one vxlan range is allowed"},
	} {
		rs, err := resources.ParseTagRanges(tc.in, tc.kind)
		got := fmt.Sprint(rs)
		if err != nil {
			got = usererr.Message(err)
			if !errors.Is(err, resources.ErrInvalidRange) {
				t.Errorf("%q: error %v is not ErrInvalidRange", tc.in, err)
			}
		}
		if got != tc.want {
			t.Errorf("ParseTagRanges(%q, %v) = %s, want %s", tc.in, tc.kind, got, tc.want)
		}
	}
	if got := resources.FormatTags([]uint{1, 2, 3, 7, 9, 10}); got != "1-3, 7, 9-10" {
		t.Errorf("FormatTags = %q", got)
	}
}

func TestTagPools(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	newManager := func(t *testing.T) (*resources.Manager, objdb.Store) {
		kv := connect(t, srv, objdbtest.UniqueRoot(t))
		return resources.New(kv), kv
	}

	t.Run("VLAN", func(t *testing.T) {
		m, kv := newManager(t)
		ctx := testCtx(t)
		_, err := m.AllocateVLAN(ctx, 0)
		expectErr(t, err, resources.ErrNotDefined, "")
		if err := m.DefineVLANs(ctx, "1-4094"); err != nil {
			t.Fatal(err)
		}
		if v, err := m.AllocateVLAN(ctx, 0); err != nil || v != 1 {
			t.Fatalf("auto vlan %d %v, want 1", v, err)
		}
		_, err = m.AllocateVLAN(ctx, 1)
		expectErr(t, err, resources.ErrVLANUnavailable, "requested vlan not available - vlan:1")
		_, err = m.AllocateVLAN(ctx, 5000)
		expectErr(t, err, resources.ErrVLANUnavailable, "requested vlan not available - vlan:5000")
		_, err = m.AllocateVLAN(ctx, 4095)
		expectErr(t, err, resources.ErrVLANUnavailable, "requested vlan not available - vlan:4095")
		for _, v := range []uint{2, 3, 7} {
			if _, err := m.AllocateVLAN(ctx, v); err != nil {
				t.Fatal(err)
			}
		}
		if list, n, err := m.VLANsInUse(ctx); err != nil || list != "1-3, 7" || n != 4 {
			t.Fatalf("in use %q %d %v", list, n, err)
		}
		if err := m.FreeVLAN(ctx, 2); err != nil {
			t.Fatal(err)
		}
		if err := m.FreeVLAN(ctx, 2); err != nil {
			t.Fatalf("second free: %v", err)
		}
		if v, _ := m.AllocateVLAN(ctx, 0); v != 2 {
			t.Fatalf("lowest free after free: %d", v)
		}
		// Stored in the original's keys and JSON.
		var cfg state.VlanResource
		if cfg, err = state.New(kv).VlanCfg.Read(ctx, "global"); err != nil || !cfg.VLANs.Test(4094) || cfg.VLANs.Test(0) || cfg.VLANs.Test(4095) {
			t.Fatalf("state/auto-vlan/global: %v", err)
		}
		if _, err := kv.Get(ctx, "oper/auto-vlan/global"); err != nil {
			t.Fatal(err)
		}
		// A tiny pool runs out.
		if err := m.DeleteVLANs(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.DefineVLANs(ctx, "100-101"); err != nil {
			t.Fatal(err)
		}
		for _, want := range []uint{100, 101} {
			if v, err := m.AllocateVLAN(ctx, 0); err != nil || v != want {
				t.Fatalf("got %d %v, want %d", v, err, want)
			}
		}
		_, err = m.AllocateVLAN(ctx, 0)
		expectErr(t, err, resources.ErrVLANExhausted, "no vlans available")
		_, err = m.AllocateVLAN(ctx, 99)
		expectErr(t, err, resources.ErrVLANUnavailable, "requested vlan not available - vlan:99")
	})

	t.Run("VLANRedefinition", func(t *testing.T) {
		// docs/rest-api.md §4 item 7.
		m, _ := newManager(t)
		ctx := testCtx(t)
		if err := m.DefineVLANs(ctx, "1-4094"); err != nil {
			t.Fatal(err)
		}
		for _, v := range []uint{10, 11, 300} {
			if _, err := m.AllocateVLAN(ctx, v); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.DefineVLANs(ctx, "9-301"); err != nil {
			t.Fatal(err)
		}
		_, err := m.AllocateVLAN(ctx, 10)
		expectErr(t, err, resources.ErrVLANUnavailable, "requested vlan not available - vlan:10")
		_, err = m.AllocateVLAN(ctx, 302)
		expectErr(t, err, resources.ErrVLANUnavailable, "")
		if _, err := m.AllocateVLAN(ctx, 299); err != nil {
			t.Fatal(err)
		}
		for _, r := range []string{"50-301", "1-200"} {
			err := m.DefineVLANs(ctx, r)
			expectErr(t, err, resources.ErrRangeInUse, "cannot update the vlan range due to existing vlans 10-11, 299-300")
		}
		// In-use check comes before the range rules.
		err = m.DefineVLANs(ctx, "20-5000")
		expectErr(t, err, resources.ErrRangeInUse, "")
		err = m.DefineVLANs(ctx, "1-5000")
		expectErr(t, err, resources.ErrInvalidRange, "invalid range 1-5000, vlan values exceed 4095 max allowed")
		if err := m.DefineVLANs(ctx, "1-800"); err != nil {
			t.Fatal(err)
		}
		if list, n, _ := m.VLANsInUse(ctx); list != "10-11, 299-300" || n != 4 {
			t.Fatalf("in use after redefinitions %q %d", list, n)
		}
		if _, err := m.AllocateVLAN(ctx, 700); err != nil {
			t.Fatal(err)
		}
		if err := m.FreeVLAN(ctx, 700); err != nil {
			t.Fatal(err)
		}
		if _, err := m.AllocateVLAN(ctx, 700); err != nil {
			t.Fatal(err)
		}
		if v, _ := m.AllocateVLAN(ctx, 0); v != 1 {
			t.Fatalf("lowest free %d, want 1", v)
		}
	})

	t.Run("VXLAN", func(t *testing.T) {
		// docs/rest-api.md §4 item 15.
		m, kv := newManager(t)
		ctx := testCtx(t)
		start, err := m.DefineVXLANs(ctx, "1-10000")
		if err != nil || start != 0 {
			t.Fatalf("define: %d %v", start, err)
		}
		for _, want := range [][2]uint{{1, 1}, {2, 2}} {
			vni, lv, err := m.AllocateVXLAN(ctx, 0)
			if err != nil || vni != want[0] || lv != want[1] {
				t.Fatalf("auto: vni %d local %d %v, want %v", vni, lv, err, want)
			}
		}
		if vni, lv, err := m.AllocateVXLAN(ctx, 1000); err != nil || vni != 1000 || lv != 3 {
			t.Fatalf("vni 1000: %d %d %v", vni, lv, err)
		}
		_, _, err = m.AllocateVXLAN(ctx, 1)
		expectErr(t, err, resources.ErrVXLANUnavailable, "requested vxlan not available")
		_, _, err = m.AllocateVXLAN(ctx, 20000)
		expectErr(t, err, resources.ErrVXLANUnavailable, "requested vxlan not available")
		if list, n, _ := m.VXLANsInUse(ctx); list != "1-2, 1000" || n != 3 {
			t.Fatalf("in use %q %d", list, n)
		}
		if err := m.FreeVXLAN(ctx, 2, 2); err != nil {
			t.Fatal(err)
		}
		if vni, lv, _ := m.AllocateVXLAN(ctx, 0); vni != 2 || lv != 2 {
			t.Fatalf("after free: %d %d", vni, lv)
		}
		// Ranges 100-1000: VNI 99 is out of range (≤ start), 1001 is not available.
		m2, kv2 := newManager(t)
		if start, err := m2.DefineVXLANs(ctx, "100-1000"); err != nil || start != 99 {
			t.Fatalf("define: %d %v", start, err)
		}
		_, _, err = m2.AllocateVXLAN(ctx, 99)
		expectErr(t, err, resources.ErrVXLANOutOfRange, "requested vxlan is out of range")
		_, _, err = m2.AllocateVXLAN(ctx, 1001)
		expectErr(t, err, resources.ErrVXLANUnavailable, "requested vxlan not available")
		if vni, _, err := m2.AllocateVXLAN(ctx, 0); err != nil || vni != 100 {
			t.Fatalf("auto %d %v", vni, err)
		}
		// FreeVXLANsStart is persisted at the first definition (§10 #4).
		cfg, err := state.New(kv2).VxlanCfg.Read(ctx, "global")
		if err != nil || cfg.FreeVXLANsStart != 99 {
			t.Fatalf("state/auto-vxlan/global start %d %v", cfg.FreeVXLANsStart, err)
		}
		if _, err := kv.Get(ctx, "oper/auto-vxlan/global"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("VXLANRedefinition", func(t *testing.T) {
		// docs/rest-api.md §4 item 8.
		m, _ := newManager(t)
		ctx := testCtx(t)
		if _, err := m.DefineVXLANs(ctx, "1-10000"); err != nil {
			t.Fatal(err)
		}
		for i, vni := range []uint{1000, 1001, 2000} {
			if _, lv, err := m.AllocateVXLAN(ctx, vni); err != nil || lv != uint(i+1) {
				t.Fatalf("vni %d: local %d %v", vni, lv, err)
			}
		}
		if start, err := m.DefineVXLANs(ctx, "1000-2500"); err != nil || start != 999 {
			t.Fatalf("redefine: %d %v", start, err)
		}
		if list, _, _ := m.VXLANsInUse(ctx); list != "1000-1001, 2000" {
			t.Fatalf("in use after redefinition %q (translated through the old start)", list)
		}
		_, _, err := m.AllocateVXLAN(ctx, 1000)
		expectErr(t, err, resources.ErrVXLANUnavailable, "")
		_, _, err = m.AllocateVXLAN(ctx, 2501)
		expectErr(t, err, resources.ErrVXLANUnavailable, "")
		if _, lv, err := m.AllocateVXLAN(ctx, 2200); err != nil || lv != 4 {
			t.Fatalf("vni 2200: local %d %v", lv, err)
		}
		for _, r := range []string{"2000-10000", "1000-2000"} {
			_, err := m.DefineVXLANs(ctx, r)
			expectErr(t, err, resources.ErrRangeInUse, "cannot update the vxlan range due to existing vxlans 1000-1001, 2000, 2200")
		}
		if _, err := m.DefineVXLANs(ctx, "1000-9000"); err != nil {
			t.Fatal(err)
		}
		if list, n, _ := m.VXLANsInUse(ctx); list != "1000-1001, 2000, 2200" || n != 4 {
			t.Fatalf("in use %q %d", list, n)
		}
		if _, lv, err := m.AllocateVXLAN(ctx, 3200); err != nil || lv != 5 {
			t.Fatalf("vni 3200: local %d %v", lv, err)
		}
		if err := m.FreeVXLAN(ctx, 3200, 5); err != nil {
			t.Fatal(err)
		}
		if _, lv, err := m.AllocateVXLAN(ctx, 3200); err != nil || lv != 5 {
			t.Fatalf("vni 3200 again: local %d %v", lv, err)
		}
		_, _, err = m.AllocateVXLAN(ctx, 999)
		expectErr(t, err, resources.ErrVXLANOutOfRange, "requested vxlan is out of range")
	})

	t.Run("LocalVLANsRunOut", func(t *testing.T) {
		m, kv := newManager(t)
		ctx := testCtx(t)
		if _, err := m.DefineVXLANs(ctx, "1-10"); err != nil {
			t.Fatal(err)
		}
		// Take every local VLAN but one by hand.
		st := state.New(kv)
		oper, ver, err := st.VxlanOper.ReadVersion(ctx, "global")
		if err != nil {
			t.Fatal(err)
		}
		for lv := uint(1); lv < 4094; lv++ {
			oper.FreeLocalVLANs.Clear(lv)
		}
		if _, err := st.VxlanOper.Write(ctx, oper, objdb.WithPrevVersion(ver)); err != nil {
			t.Fatal(err)
		}
		if _, lv, err := m.AllocateVXLAN(ctx, 0); err != nil || lv != 4094 {
			t.Fatalf("last local vlan %d %v", lv, err)
		}
		_, _, err = m.AllocateVXLAN(ctx, 0)
		expectErr(t, err, resources.ErrLocalVLANExhausted, "no local vlans available")
		for range 9 {
			if err := m.FreeVXLAN(ctx, 0, 4094); err != nil {
				t.Fatal(err)
			}
			if _, _, err := m.AllocateVXLAN(ctx, 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.FreeVXLAN(ctx, 0, 4094); err != nil {
			t.Fatal(err)
		}
		_, _, err = m.AllocateVXLAN(ctx, 0)
		expectErr(t, err, resources.ErrVXLANExhausted, "no vxlans available")
	})

	t.Run("ConcurrentTwoClients", func(t *testing.T) {
		root := objdbtest.UniqueRoot(t)
		ms := []*resources.Manager{resources.New(connect(t, srv, root)), resources.New(connect(t, srv, root))}
		ctx := testCtx(t)
		if err := ms[0].DefineVLANs(ctx, "1-40"); err != nil {
			t.Fatal(err)
		}
		if _, err := ms[0].DefineVXLANs(ctx, "5001-5040"); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		vlans, vnis, locals := map[uint]int{}, map[uint]int{}, map[uint]int{}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m := ms[g%2]
				for {
					v, err1 := m.AllocateVLAN(ctx, 0)
					vni, lv, err2 := m.AllocateVXLAN(ctx, 0)
					if errors.Is(err1, resources.ErrVLANExhausted) && errors.Is(err2, resources.ErrVXLANExhausted) {
						return
					}
					mu.Lock()
					if err1 == nil {
						vlans[v]++
					}
					if err2 == nil {
						vnis[vni]++
						locals[lv]++
					}
					mu.Unlock()
					for _, err := range []error{err1, err2} {
						if err != nil && !errors.Is(err, resources.ErrVLANExhausted) && !errors.Is(err, resources.ErrVXLANExhausted) {
							errs <- err
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for name, m := range map[string]map[uint]int{"vlan": vlans, "vni": vnis, "local vlan": locals} {
			if len(m) != 40 {
				t.Fatalf("%d distinct %ss, want 40", len(m), name)
			}
			for tag, n := range m {
				if n != 1 {
					t.Fatalf("%s %d handed out %d times", name, tag, n)
				}
			}
		}
	})
}

// Pools defined again after a delete keep the tags their owners hold
// (resources.Held): the held tags are not handed out, and a range that
// leaves one out is refused and changes nothing.
func TestDefineKeepsHeldTags(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	kv := connect(t, srv, objdbtest.UniqueRoot(t))
	m := resources.New(kv)
	ctx := testCtx(t)
	held := resources.Held{VLANs: []uint{5, 7}, VXLANs: []uint{101}, LocalVLANs: []uint{1}}

	err := m.DefineVLANs(ctx, "6-10", held)
	expectErr(t, err, resources.ErrRangeInUse, "cannot update the vlan range due to existing vlans 5, 7")
	_, err = m.DefineVXLANs(ctx, "102-200", held)
	expectErr(t, err, resources.ErrRangeInUse, "cannot update the vxlan range due to existing vxlans 101")
	if kvs, err := kv.List(ctx, ""); err != nil || len(kvs) != 0 {
		t.Fatalf("refused definitions wrote %d keys (%v)", len(kvs), err)
	}

	if err := m.DefineVLANs(ctx, "5-10", held); err != nil {
		t.Fatal(err)
	}
	if _, err := m.DefineVXLANs(ctx, "100-200", held); err != nil {
		t.Fatal(err)
	}
	if list, n, err := m.VLANsInUse(ctx); err != nil || list != "5, 7" || n != 2 {
		t.Fatalf("vlans in use %q %d %v", list, n, err)
	}
	var got []uint
	for i := 0; i < 3; i++ {
		v, err := m.AllocateVLAN(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if fmt.Sprint(got) != "[6 8 9]" {
		t.Fatalf("vlans handed out %v, want [6 8 9]", got)
	}
	vni, local, err := m.AllocateVXLAN(ctx, 0)
	if err != nil || vni != 100 || local == 1 {
		t.Fatalf("vxlan %d local vlan %d %v: want vni 100 and a local vlan other than the held 1", vni, local, err)
	}
	if vni, _, err := m.AllocateVXLAN(ctx, 0); err != nil || vni != 102 {
		t.Fatalf("second vxlan %d %v, want 102 (101 is held)", vni, err)
	}
}
