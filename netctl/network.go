package netctl

import (
	"fmt"
	"net"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/contivmodel/client"
)

func (n *Netctl) networkCommand() cli.Command {
	const need = "Network name required"
	return cli.Command{
		Name:    "network",
		Aliases: []string{"net"},
		Usage:   "Network manipulation tools",
		Subcommands: []cli.Command{
			{
				Name: "ls", Aliases: []string{"list"}, Usage: "List networks", ArgsUsage: noArgs,
				Flags: listFlags(),
				Action: n.checked(n.noMoreArgs, func(c *cli.Context, cl *client.ContivClient) error {
					return tenantList(n, c, cl, cl.NetworkList,
						func(o *client.Network) string { return o.TenantName },
						func(o *client.Network) string { return o.NetworkName },
						func(objs []*client.Network) {
							t := newTable(n.opts.Stdout, 2)
							t.line("Tenant", "Network", "Nw Type", "Encap type", "Packet tag", "Subnet", "Gateway", "IPv6Subnet", "IPv6Gateway", "Cfgd Tag ")
							t.line("------", "-------", "-------", "----------", "----------", "-------", "------", "----------", "-----------", "---------")
							for _, o := range objs {
								t.line(o.TenantName, o.NetworkName, o.NwType, o.Encap, o.PktTag, o.Subnet, o.Gateway, o.Ipv6Subnet, o.Ipv6Gateway, o.CfgdTag)
							}
							t.flush()
						})
				}),
			},
			{
				Name: "inspect", Usage: "Inspect a Network", ArgsUsage: "[network]",
				Flags: []cli.Flag{tenantFlag()},
				Action: n.checked(n.exactly(1, need), func(c *cli.Context, cl *client.ContivClient) error {
					obj, err := cl.NetworkInspect(c.String("tenant"), c.Args().First())
					if err != nil {
						return n.restError(err)
					}
					return writeJSON(n.opts.Stdout, obj)
				}),
			},
			{
				Name: "rm", Aliases: []string{"delete"}, Usage: "Delete a network", ArgsUsage: "[network]",
				Flags: []cli.Flag{tenantFlag()},
				Action: n.checked(n.exactly(1, need), func(c *cli.Context, cl *client.ContivClient) error {
					tenant, name := c.String("tenant"), c.Args().First()
					fmt.Fprintf(n.opts.Stdout, "Deleting network %s:%s\n", tenant, name)
					if err := cl.NetworkDelete(tenant, name); err != nil {
						return n.restError(err)
					}
					return nil
				}),
			},
			{
				Name: "create", Usage: "Create a network", ArgsUsage: "[network]",
				Flags: []cli.Flag{
					tenantFlag(),
					cli.StringFlag{Name: "nw-type, n", Value: "data", Usage: "Network Type (infra or data)"},
					cli.StringFlag{Name: "encap, e", Value: "vxlan", Usage: "Encap type (vlan or vxlan)"},
					cli.IntFlag{Name: "pkt-tag, p", Usage: "Packet tag (Vlan ID/VNI)"},
					cli.StringFlag{Name: "subnet, s", Usage: "Subnet CIDR - REQUIRED"},
					cli.StringFlag{Name: "gateway, g", Usage: "Gateway"},
					cli.StringFlag{Name: "subnetv6, s6", Usage: "IPv6 Subnet CIDR "},
					cli.StringFlag{Name: "gatewayv6, g6", Usage: "IPv6 Gateway"},
					cli.StringFlag{Name: "nw-tag, tag", Usage: "Configured Network Tag"},
				},
				Action: n.checked(func(c *cli.Context) error {
					if err := n.needArgs(c, 1, need); err != nil {
						return err
					}
					if c.String("subnet") == "" {
						return n.usageError(c, "Subnet is required")
					}
					if gw := c.String("gateway"); gw != "" && net.ParseIP(gw) == nil {
						return n.usageError(c, "Invalid gateway - Enter in A.B.C.D format")
					}
					if gw := c.String("gatewayv6"); gw != "" && net.ParseIP(gw) == nil {
						return n.usageError(c, "Invalid IPv6 gateway ")
					}
					return nil
				}, func(c *cli.Context, cl *client.ContivClient) error {
					obj := &client.Network{
						CfgdTag:     c.String("nw-tag"),
						Encap:       c.String("encap"),
						Gateway:     c.String("gateway"),
						Ipv6Gateway: c.String("gatewayv6"),
						Ipv6Subnet:  c.String("subnetv6"),
						NetworkName: c.Args().First(),
						NwType:      c.String("nw-type"),
						PktTag:      c.Int("pkt-tag"),
						Subnet:      c.String("subnet"),
						TenantName:  c.String("tenant"),
					}
					if err := cl.NetworkPost(obj); err != nil {
						return n.restError(err)
					}
					fmt.Fprintf(n.opts.Stdout, "Creating network %s:%s\n", obj.TenantName, obj.NetworkName)
					return nil
				}),
			},
		},
	}
}
