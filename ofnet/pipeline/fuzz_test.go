package pipeline

import "testing"

// FuzzNormalizeDump: arbitrary dump-flows text never panics the normaliser.
func FuzzNormalizeDump(f *testing.F) {
	f.Add(" cookie=0x5, duration=1.5s, table=9, n_packets=0, n_bytes=0, priority=100,dl_vlan=1 actions=drop\n")
	f.Add("OFPST_FLOW reply (OF1.3) (xid=0x2):\n cookie=, actions=")
	f.Fuzz(func(t *testing.T, s string) {
		_ = NormalizeDump(s, false)
		_ = NormalizeDump(s, true)
	})
}
