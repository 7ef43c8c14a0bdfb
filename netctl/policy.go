package netctl

import (
	"fmt"
	"sort"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/contivmodel/client"
)

func (n *Netctl) policyCommand() cli.Command {
	const need = "Policy name required"
	const needRule = "Policy name and Rule ID required"
	return cli.Command{
		Name:  "policy",
		Usage: "Policy manipulation tools",
		Subcommands: []cli.Command{
			{
				Name: "create", Usage: "Create a new policy", ArgsUsage: "[policy]",
				Flags: []cli.Flag{tenantFlag()},
				Action: n.checked(n.exactly(1, need), func(c *cli.Context, cl *client.ContivClient) error {
					obj := &client.Policy{PolicyName: c.Args().First(), TenantName: c.String("tenant")}
					if err := cl.PolicyPost(obj); err != nil {
						return n.restError(err)
					}
					fmt.Fprintf(n.opts.Stdout, "Creating policy %s:%s\n", obj.TenantName, obj.PolicyName)
					return nil
				}),
			},
			{
				Name: "rm", Aliases: []string{"delete"}, Usage: "Delete a policy", ArgsUsage: "[policy]",
				Flags: []cli.Flag{tenantFlag()},
				Action: n.checked(n.exactly(1, need), func(c *cli.Context, cl *client.ContivClient) error {
					tenant, name := c.String("tenant"), c.Args().First()
					fmt.Fprintf(n.opts.Stdout, "Deleting policy %s:%s\n", tenant, name)
					if err := cl.PolicyDelete(tenant, name); err != nil {
						return n.restError(err)
					}
					return nil
				}),
			},
			{
				Name: "ls", Aliases: []string{"list"}, Usage: "List policies", ArgsUsage: noArgs,
				Flags: listFlags(),
				Action: n.checked(n.noMoreArgs, func(c *cli.Context, cl *client.ContivClient) error {
					return tenantList(n, c, cl, cl.PolicyList,
						func(o *client.Policy) string { return o.TenantName },
						func(o *client.Policy) string { return o.PolicyName },
						func(objs []*client.Policy) {
							t := newTable(n.opts.Stdout, 2)
							t.line("Tenant", "Policy")
							t.line("------", "------")
							for _, o := range objs {
								t.line(o.TenantName, o.PolicyName)
							}
							t.flush()
						})
				}),
			},
			{
				Name: "inspect", Usage: "Inspect a policy", ArgsUsage: "[policy]",
				Flags: []cli.Flag{tenantFlag()},
				Action: n.checked(n.exactly(1, need), func(c *cli.Context, cl *client.ContivClient) error {
					obj, err := cl.PolicyInspect(c.String("tenant"), c.Args().First())
					if err != nil {
						return n.restError(err)
					}
					return writeJSON(n.opts.Stdout, obj)
				}),
			},
			{
				Name: "rule-ls", Usage: "List rules for a given tenant,policy", ArgsUsage: "[policy]",
				Flags:  []cli.Flag{tenantFlag(), jsonFlag(), quietFlag()},
				Action: n.checked(n.exactly(1, need), n.ruleList),
			},
			{
				Name: "rule-rm", Usage: "Delete a rule from the policy", ArgsUsage: "[policy] [rule id]",
				Flags: []cli.Flag{tenantFlag()},
				Action: n.checked(n.exactly(2, needRule), func(c *cli.Context, cl *client.ContivClient) error {
					if err := cl.RuleDelete(c.String("tenant"), c.Args().Get(0), c.Args().Get(1)); err != nil {
						return n.restError(err)
					}
					return nil
				}),
			},
			{
				Name: "rule-add", Usage: "Add a new rule to the policy", ArgsUsage: "[policy] [rule id]",
				Flags: []cli.Flag{
					tenantFlag(),
					cli.IntFlag{Name: "priority, p", Value: 1, Usage: "Priority Indicator"},
					cli.StringFlag{Name: "direction, d", Value: "in", Usage: "Direction of traffic (in/out)"},
					cli.StringFlag{Name: "from-group, g", Usage: "From Endpoint Group Name (Valid in incoming direction only)"},
					cli.StringFlag{Name: "to-group, e", Usage: "To Endpoint Group Name (Valid in outgoing direction only)"},
					cli.StringFlag{Name: "from-network, n", Usage: "From Network name (Valid in incoming direction only)"},
					cli.StringFlag{Name: "to-network, o", Usage: "To Network name (Valid in outgoing direction only)"},
					cli.StringFlag{Name: "from-ip-address, i", Usage: "From IP address/CIDR (Valid in incoming direction only)"},
					cli.StringFlag{Name: "to-ip-address, s", Usage: "To IP address/CIDR (Valid in outgoing direction only)"},
					cli.StringFlag{Name: "protocol, l", Usage: "Protocol (e.g., tcp, udp, icmp)"},
					cli.IntFlag{Name: "port, P", Usage: "Port"},
					cli.StringFlag{Name: "action, j", Value: "allow", Usage: "Action to take (allow or deny)"},
				},
				Action: n.checked(func(c *cli.Context) error {
					if err := n.needArgs(c, 2, needRule); err != nil {
						return err
					}
					return ruleCheck(c)
				}, func(c *cli.Context, cl *client.ContivClient) error {
					obj := &client.Rule{
						Action:            c.String("action"),
						Direction:         c.String("direction"),
						FromEndpointGroup: c.String("from-group"),
						FromIpAddress:     c.String("from-ip-address"),
						FromNetwork:       c.String("from-network"),
						PolicyName:        c.Args().Get(0),
						Port:              c.Int("port"),
						Priority:          c.Int("priority"),
						Protocol:          c.String("protocol"),
						RuleID:            c.Args().Get(1),
						TenantName:        c.String("tenant"),
						ToEndpointGroup:   c.String("to-group"),
						ToIpAddress:       c.String("to-ip-address"),
						ToNetwork:         c.String("to-network"),
					}
					if err := cl.RulePost(obj); err != nil {
						return n.restError(err)
					}
					return nil
				}),
			},
		},
	}
}

// ruleCheck is rule-add's client-side validation (no help on failure).
func ruleCheck(c *cli.Context) error {
	set := func(name string) bool { return c.String(name) != "" }
	switch c.String("direction") {
	case "in":
		switch {
		case set("to-group"):
			return fail(exitUsage, "Cant specify to-group for incoming rule")
		case set("to-network"):
			return fail(exitUsage, "Cant specify to-network for incoming rule")
		case set("from-group") && set("from-network"):
			return fail(exitUsage, "Can't specify both from-group argument and -from-network ")
		}
	case "out":
		switch {
		case set("from-group"):
			return fail(exitUsage, "Cant specify from-group for outgoing rule")
		case set("from-network"):
			return fail(exitUsage, "Cant specify from-network for outgoing rule")
		case set("from-ip-address"):
			return fail(exitUsage, "Cant specify from-ip-address for outgoing rule")
		case set("to-group") && set("to-network"):
			return fail(exitUsage, "Can't specify both -to-group and -to-network")
		}
	default:
		return fail(exitUsage, "Unknown direction")
	}
	return nil
}

func (n *Netctl) ruleList(c *cli.Context, cl *client.ContivClient) error {
	tenant, policy := c.String("tenant"), c.Args().First()
	if _, err := cl.TenantGet(tenant); err != nil {
		return n.restError(err)
	}
	if _, err := cl.PolicyGet(tenant, policy); err != nil {
		return n.restError(err)
	}
	all, err := cl.RuleList()
	if err != nil {
		return n.restError(err)
	}
	var rules []*client.Rule
	for _, r := range deref(all) {
		if r.TenantName == tenant && r.PolicyName == policy {
			rules = append(rules, r)
		}
	}
	sort.SliceStable(rules, func(i, j int) bool { return rules[i].Priority < rules[j].Priority })
	return emit(n.opts.Stdout, listingOf(c), rules,
		func(r *client.Rule) string { return r.RuleID },
		func(rules []*client.Rule) {
			t := newTable(n.opts.Stdout, 2)
			t.raw("Incoming Rules:\n")
			t.line("Rule", "Priority", "From EndpointGroup", "From Network", "From IpAddress", "To IpAddress", "Protocol", "Port", "Action")
			t.line("----", "--------", "------------------", "------------", "---------", "------------", "--------", "----", "------")
			for _, r := range rules {
				if r.Direction == "in" {
					t.line(r.RuleID, r.Priority, r.FromEndpointGroup, r.FromNetwork, r.FromIpAddress, r.ToIpAddress, r.Protocol, r.Port, r.Action)
				}
			}
			t.raw("Outgoing Rules:\n")
			t.line("Rule", "Priority", "To EndpointGroup", "To Network", "To IpAddress", "Protocol", "Port", "Action")
			t.line("----", "--------", "----------------", "----------", "---------", "--------", "----", "------")
			for _, r := range rules {
				if r.Direction == "out" {
					t.line(r.RuleID, r.Priority, r.ToEndpointGroup, r.ToNetwork, r.ToIpAddress, r.Protocol, r.Port, r.Action)
				}
			}
			t.flush()
		})
}
