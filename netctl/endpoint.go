package netctl

import (
	"github.com/urfave/cli"

	"github.com/contiv/netplugin/contivmodel/client"
)

func (n *Netctl) endpointCommand() cli.Command {
	return cli.Command{
		Name:    "endpoint",
		Aliases: []string{"ep"},
		Usage:   "Endpoint Inspection",
		Subcommands: []cli.Command{
			{
				Name: "inspect", Usage: "Inspect an Endpoint", ArgsUsage: "[epid]",
				Action: n.checked(n.exactly(1, "Endpoint name required"), func(c *cli.Context, cl *client.ContivClient) error {
					obj, err := cl.EndpointInspect(c.Args().First())
					if err != nil {
						return n.restError(err)
					}
					// The server echoes the requested id as Oper "key"; the
					// original client type had no such member, so netctl
					// never printed it (docs/netctl.md §7). contivmodel's EndpointOper
					// has one: drop it here.
					obj.Oper.Key = ""
					return writeJSON(n.opts.Stdout, obj)
				}),
			},
		},
	}
}
