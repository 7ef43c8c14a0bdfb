// Package migrate benchmarks `netmaster migrate` (docs/upgrade.md): time
// and peak memory to carry the fixture of an original cluster, and a
// synthetic original store of 100 000 endpoints in the original's key
// layout, into an etcd (v3) target.
//
//	go test ./test/bench/migrate -run '^$' -bench . -benchtime 1x
package migrate

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contiv/netplugin/netmaster/migrate"
	"github.com/contiv/netplugin/netmaster/migrate/migratecmd"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

func BenchmarkMigrateFixture(b *testing.B) {
	src := migrate.FileSource{Path: filepath.Join("..", "..", "..", "netmaster", "migrate", "testdata", "original-store", "etcd-v2-dump.json")}
	run(b, src)
}

func BenchmarkMigrate100kEndpoints(b *testing.B) {
	p := filepath.Join(b.TempDir(), "dump.json")
	if err := os.WriteFile(p, synthetic(b, 100000), 0o600); err != nil {
		b.Fatal(err)
	}
	fi, _ := os.Stat(p)
	b.ReportMetric(float64(fi.Size())/(1<<20), "source-MB")
	run(b, migrate.FileSource{Path: p})
}

func run(b *testing.B, src migrate.Source) {
	for i := 0; i < b.N; i++ {
		tgt := objdbtest.StartEtcdProcess(b)
		runtime.GC()
		peak := sampleHeap()
		start := time.Now()
		var out bytes.Buffer
		code, err := migratecmd.Run(context.Background(), migratecmd.Config{Source: src, EtcdEndpoints: []string{tgt.Endpoint}}, &out)
		el := time.Since(start)
		heap := peak()
		if err != nil {
			b.Fatalf("migrate (exit %d): %v\n%s", code, err, out.String())
		}
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		b.ReportMetric(el.Seconds(), "s-migrate")
		b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MB")
		b.ReportMetric(float64(ru.Maxrss)/1024, "maxrss-MB")
		start = time.Now()
		out.Reset()
		if _, err := migratecmd.Run(context.Background(), migratecmd.Config{Source: src, EtcdEndpoints: []string{tgt.Endpoint}}, &out); err != nil {
			b.Fatalf("second run: %v", err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s-second-run")
	}
}

// sampleHeap samples the live heap every 5 ms until the returned function
// is called, which returns the largest sample.
func sampleHeap() func() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var mu sync.Mutex
	var peak uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			mu.Lock()
			peak = max(peak, s[0].Value.Uint64())
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-stopped
		return peak
	}
}

// bitset encodes n bits with the first set bits set, plus the last
// (broadcast) and the gateway below it, as the original did.
func bitset(n, set int) string {
	words := make([]uint64, (n+63)/64)
	mark := func(i int) { words[i/64] |= 1 << (i % 64) }
	for i := 0; i <= set; i++ {
		mark(i)
	}
	mark(n - 1)
	mark(n - 2)
	buf := make([]byte, 8+8*len(words))
	binary.BigEndian.PutUint64(buf, uint64(n))
	for i, w := range words {
		binary.BigEndian.PutUint64(buf[8+8*i:], w)
	}
	return base64.URLEncoding.EncodeToString(buf)
}

// synthetic is an etcd v2 dump of an original cluster with eps endpoints
// over three VXLAN networks of tenant "default" (docs/daemons.md §2–§3).
func synthetic(b *testing.B, eps int) []byte {
	type node struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	var nodes []node
	put := func(k string, v any) {
		j, err := json.Marshal(v)
		if err != nil {
			b.Fatal(err)
		}
		nodes = append(nodes, node{"/contiv.io/" + k, string(j)})
	}
	nets := []struct {
		name string
		base [4]byte
		plen int
		n    int
	}{{"n0", [4]byte{198, 18, 0, 0}, 16, eps * 6 / 10}, {"n1", [4]byte{198, 19, 0, 0}, 17, eps * 3 / 10}, {"n2", [4]byte{198, 19, 128, 0}, 18, eps - eps*6/10 - eps*3/10}}
	put("master/config/global", map[string]string{"id": "", "nw-infra-type": "default", "fwd-mode": "routing", "arp-mode": "proxy", "pvt-subnet": "172.19.0.0/16"})
	put("state/global/global", map[string]any{"id": "", "auto": map[string]string{"VLANs": "1-4094", "VXLANs": "10000-20000"}})
	put("oper/global/global", map[string]any{"id": "", "defaultNetwork": "", "freeVXLANsStart": 9999})
	put("obj/modeldb/global/global", map[string]string{"key": "global", "name": "global", "networkInfraType": "default", "fwdMode": "routing", "arpMode": "proxy", "vlans": "1-4094", "vxlans": "10000-20000", "pvtSubnet": "172.19.0.0/16"})
	put("obj/modeldb/tenant/default", map[string]string{"key": "default", "tenantName": "default"})
	allVLANs := func(from, to int) string {
		w := make([]uint64, 64)
		for i := from; i <= to; i++ {
			w[i/64] |= 1 << (i % 64)
		}
		buf := make([]byte, 8+512)
		binary.BigEndian.PutUint64(buf, 4096)
		for i, x := range w {
			binary.BigEndian.PutUint64(buf[8+8*i:], x)
		}
		return base64.URLEncoding.EncodeToString(buf)
	}
	vx := func(from, to int) string {
		w := make([]uint64, 256)
		for i := from; i <= to; i++ {
			w[i/64] |= 1 << (i % 64)
		}
		buf := make([]byte, 8+2048)
		binary.BigEndian.PutUint64(buf, 16384)
		for i, x := range w {
			binary.BigEndian.PutUint64(buf[8+8*i:], x)
		}
		return base64.URLEncoding.EncodeToString(buf)
	}
	put("state/auto-vlan/global", map[string]string{"id": "global", "vlans": allVLANs(1, 4094)})
	put("oper/auto-vlan/global", map[string]string{"id": "global", "freeVLANs": allVLANs(1, 4094)})
	put("state/auto-vxlan/global", map[string]any{"id": "global", "vxlans": vx(1, 10001), "LocalVLANs": allVLANs(1, 4094), "FreeVXLANsStart": 9999})
	put("oper/auto-vxlan/global", map[string]any{"id": "global", "freeVXLANs": vx(4, 10001), "freeLocalVLANs": allVLANs(4, 4094)})
	for ni, n := range nets {
		size := 1 << (32 - n.plen)
		ip := func(h int) string {
			v := binary.BigEndian.Uint32(n.base[:]) + uint32(h)
			return fmt.Sprintf("%d.%d.%d.%d", v>>24, byte(v>>16), byte(v>>8), byte(v))
		}
		id := n.name + ".default"
		put("obj/modeldb/network/default:"+n.name, map[string]any{"key": "default:" + n.name, "encap": "vxlan", "networkName": n.name,
			"nwType": "data", "subnet": ip(0) + fmt.Sprintf("/%d", n.plen), "gateway": ip(size - 2), "tenantName": "default",
			"links": map[string]any{"Tenant": map[string]string{"type": "tenant", "key": "default"}}})
		put("state/nets/"+id, map[string]any{"id": id, "tenant": "default", "networkName": n.name, "nwType": "data",
			"pktTagType": "vxlan", "pktTag": ni + 1, "extPktTag": 10000 + ni, "subnetIP": ip(0), "subnetLen": n.plen,
			"gateway": ip(size - 2), "ipAddrRange": ip(0) + "-" + ip(size-1), "epAddrCount": n.n, "epCount": n.n,
			"ipAllocMap": bitset(size, n.n), "ipv6SubnetIP": "", "ipv6SubnetLen": 0, "ipv6Gateway": "", "ipv6AllocMap": nil,
			"ipv6LastHost": "", "networkTag": id})
		for h := 1; h <= n.n; h++ {
			epID := fmt.Sprintf("%s-c%d", id, h)
			v := binary.BigEndian.Uint32(n.base[:]) + uint32(h)
			put("state/eps/"+epID, map[string]any{"id": epID, "netID": id, "endpointID": fmt.Sprintf("c%d", h),
				"serviceName": "", "endpointGroupId": 0, "endpointGroupKey": "", "ipAddress": ip(h), "ipv6Address": "",
				"macAddress": fmt.Sprintf("02:02:%02x:%02x:%02x:%02x", v>>24, byte(v>>16), byte(v>>8), byte(v)),
				"homingHost": fmt.Sprintf("host%d", h%50), "intfName": "", "vtepIP": "", "labels": nil, "containerId": "", "epCommonName": ""})
		}
	}
	data, err := json.Marshal(map[string]any{"action": "get", "node": map[string]any{"dir": true, "nodes": nodes}})
	if err != nil {
		b.Fatal(err)
	}
	return data
}
