package netctl

import (
	"fmt"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/contivmodel/client"
)

func (n *Netctl) serviceCommand() cli.Command {
	const need = "Service name required"
	svcTenant := func() cli.Flag { return cli.StringFlag{Name: "tenant, t", Usage: "service tenant"} }
	tenantOf := func(c *cli.Context) string {
		if t := c.String("tenant"); t != "" {
			return t
		}
		return "default"
	}
	return cli.Command{
		Name:  "service",
		Usage: "service object creation (only for  docker version <= 1.12.x)",
		Subcommands: []cli.Command{
			{
				Name: "ls", Aliases: []string{"list"}, Usage: "List service objects", ArgsUsage: noArgs,
				Flags: listFlags(),
				Action: n.checked(n.noMoreArgs, func(c *cli.Context, cl *client.ContivClient) error {
					if err := c.Set("tenant", tenantOf(c)); err != nil {
						return fail(exitUsage, err.Error())
					}
					return tenantList(n, c, cl, cl.ServiceLBList,
						func(o *client.ServiceLB) string { return o.TenantName },
						func(o *client.ServiceLB) string { return o.ServiceName },
						func(objs []*client.ServiceLB) {
							t := newTable(n.opts.Stdout, 2)
							t.line("ServiceName", "Tenant", "Network", "Selectors")
							t.line("---------", "--------", "-------", "-------")
							for _, o := range objs {
								t.line(o.ServiceName, o.TenantName, o.NetworkName, slist(o.Selectors), "")
							}
							t.flush()
						})
				}),
			},
			{
				Name: "inspect", Usage: "Inspect a Network", ArgsUsage: "[servicename]",
				Flags: []cli.Flag{tenantFlag()},
				Action: n.checked(n.exactly(1, "Service group name required"), func(c *cli.Context, cl *client.ContivClient) error {
					obj, err := cl.ServiceLBInspect(tenantOf(c), c.Args().First())
					if err != nil {
						return n.restError(err)
					}
					return writeJSON(n.opts.Stdout, obj)
				}),
			},
			{
				Name: "rm", Aliases: []string{"delete"}, Usage: "Delete service object", ArgsUsage: "[servicename]",
				Flags: []cli.Flag{svcTenant()},
				Action: n.checked(n.exactly(1, need), func(c *cli.Context, cl *client.ContivClient) error {
					tenant, name := tenantOf(c), c.Args().First()
					fmt.Fprintf(n.opts.Stdout, "Deleting Service  %s,%s\n", name, tenant)
					if err := cl.ServiceLBDelete(tenant, name); err != nil {
						return n.restError(err)
					}
					return nil
				}),
			},
			{
				Name: "create", Usage: "Create Service object (only for docker version <= 1.12.x)", ArgsUsage: "[servicename]",
				Flags: []cli.Flag{
					svcTenant(),
					cli.StringFlag{Name: "network, s", Usage: "service network name"},
					cli.StringSliceFlag{Name: "selector, l", Usage: "service selector .Usage: --selector=key1=value1 --selector=key2=value2"},
					cli.StringSliceFlag{Name: "port, p", Usage: "service/provider Port Usage- --port=svcPort1:provPort1:protocol --port=svcPort2:provPort2:protocol"},
					cli.StringFlag{Name: "preferred-ip, ip", Usage: "preferred ip address"},
				},
				Action: n.checked(n.exactly(1, need), func(c *cli.Context, cl *client.ContivClient) error {
					obj := &client.ServiceLB{
						IpAddress:   c.String("preferred-ip"),
						NetworkName: c.String("network"),
						Ports:       c.StringSlice("port"),
						Selectors:   c.StringSlice("selector"),
						ServiceName: c.Args().First(),
						TenantName:  tenantOf(c),
					}
					if err := cl.ServiceLBPost(obj); err != nil {
						return n.restError(err)
					}
					fmt.Fprintf(n.opts.Stdout, "Creating ServiceLB %s:%s\n", obj.TenantName, obj.ServiceName)
					return nil
				}),
			},
		},
	}
}
