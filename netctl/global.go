package netctl

import (
	"fmt"
	"io"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/contivmodel/client"
)

func (n *Netctl) globalCommand() cli.Command {
	return cli.Command{
		Name:  "global",
		Usage: "Global information",
		Subcommands: []cli.Command{
			singletonInfo(n, "Show global information", (*client.ContivClient).GlobalList, func(w io.Writer, o *client.Global) {
				fmt.Fprintf(w, "Fabric mode: %s\nForward mode: %s\nARP mode: %s\nVlan Range: %s\nVxlan range: %s\nPrivate subnet: %s\n",
					o.NetworkInfraType, o.FwdMode, o.ArpMode, o.Vlans, o.Vxlans, o.PvtSubnet)
			}),
			singletonInspect(n, "Inspect Global Operational Information", "global", (*client.ContivClient).GlobalInspect),
			{
				Name: "set", Usage: "Set global parameters", ArgsUsage: noArgs,
				Flags: []cli.Flag{
					cli.StringFlag{Name: "fabric-mode, f", Usage: "Fabric mode (aci, aci-opflex or default)"},
					cli.StringFlag{Name: "vlan-range, v", Usage: "Allowed Vlan id range"},
					cli.StringFlag{Name: "vxlan-range, x", Usage: "Allowed Vxlan VNID range"},
					cli.StringFlag{Name: "fwd-mode, b", Usage: "forwarding mode (bridge,routing)"},
					cli.StringFlag{Name: "arp-mode, a", Usage: "arp mode (proxy,flood)"},
					cli.StringFlag{Name: "private-subnet, s", Value: "172.19.0.0/16", Usage: "Select a /16 private subnet for host access"},
				},
				Action: n.checked(n.noMoreArgs, func(c *cli.Context, cl *client.ContivClient) error {
					obj, err := cl.GlobalGet("global")
					if err != nil {
						return n.restError(err)
					}
					setIf := func(dst *string, v string) {
						if v != "" {
							*dst = v
						}
					}
					setIf(&obj.NetworkInfraType, c.String("fabric-mode"))
					setIf(&obj.Vlans, c.String("vlan-range"))
					setIf(&obj.Vxlans, c.String("vxlan-range"))
					setIf(&obj.FwdMode, c.String("fwd-mode"))
					setIf(&obj.ArpMode, c.String("arp-mode"))
					// Only an explicit -s changes the private subnet (the
					// original wrote the option's default every time).
					if c.IsSet("private-subnet") {
						setIf(&obj.PvtSubnet, c.String("private-subnet"))
					}
					if err := cl.GlobalPost(obj); err != nil {
						return n.restError(err)
					}
					return nil
				}),
			},
		},
	}
}
