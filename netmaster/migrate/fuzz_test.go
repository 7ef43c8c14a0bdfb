package migrate

import (
	"os"
	"path/filepath"
	"testing"
)

// The source decoders never panic, and a tree they accept maps without
// panicking (docs/architecture.md decision 7). Corpus: testdata/fuzz.

func FuzzDecodeDump(f *testing.F) {
	f.Add([]byte(`{"action":"get","node":{"dir":true,"nodes":[{"key":"/contiv.io/state/nets/a.b","value":"{}"}]}}`))
	f.Add([]byte(`[{"key":"contiv.io/state/eps/x","flags":0,"value":"e30="}]`))
	f.Add([]byte(`{"errorCode":100,"message":"Key not found"}`))
	if data, err := os.ReadFile(filepath.Join("testdata", "original-store", "etcd-v2-dump.json")); err == nil {
		f.Add(data[:4096])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := DecodeDump(data)
		if err != nil {
			return
		}
		p := Map(tr)
		_ = p.Err(false)
		_ = p.Digest()
	})
}

func FuzzDecodeBits(f *testing.F) {
	f.Add("AAAAAAAAAQAAAAAAAAAAPwAAAAAAAAAAAAAAAAAAAADAAAAAAAAAAA==", uint64(256))
	f.Add("f_________8AAAAAAAAAAA==", uint64(4096))
	f.Add("", uint64(8))
	f.Fuzz(func(t *testing.T, s string, max uint64) {
		max %= 1 << 24
		b, err := decodeBits(s, max)
		if err != nil {
			return
		}
		if b.n > max || uint64(len(b.words))*64 < b.n {
			t.Fatalf("decoded %d bits in %d words, max %d", b.n, len(b.words), max)
		}
		for i := uint64(0); i < b.n && i < 1024; i++ {
			b.test(i)
		}
	})
}

// FuzzMapNetwork feeds arbitrary network and group records to Map.
func FuzzMapNetwork(f *testing.F) {
	tr := func() *Tree {
		data, err := os.ReadFile(filepath.Join("testdata", "original-store", "etcd-v2-dump.json"))
		if err != nil {
			f.Fatal(err)
		}
		t, err := DecodeEtcdV2(data)
		if err != nil {
			f.Fatal(err)
		}
		return t
	}()
	f.Add(tr.KV["state/nets/web-net.blue"], tr.KV["state/endpointGroups/pooled:blue"])
	f.Add(tr.KV["state/nets/v6-net.blue"], tr.KV["state/endpointGroups/backend:blue"])
	f.Fuzz(func(t *testing.T, netVal, groupVal []byte) {
		t2 := &Tree{KV: map[string][]byte{}}
		for _, k := range []string{"state/auto-vlan/global", "oper/auto-vlan/global", "state/auto-vxlan/global",
			"oper/auto-vxlan/global", "oper/global/global", "state/eps/web-net.blue-bw1", "state/eps/web-net.blue-bp1",
			"state/serviceLB/websvc:blue"} {
			t2.KV[k] = tr.KV[k]
		}
		t2.KV["state/nets/web-net.blue"] = netVal
		t2.KV["state/endpointGroups/pooled:blue"] = groupVal
		p := Map(t2)
		_ = p.Err(true)
	})
}
