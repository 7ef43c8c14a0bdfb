package netctl

import (
	"io"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/contivmodel/client"
)

// Shared option definitions.
func tenantFlag() cli.Flag {
	return cli.StringFlag{Name: "tenant, t", Value: "default", Usage: "Name of the tenant"}
}
func allFlag() cli.Flag   { return cli.BoolFlag{Name: "all, a", Usage: "List all items"} }
func jsonFlag() cli.Flag  { return cli.BoolFlag{Name: "json, j", Usage: "Output list in JSON format"} }
func quietFlag() cli.Flag { return cli.BoolFlag{Name: "quiet, q", Usage: "Only display name field"} }

// listFlags are the options of the tenant-scoped ls commands.
func listFlags() []cli.Flag { return []cli.Flag{tenantFlag(), allFlag(), jsonFlag(), quietFlag()} }

// noArgs is the usage text of commands without positional arguments: the
// original declared a single space, which shows as two trailing spaces.
const noArgs = " "

func listingOf(c *cli.Context) listing {
	return listing{json: c.Bool("json"), quiet: c.Bool("quiet")}
}

// action wraps a command body that needs the REST client.
func (n *Netctl) action(fn func(c *cli.Context, cl *client.ContivClient) error) func(*cli.Context) error {
	return func(c *cli.Context) error {
		cl, err := n.restClient()
		if err != nil {
			return err
		}
		return fn(c, cl)
	}
}

// needArgs returns a "+help" usage error unless exactly want positional
// arguments were given.
func (n *Netctl) needArgs(c *cli.Context, want int, msg string) error {
	if c.NArg() != want {
		return n.usageError(c, msg)
	}
	return nil
}

// noMoreArgs rejects positional arguments of commands that take none.
func (n *Netctl) noMoreArgs(c *cli.Context) error {
	if c.NArg() > 0 {
		return n.usageError(c, "More arguments than required")
	}
	return nil
}

// checked runs check before building the client and running fn.
func (n *Netctl) checked(check func(c *cli.Context) error, fn func(c *cli.Context, cl *client.ContivClient) error) func(*cli.Context) error {
	act := n.action(fn)
	return func(c *cli.Context) error {
		if err := check(c); err != nil {
			return err
		}
		return act(c)
	}
}

func (n *Netctl) exactly(want int, msg string) func(c *cli.Context) error {
	return func(c *cli.Context) error { return n.needArgs(c, want, msg) }
}

// tenantList implements the tenant-scoped ls commands (docs/netctl.md §5.4): check
// the tenant exists, list the collection, keep the tenant's objects (all
// with -a), then print.
func tenantList[T any](n *Netctl, c *cli.Context, cl *client.ContivClient,
	list func() (*[]*T, error), tenantOf, name func(*T) string, tableFn func([]*T)) error {
	tenant := c.String("tenant")
	if _, err := cl.TenantGet(tenant); err != nil {
		return n.restError(err)
	}
	objs, err := list()
	if err != nil {
		return n.restError(err)
	}
	var kept []*T
	if objs != nil {
		for _, o := range *objs {
			if c.Bool("all") || tenantOf(o) == tenant {
				kept = append(kept, o)
			}
		}
	}
	return emit(n.opts.Stdout, listingOf(c), kept, name, tableFn)
}

func deref[T any](p *[]*T) []*T {
	if p == nil {
		return nil
	}
	return *p
}

// singletonInfo is the "info" subcommand of a type with one object (global,
// aci-gw): the list as JSON with --json, else each object printed by show.
func singletonInfo[T any](n *Netctl, usage string, list func(*client.ContivClient) (*[]*T, error), show func(io.Writer, *T)) cli.Command {
	return cli.Command{
		Name: "info", Usage: usage, ArgsUsage: noArgs,
		Flags: []cli.Flag{tenantFlag(), allFlag(), jsonFlag()},
		Action: n.checked(n.noMoreArgs, func(c *cli.Context, cl *client.ContivClient) error {
			l, err := list(cl)
			if err != nil {
				return n.restError(err)
			}
			objs := deref(l)
			if c.Bool("json") {
				return emit(n.opts.Stdout, listing{json: true}, objs, nil, nil)
			}
			for _, o := range objs {
				show(n.opts.Stdout, o)
			}
			return nil
		}),
	}
}

// singletonInspect is the "inspect" subcommand of a type with one object,
// whose key is key: the operational JSON.
func singletonInspect[T any](n *Netctl, usage, key string, inspect func(*client.ContivClient, string) (T, error)) cli.Command {
	return cli.Command{
		Name: "inspect", Usage: usage, ArgsUsage: noArgs,
		Action: n.checked(n.noMoreArgs, func(c *cli.Context, cl *client.ContivClient) error {
			obj, err := inspect(cl, key)
			if err != nil {
				return n.restError(err)
			}
			return writeJSON(n.opts.Stdout, obj)
		}),
	}
}
