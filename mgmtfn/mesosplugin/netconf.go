package mesosplugin

import (
	"fmt"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/contiv/netplugin/mgmtfn/k8splugin/cniplugin"
)

// Label keys that place a container: the Kubernetes front end's
// (docs/mesos.md).
const (
	LabelTenant  = cniplugin.LabelTenant
	LabelNetwork = cniplugin.LabelNetwork
	LabelGroup   = cniplugin.LabelGroup
)

// NetConf is the network configuration netcontiv reads on stdin: the
// operator's file from Mesos' --network_cni_config_dir,
//
//	{"cniVersion":"0.3.1","name":"contiv","type":"netcontiv"}
//
// with optional "socket" (netplugin's Mesos socket, DefaultSocket) and
// "logFile" (default /var/log/netcontiv.log, "" or "-" for standard
// error), to which Mesos adds the container's NetworkInfo:
//
//	"args":{"org.apache.mesos":{"network_info":{"name":"contiv",
//	  "labels":{"labels":[{"key":"io.contiv.tenant","value":"t1"}, …]}}}}
type NetConf struct {
	types.PluginConf
	Socket  string  `json:"socket,omitempty"`
	LogFile *string `json:"logFile,omitempty"`
	Args    *Args   `json:"args,omitempty"`
}

// Args is the configuration's "args" member; only Mesos' key is read.
type Args struct {
	Mesos *MesosArgs `json:"org.apache.mesos,omitempty"`
}

// MesosArgs is what Mesos puts under "org.apache.mesos".
type MesosArgs struct {
	NetworkInfo *NetworkInfo `json:"network_info,omitempty"`
}

// NetworkInfo is the container's mesos.NetworkInfo in protobuf JSON; only
// the name and labels are read, other members (ip_addresses,
// port_mappings, groups) are ignored.
type NetworkInfo struct {
	Name   string  `json:"name,omitempty"`
	Labels *Labels `json:"labels,omitempty"`
}

// Labels is mesos.Labels: {"labels":[{key, value}]}.
type Labels struct {
	Labels []Label `json:"labels"`
}

// Label is mesos.Label; the value is optional.
type Label struct {
	Key   string `json:"key"`
	Value string `json:"value,omitempty"`
}

// LoadConf parses and checks a configuration (with its prevResult when
// there is one). Errors are CNI errors naming what is wrong; it never
// panics on any input (FuzzLoadConf).
func LoadConf(data []byte) (*NetConf, error) {
	conf := &NetConf{}
	if err := cniplugin.DecodeConf(data, conf, &conf.PluginConf, &conf.Socket); err != nil {
		return nil, err
	}
	if _, err := conf.ContivLabels(); err != nil {
		return nil, err
	}
	return conf, nil
}

// ContivLabels returns the io.contiv.* labels of the container's
// NetworkInfo (nil when there are none). Other labels are ignored; a
// contiv key given twice with different values is refused (code 7).
func (c *NetConf) ContivLabels() (map[string]string, error) {
	if c.Args == nil || c.Args.Mesos == nil || c.Args.Mesos.NetworkInfo == nil || c.Args.Mesos.NetworkInfo.Labels == nil {
		return nil, nil
	}
	var out map[string]string
	for _, l := range c.Args.Mesos.NetworkInfo.Labels.Labels {
		switch l.Key {
		case LabelTenant, LabelNetwork, LabelGroup:
		default:
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		if v, ok := out[l.Key]; ok && v != l.Value {
			return nil, types.NewError(types.ErrInvalidNetworkConfig, "Contiv: invalid network configuration",
				fmt.Sprintf("label %s given twice, as %q and %q (args.org.apache.mesos.network_info.labels)", l.Key, v, l.Value))
		}
		out[l.Key] = l.Value
	}
	return out, nil
}
