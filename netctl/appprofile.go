package netctl

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/contivmodel/client"
)

func (n *Netctl) appProfileCommand() cli.Command {
	const need = "Profile name required"
	groupFlag := func() cli.Flag {
		return cli.StringFlag{Name: "group, g", Usage: "Endpoint Group List (separated by commas)"}
	}
	post := func(announce bool) func(c *cli.Context, cl *client.ContivClient) error {
		return func(c *cli.Context, cl *client.ContivClient) error {
			obj := &client.AppProfile{AppProfileName: c.Args().First(), TenantName: c.String("tenant")}
			if g := c.String("group"); g != "" {
				obj.EndpointGroups = strings.Split(g, ",")
			}
			if err := cl.AppProfilePost(obj); err != nil {
				return n.restError(err)
			}
			if announce {
				fmt.Fprintf(n.opts.Stdout, "Creating AppProfile %s:%s\n", obj.TenantName, obj.AppProfileName)
			}
			return nil
		}
	}
	return cli.Command{
		Name:  "app-profile",
		Usage: "Application Profile manipulation tools",
		Subcommands: []cli.Command{
			{
				Name: "create", Usage: "Create an application profile", ArgsUsage: "[app-profile]",
				Flags:  []cli.Flag{tenantFlag(), groupFlag()},
				Action: n.checked(n.exactly(1, need), post(true)),
			},
			{
				Name: "update", Usage: "Update an application profile", ArgsUsage: "[app-profile]",
				Flags:  []cli.Flag{tenantFlag(), groupFlag()},
				Action: n.checked(n.exactly(1, need), post(false)),
			},
			{
				Name: "rm", Aliases: []string{"delete"}, Usage: "Delete an application profile", ArgsUsage: "[app-profile]",
				Flags: []cli.Flag{tenantFlag()},
				Action: n.checked(n.exactly(1, need), func(c *cli.Context, cl *client.ContivClient) error {
					if err := cl.AppProfileDelete(c.String("tenant"), c.Args().First()); err != nil {
						return n.restError(err)
					}
					return nil
				}),
			},
			{
				Name: "ls", Aliases: []string{"list"}, Usage: "List Application Profiles", ArgsUsage: noArgs,
				Flags: listFlags(),
				Action: n.checked(n.noMoreArgs, func(c *cli.Context, cl *client.ContivClient) error {
					return tenantList(n, c, cl, cl.AppProfileList,
						func(o *client.AppProfile) string { return o.TenantName },
						func(o *client.AppProfile) string { return o.AppProfileName },
						func(objs []*client.AppProfile) {
							t := newTable(n.opts.Stdout, 2)
							t.line("Tenant", "AppProfile", "Groups")
							t.line("------", "----------", "------")
							for _, o := range objs {
								t.line(o.TenantName, o.AppProfileName, strings.Join(o.EndpointGroups, ","))
							}
							t.flush()
						})
				}),
			},
			{
				Name: "group-ls", Aliases: []string{"group-list"}, Usage: "List groups in an app-profile", ArgsUsage: "[network] [app-profile]",
				Flags: listFlags(),
				Action: n.checked(n.exactly(1, need), func(c *cli.Context, cl *client.ContivClient) error {
					obj, err := cl.AppProfileGet(c.String("tenant"), c.Args().First())
					if err != nil {
						return n.restError(err)
					}
					if c.Bool("json") {
						return writeJSON(n.opts.Stdout, obj)
					}
					// No trailing newline, as the original.
					_, _ = io.WriteString(n.opts.Stdout, strings.Join(obj.EndpointGroups, ","))
					return nil
				}),
			},
		},
	}
}
