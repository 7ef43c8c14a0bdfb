package netctl

import (
	"fmt"
	"net"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/contivmodel/client"
)

func (n *Netctl) bgpCommand() cli.Command {
	const need = "Host name required"
	return cli.Command{
		Name:  "bgp",
		Usage: "router capability configuration",
		Subcommands: []cli.Command{
			{
				Name: "ls", Aliases: []string{"list"}, Usage: "List BGP configuration", ArgsUsage: "[hostname]",
				Flags: []cli.Flag{jsonFlag(), quietFlag()},
				Action: n.checked(n.noMoreArgs, func(c *cli.Context, cl *client.ContivClient) error {
					list, err := cl.BgpList()
					if err != nil {
						return n.restError(err)
					}
					return emit(n.opts.Stdout, listingOf(c), deref(list),
						func(o *client.Bgp) string { return o.Hostname },
						func(objs []*client.Bgp) {
							t := newTable(n.opts.Stdout, 2)
							t.line("HostName", "RouterIP", "AS", "Neighbor", "NeighborAS")
							t.line("---------", "--------", "-------", "--------", "-------")
							for _, o := range objs {
								t.line(o.Hostname, o.Routerip, o.As, o.Neighbor, o.NeighborAs)
							}
							t.flush()
						})
				}),
			},
			{
				Name: "rm", Aliases: []string{"delete"}, Usage: "Delete BGP configuration", ArgsUsage: "[hostname]",
				Action: n.checked(n.exactly(1, need), func(c *cli.Context, cl *client.ContivClient) error {
					host := c.Args().First()
					fmt.Fprintf(n.opts.Stdout, "Deleting Bgp router config: %s\n", host)
					if err := cl.BgpDelete(host); err != nil {
						return n.restError(err)
					}
					return nil
				}),
			},
			{
				Name: "create", Usage: "Add BGP configuration.", ArgsUsage: "[hostname]",
				Flags: []cli.Flag{
					cli.StringFlag{Name: "router-ip", Usage: "BGP my-router ip "},
					cli.StringFlag{Name: "as", Usage: "Self AS id"},
					cli.StringFlag{Name: "neighbor-as", Usage: "BGP neighbor AS id"},
					cli.StringFlag{Name: "neighbor", Usage: "BGP neighbor to be added"},
				},
				Action: n.checked(func(c *cli.Context) error {
					if err := n.needArgs(c, 1, need); err != nil {
						return err
					}
					if _, _, err := net.ParseCIDR(c.String("router-ip")); err != nil {
						return n.usageError(c, "Wrong CIDR format. Enter in x.x.x.x/len format")
					}
					if net.ParseIP(c.String("neighbor")) == nil {
						return n.usageError(c, "Wrong IP format. Enter in x.x.x.x format")
					}
					if c.String("as") == "" || c.String("neighbor-as") == "" {
						return n.usageError(c, "Missing attributes")
					}
					return nil
				}, func(c *cli.Context, cl *client.ContivClient) error {
					obj := &client.Bgp{
						As:         c.String("as"),
						Hostname:   c.Args().First(),
						Neighbor:   c.String("neighbor"),
						NeighborAs: c.String("neighbor-as"),
						Routerip:   c.String("router-ip"),
					}
					if err := cl.BgpPost(obj); err != nil {
						return n.restError(err)
					}
					return nil
				}),
			},
			{
				Name: "inspect", Usage: "Inspect Bgp", ArgsUsage: "[hostname]",
				Action: n.checked(n.exactly(1, need), func(c *cli.Context, cl *client.ContivClient) error {
					obj, err := cl.BgpInspect(c.Args().First())
					if err != nil {
						return n.restError(err)
					}
					return writeJSON(n.opts.Stdout, obj)
				}),
			},
		},
	}
}
