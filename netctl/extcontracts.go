package netctl

import (
	"fmt"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/contivmodel/client"
)

func (n *Netctl) extContractsCommand() cli.Command {
	const need = "Contracts group name required"
	return cli.Command{
		Name:  "external-contracts",
		Usage: "External contracts",
		Subcommands: []cli.Command{
			{
				Name: "ls", Aliases: []string{"list"}, Usage: "List external contracts",
				Flags: []cli.Flag{quietFlag(), allFlag(), jsonFlag(), tenantFlag()},
				Action: n.checked(n.noMoreArgs, func(c *cli.Context, cl *client.ContivClient) error {
					return tenantList(n, c, cl, cl.ExtContractsGroupList,
						func(o *client.ExtContractsGroup) string { return o.TenantName },
						func(o *client.ExtContractsGroup) string { return o.ContractsGroupName },
						func(objs []*client.ExtContractsGroup) {
							t := newTable(n.opts.Stdout, 2)
							t.line("Tenant", "Name", "", "Type", "", "Contracts")
							t.line("------", "------", "", "------", "", "-------")
							for _, o := range objs {
								t.line(o.TenantName, o.ContractsGroupName, "", o.ContractsType, slist(o.Contracts))
							}
							t.flush()
						})
				}),
			},
			{
				Name: "rm", Aliases: []string{"delete"}, Usage: "Delete external contracts",
				Flags: []cli.Flag{tenantFlag()},
				Action: n.checked(n.exactly(1, need), func(c *cli.Context, cl *client.ContivClient) error {
					tenant, name := c.String("tenant"), c.Args().First()
					fmt.Fprintf(n.opts.Stdout, "Deleting external contracts group %s in tenant %s\n", name, tenant)
					if err := cl.ExtContractsGroupDelete(tenant, name); err != nil {
						return n.restError(err)
					}
					return nil
				}),
			},
			{
				Name: "create", Usage: "Create external contracts",
				Flags: []cli.Flag{
					tenantFlag(),
					cli.BoolFlag{Name: "consumed, c", Usage: "External contracts type - consumed"},
					cli.BoolFlag{Name: "provided, p", Usage: "External contracts type - provided"},
					cli.StringSliceFlag{Name: "contract, a", Usage: "Contract"},
				},
				Action: n.checked(func(c *cli.Context) error {
					if err := n.needArgs(c, 1, need); err != nil {
						return err
					}
					switch {
					case c.Bool("provided") && c.Bool("consumed"):
						return fail(exitUsage, "Cannot use both provided and consumed")
					case !c.Bool("provided") && !c.Bool("consumed"):
						return fail(exitUsage, "Either provided or consumed must be specified")
					case len(c.StringSlice("contract")) == 0:
						return fail(exitUsage, "Contracts not provided")
					}
					return nil
				}, func(c *cli.Context, cl *client.ContivClient) error {
					typ := "consumed"
					if c.Bool("provided") {
						typ = "provided"
					}
					obj := &client.ExtContractsGroup{
						Contracts:          c.StringSlice("contract"),
						ContractsGroupName: c.Args().First(),
						ContractsType:      typ,
						TenantName:         c.String("tenant"),
					}
					if err := cl.ExtContractsGroupPost(obj); err != nil {
						return n.restError(err)
					}
					fmt.Fprintf(n.opts.Stdout, "Creating ExternalContracts %s:%s\n", obj.TenantName, obj.ContractsGroupName)
					return nil
				}),
			},
		},
	}
}
