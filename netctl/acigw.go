package netctl

import (
	"fmt"
	"io"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/contivmodel/client"
)

func (n *Netctl) aciGwCommand() cli.Command {
	return cli.Command{
		Name:  "aci-gw",
		Usage: "ACI Gateway information",
		Subcommands: []cli.Command{
			singletonInfo(n, "Show aci gateway information", (*client.ContivClient).AciGwList, func(w io.Writer, o *client.AciGw) {
				fmt.Fprintf(w, "Path bindings: %s\nNode bindings: %s\nPhysical domain: %s\nEnforce policies: %s\nInclude Common-Tenant: %s\n",
					o.PathBindings, o.NodeBindings, o.PhysicalDomain, o.EnforcePolicies, o.IncludeCommonTenant)
			}),
			singletonInspect(n, "Inspect aci gateway operational information", "aciGw", (*client.ContivClient).AciGwInspect),
			{
				Name: "set", Usage: "Set aci-gw parameters", ArgsUsage: noArgs,
				Flags: []cli.Flag{
					cli.StringFlag{Name: "path-bindings, p", Usage: "Blank or  Comma separated paths of the form topology/pod-1/paths-101/pathep-[eth1/14]"},
					cli.StringFlag{Name: "node-bindings, n", Usage: "Blank or  Comma separated nodes of the form topology/pod-1/node-101"},
					cli.StringFlag{Name: "phys-dom, d", Usage: "ACI physical domain name (e.g. containerDom)"},
					cli.StringFlag{Name: "enforce-policies, e", Value: "yes", Usage: "Should security policies be enforced (yes,no)"},
					cli.StringFlag{Name: "include-common-tenant, i", Value: "no", Usage: "Should gateway look up objects in common tenant as well(yes,no)"},
				},
				Action: n.checked(n.noMoreArgs, func(c *cli.Context, cl *client.ContivClient) error {
					// A read failure means "not configured yet": start from
					// an empty object, as the original did.
					obj, err := cl.AciGwGet("aciGw")
					if err != nil {
						obj = &client.AciGw{}
					}
					obj.Name = "aciGw"
					obj.PathBindings = c.String("path-bindings")
					obj.NodeBindings = c.String("node-bindings")
					obj.PhysicalDomain = c.String("phys-dom")
					obj.EnforcePolicies = c.String("enforce-policies")
					obj.IncludeCommonTenant = c.String("include-common-tenant")
					if err := cl.AciGwPost(obj); err != nil {
						return n.restError(err)
					}
					return nil
				}),
			},
		},
	}
}
