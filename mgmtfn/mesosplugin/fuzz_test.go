package mesosplugin

import (
	"bytes"
	"testing"
)

// The Mesos network configuration decoder (args["org.apache.mesos"]
// ["network_info"]["labels"]["labels"]) and the server's request decoder
// never panic; what they accept is consistent (docs/architecture.md
// decision 7).
func FuzzLoadConf(f *testing.F) {
	f.Add([]byte(`{"cniVersion":"0.2.0","name":"contiv","type":"netcontiv","args":{"org.apache.mesos":{"network_info":{"name":"contiv","labels":{"labels":[{"key":"io.contiv.tenant","value":"t1"},{"key":"io.contiv.network","value":"web"},{"key":"io.contiv.net-group","value":"front"}]}}}}}`))
	f.Add([]byte(`{"cniVersion":"0.3.1","name":"contiv","type":"netcontiv","args":{"org.apache.mesos":{"network_info":{"labels":{"labels":[{"key":"io.contiv.tenant"},{"key":"io.contiv.tenant","value":"x"}]}}}}}`))
	f.Add([]byte(`{"args":{"org.apache.mesos":{"network_info":null}}}`))
	f.Add([]byte(`{"args":{"org.apache.mesos":{"network_info":{"labels":{"labels":null}}}}}`))
	f.Add([]byte(`{"cniVersion":"0.3.1","prevResult":{"ips":[{"address":"198.18.0.2/24"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		conf, err := LoadConf(data)
		if err != nil {
			if conf != nil {
				t.Fatalf("error %v with a configuration", err)
			}
			return
		}
		labels, err := conf.ContivLabels()
		if err != nil {
			t.Fatalf("LoadConf accepted labels ContivLabels refuses: %v", err)
		}
		for k := range labels {
			if k != LabelTenant && k != LabelNetwork && k != LabelGroup {
				t.Fatalf("label %q kept", k)
			}
		}
	})
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"cni_ifname":"eth0","cni_netns":"/proc/1/ns/net","cni_containerid":"c1","labels":{"io.contiv.tenant":"t"}}`), true)
	f.Add([]byte(`{"cni_ifname":"eth0","cni_containerid":"c1"}`), false)
	f.Fuzz(func(t *testing.T, data []byte, needNetNS bool) {
		req, p, err := DecodeRequest(bytes.NewReader(data), needNetNS)
		if err != nil {
			return
		}
		if p.InfraContainerID != req.ContainerID || p.IntfName != req.IfName || (needNetNS && p.NwNameSpace == "") {
			t.Fatalf("accepted %+v as %+v", req, p)
		}
	})
}
