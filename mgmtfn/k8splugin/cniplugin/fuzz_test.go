package cniplugin_test

import (
	"errors"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/contiv/netplugin/mgmtfn/k8splugin/cniplugin"
)

// FuzzLoadConf feeds arbitrary configurations (with prevResults) to the
// plugin's configuration loader: it never panics and every refusal is a
// CNI error with a decoding (6) or configuration (7) code.
// Seeds: testdata/fuzz/FuzzLoadConf.
func FuzzLoadConf(f *testing.F) {
	f.Add([]byte(`{"cniVersion":"1.0.0","name":"contiv-net","type":"contivk8s","socket":"/run/contiv/contiv-cni.sock"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		conf, err := cniplugin.LoadConf(data)
		if err != nil {
			var ce *types.Error
			if !errors.As(err, &ce) || (ce.Code != types.ErrDecodingFailure && ce.Code != types.ErrInvalidNetworkConfig) {
				t.Fatalf("refusal %v is not a CNI error with code 6 or 7", err)
			}
			return
		}
		if conf.RawPrevResult != nil && conf.PrevResult == nil {
			t.Fatalf("prevResult accepted but not parsed: %s", data)
		}
		if conf.PrevResult != nil {
			// ADD and CHECK convert it; that must not panic either.
			_, _ = current.NewResultFromResult(conf.PrevResult)
		}
	})
}
