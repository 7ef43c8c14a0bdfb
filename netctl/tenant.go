package netctl

import (
	"fmt"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/contivmodel/client"
)

func (n *Netctl) tenantCommand() cli.Command {
	const need = "Tenant name required"
	return cli.Command{
		Name:  "tenant",
		Usage: "Tenant manipulation tools",
		Subcommands: []cli.Command{
			{
				Name: "ls", Aliases: []string{"list"}, Usage: "List tenants", ArgsUsage: noArgs,
				Flags: []cli.Flag{quietFlag(), jsonFlag()},
				Action: n.checked(n.noMoreArgs, func(c *cli.Context, cl *client.ContivClient) error {
					list, err := cl.TenantList()
					if err != nil {
						return n.restError(err)
					}
					return emit(n.opts.Stdout, listingOf(c), deref(list),
						func(t *client.Tenant) string { return t.TenantName },
						func(ts []*client.Tenant) {
							t := newTable(n.opts.Stdout, 4)
							t.raw("Name\t\n------\t\n")
							for _, o := range ts {
								t.raw(o.TenantName + "\t\n")
							}
							t.flush()
						})
				}),
			},
			{
				Name: "rm", Aliases: []string{"delete"}, Usage: "Delete a tenant", ArgsUsage: "[tenant]",
				Action: n.checked(n.exactly(1, need), func(c *cli.Context, cl *client.ContivClient) error {
					name := c.Args().First()
					fmt.Fprintf(n.opts.Stdout, "Deleting tenant %s\n", name)
					if err := cl.TenantDelete(name); err != nil {
						return n.restError(err)
					}
					return nil
				}),
			},
			{
				Name: "create", Usage: "Create a tenant", ArgsUsage: "[tenant]",
				Action: n.checked(n.exactly(1, need), func(c *cli.Context, cl *client.ContivClient) error {
					name := c.Args().First()
					if err := cl.TenantPost(&client.Tenant{TenantName: name}); err != nil {
						return n.restError(err)
					}
					fmt.Fprintf(n.opts.Stdout, "Creating tenant: %s\n", name)
					return nil
				}),
			},
			{
				Name: "inspect", Usage: "Inspect a tenant", ArgsUsage: "[tenant]",
				Action: n.checked(n.exactly(1, need), func(c *cli.Context, cl *client.ContivClient) error {
					obj, err := cl.TenantInspect(c.Args().First())
					if err != nil {
						return n.restError(err)
					}
					return writeJSON(n.opts.Stdout, obj)
				}),
			},
		},
	}
}
