package agent

import (
	"net"

	"github.com/contiv/netplugin/ofnet/pipeline"
)

// Link-local IPv6 multicast that only routers consume (docs/dataplane-scale.md):
// every interface that comes up sends router solicitations to all-routers
// (ff02::2) and MLDv2 reports to ff02::16. The VXLAN datapaths have no
// IPv6 router and no multicast router or snooping, so flooded to every
// local port and every VTEP these frames reach nobody who reads them,
// while each one costs a flood datapath flow with one output per port.
var routerOnlyMulticast = []net.HardwareAddr{
	{0x33, 0x33, 0, 0, 0, 0x02}, // ff02::2, all routers: router solicitations
	{0x33, 0x33, 0, 0, 0, 0x16}, // ff02::16, all MLDv2 routers: MLD reports
}

// linkLocalNoiseFlows drops router-only multicast in the classifier.
func linkLocalNoiseFlows(s *snapshot, d *desiredState, cookie uint64) {
	for _, mac := range routerOnlyMulticast {
		d.to(keyInit())(s.table(pipeline.ClassifierTable).BuildFlow(prioClassifierRedirect).Cookie(cookie).
			MatchEthDst(mac).Action().Drop().Done())
	}
}
