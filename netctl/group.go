package netctl

import (
	"fmt"
	"strings"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/contivmodel/client"
)

func (n *Netctl) groupCommand() cli.Command {
	const need = "EndpointGroup name required"
	return cli.Command{
		Name:  "group",
		Usage: "Endpoint Group manipulation tools",
		Subcommands: []cli.Command{
			{
				Name: "create", Usage: "Create an endpoint group", ArgsUsage: "[network] [group]",
				Flags: []cli.Flag{
					tenantFlag(),
					cli.StringSliceFlag{Name: "policy, p", Usage: "Policy"},
					cli.StringFlag{Name: "networkprofile, n", Usage: "network profile"},
					cli.StringSliceFlag{Name: "external-contract, e", Usage: "External contract"},
					cli.StringFlag{Name: "ip-pool, r", Usage: "IP Address range, example 10.36.0.1-10.36.0.10"},
					cli.StringFlag{Name: "epg-tag, tag", Usage: "Configured Group Tag"},
				},
				Action: n.checked(n.exactly(2, "Network and group name required"), func(c *cli.Context, cl *client.ContivClient) error {
					obj := &client.EndpointGroup{
						CfgdTag:          c.String("epg-tag"),
						ExtContractsGrps: c.StringSlice("external-contract"),
						GroupName:        c.Args().Get(1),
						IpPool:           c.String("ip-pool"),
						NetProfile:       c.String("networkprofile"),
						NetworkName:      c.Args().Get(0),
						Policies:         c.StringSlice("policy"),
						TenantName:       c.String("tenant"),
					}
					if err := cl.EndpointGroupPost(obj); err != nil {
						return n.restError(err)
					}
					fmt.Fprintf(n.opts.Stdout, "Creating EndpointGroup %s:%s\n", obj.TenantName, obj.GroupName)
					return nil
				}),
			},
			{
				Name: "inspect", Usage: "Inspect a EndpointGroup", ArgsUsage: "[group]",
				Flags: []cli.Flag{tenantFlag()},
				Action: n.checked(n.exactly(1, need), func(c *cli.Context, cl *client.ContivClient) error {
					obj, err := cl.EndpointGroupInspect(c.String("tenant"), c.Args().First())
					if err != nil {
						return n.restError(err)
					}
					return writeJSON(n.opts.Stdout, obj)
				}),
			},
			{
				Name: "rm", Aliases: []string{"delete"}, Usage: "Delete an endpoint group", ArgsUsage: "[group]",
				Flags: []cli.Flag{tenantFlag()},
				Action: n.checked(n.exactly(1, need), func(c *cli.Context, cl *client.ContivClient) error {
					if err := cl.EndpointGroupDelete(c.String("tenant"), c.Args().First()); err != nil {
						return n.restError(err)
					}
					return nil
				}),
			},
			{
				Name: "ls", Aliases: []string{"list"}, Usage: "List endpoint groups", ArgsUsage: noArgs,
				Flags: listFlags(),
				Action: n.checked(n.noMoreArgs, func(c *cli.Context, cl *client.ContivClient) error {
					return tenantList(n, c, cl, cl.EndpointGroupList,
						func(o *client.EndpointGroup) string { return o.TenantName },
						func(o *client.EndpointGroup) string { return o.GroupName },
						func(objs []*client.EndpointGroup) {
							t := newTable(n.opts.Stdout, 2)
							t.line("Tenant", "Group", "Network", "IP Pool", "CfgdTag", "Policies", "Network profile")
							t.line("------", "-----", "-------", "-------", "-------", "--------", "---------------")
							for _, o := range objs {
								t.line(o.TenantName, o.GroupName, o.NetworkName, o.IpPool, o.CfgdTag, strings.Join(o.Policies, ","), o.NetProfile)
							}
							t.flush()
						})
				}),
			},
		},
	}
}
