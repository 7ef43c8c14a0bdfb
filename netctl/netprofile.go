package netctl

import (
	"fmt"
	"strings"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/contivmodel/client"
)

func (n *Netctl) netprofileCommand() cli.Command {
	const need = "Net profile name required"
	return cli.Command{
		Name:  "netprofile",
		Usage: "Network profile manipulation tools",
		Subcommands: []cli.Command{
			{
				Name: "create", Usage: "Create a network profile", ArgsUsage: "[netprofile]",
				Flags: []cli.Flag{
					tenantFlag(),
					cli.StringFlag{Name: "bandwidth, b", Usage: "Bandwidth (e.g., 10 kbps, 100 mbps, 1gbps)"},
					cli.IntFlag{Name: "dscp, d", Usage: "DSCP"},
					cli.IntFlag{Name: "burst, s", Usage: "burst size(Must be in kilobytes)"},
				},
				Action: n.checked(n.exactly(1, need), func(c *cli.Context, cl *client.ContivClient) error {
					obj := &client.Netprofile{
						DSCP:        c.Int("dscp"),
						Bandwidth:   c.String("bandwidth"),
						Burst:       c.Int("burst"),
						ProfileName: c.Args().First(),
						TenantName:  c.String("tenant"),
					}
					if err := cl.NetprofilePost(obj); err != nil {
						return n.restError(err)
					}
					fmt.Fprintf(n.opts.Stdout, "Creating netprofile %s:%s\n", obj.TenantName, obj.ProfileName)
					return nil
				}),
			},
			{
				Name: "rm", Aliases: []string{"delete"}, Usage: "Delete a network profile", ArgsUsage: "[network] [group]",
				Flags: []cli.Flag{tenantFlag()},
				Action: n.checked(n.exactly(1, need), func(c *cli.Context, cl *client.ContivClient) error {
					if err := cl.NetprofileDelete(c.String("tenant"), c.Args().First()); err != nil {
						return n.restError(err)
					}
					return nil
				}),
			},
			{
				Name: "ls", Aliases: []string{"list"}, Usage: "List network profile", ArgsUsage: noArgs,
				Flags: listFlags(),
				Action: n.checked(n.noMoreArgs, func(c *cli.Context, cl *client.ContivClient) error {
					return tenantList(n, c, cl, cl.NetprofileList,
						func(o *client.Netprofile) string { return o.TenantName },
						func(o *client.Netprofile) string { return o.ProfileName },
						func(objs []*client.Netprofile) {
							t := newTable(n.opts.Stdout, 2)
							t.line("Name", "Tenant", "Bandwidth", "DSCP", "burst size")
							t.line("------", "------", "---------", "--------", "----------")
							unit := ""
							for _, o := range objs {
								if o.Bandwidth == "" {
									t.line(o.ProfileName, o.TenantName, "", o.DSCP)
									continue
								}
								var bw string
								bw, unit = formatBandwidth(o.Bandwidth, unit)
								t.line(o.ProfileName, o.TenantName, bw, o.DSCP, o.Burst)
							}
							t.flush()
						})
				}),
			},
			{
				Name: "inspect", Usage: "inspect network profile", ArgsUsage: "[netprofile]",
				Flags: []cli.Flag{tenantFlag()},
				Action: n.checked(n.exactly(1, need), func(c *cli.Context, cl *client.ContivClient) error {
					obj, err := cl.NetprofileInspect(c.String("tenant"), c.Args().First())
					if err != nil {
						return n.restError(err)
					}
					return writeJSON(n.opts.Stdout, obj)
				}),
			},
		},
	}
}

// formatBandwidth renders a stored bandwidth as the listing does (spec
// §6.6): the first run of digits plus a unit from the letters g/G/| (Gbps),
// m/M (Mbps) or k/K (Kbps); without any of them the previous row's unit
// (prev) is reused, as the original did. It returns the cell and the unit
// to carry to the next row. A bandwidth without digits (the original
// panicked) is shown verbatim.
func formatBandwidth(bw, prev string) (string, string) {
	start := strings.IndexAny(bw, "0123456789")
	if start < 0 {
		return bw, prev
	}
	end := start
	for end < len(bw) && bw[end] >= '0' && bw[end] <= '9' {
		end++
	}
	unit := prev
	switch {
	case strings.ContainsAny(bw, "gG|"):
		unit = "Gbps"
	case strings.ContainsAny(bw, "mM"):
		unit = "Mbps"
	case strings.ContainsAny(bw, "kK"):
		unit = "Kbps"
	}
	return bw[start:end] + unit, unit
}
