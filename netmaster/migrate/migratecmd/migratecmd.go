// Package migratecmd is `netmaster migrate` (docs/upgrade.md): it reads an
// original Contiv cluster's store and writes this project's layout into
// the target store given by the netmaster's own store flags.
package migratecmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli"

	"github.com/contiv/netplugin/netmaster/migrate"
	"github.com/contiv/netplugin/objdb/dial"
	"github.com/contiv/netplugin/utils/daemonflags"
)

// Exit statuses.
const (
	ExitRefused = 2 // the source cannot be mapped, or the target refuses
	ExitFailed  = 1 // the store failed
)

// Config is one run.
type Config struct {
	Source          migrate.Source
	EtcdEndpoints   []string
	ConsulEndpoints []string
	Root            string // objdb.DefaultRoot when empty
	Apply           migrate.Options
	Verbose         bool
}

// Command is the `migrate` subcommand.
func Command() cli.Command {
	return cli.Command{
		Name:  "migrate",
		Usage: "copy an original Contiv cluster's store into this netmaster's store (docs/upgrade.md)",
		Flags: []cli.Flag{
			cli.StringFlag{Name: "source-etcd", Usage: "the original's etcd, read through its v2 API (http://host:2379)"},
			cli.StringFlag{Name: "source-consul", Usage: "the original's consul agent (host:8500)"},
			cli.StringFlag{Name: "source-file", Usage: "a dump: the etcd v2 answer of GET /v2/keys/?recursive=true, or the output of consul kv export contiv.io/"},
			cli.StringFlag{Name: "etcd-endpoints, etcd", EnvVar: "CONTIV_NETMASTER_ETCD_ENDPOINTS", Usage: "target: comma-separated etcd URLs (default http://127.0.0.1:2379)"},
			cli.StringFlag{Name: "consul-endpoints, consul", EnvVar: "CONTIV_NETMASTER_CONSUL_ENDPOINTS", Usage: "target: comma-separated consul addresses"},
			cli.BoolFlag{Name: "dry-run", Usage: "check everything, print what would be written and every conflict, write nothing"},
			cli.BoolFlag{Name: "merge", Usage: "allow a non-empty target: existing keys must hold the same value, any conflict stops the run before it writes"},
			cli.BoolFlag{Name: "allow-unmapped", Usage: "carry the source over even if some keys have an unknown shape (they are listed)"},
			cli.BoolFlag{Name: "verbose, v", Usage: "list every key written"},
		},
		Action: func(c *cli.Context) error {
			cfg, err := FromContext(c)
			if err != nil {
				return cli.NewExitError("netmaster migrate: "+err.Error(), daemonflags.ExitInvalid)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			code, err := Run(ctx, cfg, c.App.Writer)
			if err != nil {
				return cli.NewExitError("netmaster migrate: "+err.Error(), code)
			}
			return nil
		},
	}
}

// FromContext reads the flags.
func FromContext(c *cli.Context) (Config, error) {
	cfg := Config{
		EtcdEndpoints:   daemonflags.SplitList(c.String("etcd-endpoints")),
		ConsulEndpoints: daemonflags.SplitList(c.String("consul-endpoints")),
		Apply: migrate.Options{DryRun: c.Bool("dry-run"), Merge: c.Bool("merge"),
			AllowUnmapped: c.Bool("allow-unmapped")},
		Verbose: c.Bool("verbose"),
	}
	var srcs []migrate.Source
	if v := c.String("source-etcd"); v != "" {
		srcs = append(srcs, migrate.EtcdV2Source{URL: v})
	}
	if v := c.String("source-consul"); v != "" {
		srcs = append(srcs, migrate.ConsulSource{Addr: v})
	}
	if v := c.String("source-file"); v != "" {
		srcs = append(srcs, migrate.FileSource{Path: v})
	}
	if len(srcs) != 1 {
		return cfg, errors.New("give exactly one of --source-etcd, --source-consul, --source-file")
	}
	if len(cfg.EtcdEndpoints) > 0 && len(cfg.ConsulEndpoints) > 0 {
		return cfg, errors.New("ambiguous target: give --etcd-endpoints or --consul-endpoints, not both")
	}
	cfg.Source = srcs[0]
	return cfg, nil
}

// Run migrates and reports to w; the int is the exit status on error.
func Run(ctx context.Context, cfg Config, w io.Writer) (int, error) {
	tree, err := cfg.Source.Read(ctx)
	if err != nil {
		return ExitRefused, fmt.Errorf("read %s: %w (nothing written)", cfg.Source, err)
	}
	plan := migrate.Map(tree)
	fmt.Fprintf(w, "source: %s (%d keys)\n", cfg.Source, len(tree.KV)+len(tree.Outside))
	plan.Report(w)
	if err := plan.Err(cfg.Apply.AllowUnmapped); err != nil {
		return ExitRefused, fmt.Errorf("%w (nothing written)", err)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	st, err := dial.Open(ctx, dial.Config{EtcdEndpoints: cfg.EtcdEndpoints, ConsulEndpoints: cfg.ConsulEndpoints,
		Root: cfg.Root, Logger: logrus.NewEntry(log)})
	if err != nil {
		return ExitFailed, fmt.Errorf("open target store: %w", err)
	}
	defer st.Close()
	opts := cfg.Apply
	opts.Source = cfg.Source.String()
	res, err := migrate.Apply(ctx, st, plan, opts)
	res.Report(w, opts.DryRun, cfg.Verbose)
	if err != nil {
		if errors.Is(err, migrate.ErrTarget) || errors.Is(err, migrate.ErrPlan) {
			return ExitRefused, err
		}
		return ExitFailed, err
	}
	return 0, nil
}
