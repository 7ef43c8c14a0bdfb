package daemonflags

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/sirupsen/logrus"
	"github.com/urfave/cli"

	"github.com/contiv/netplugin/utils/logsetup"
	"github.com/contiv/netplugin/utils/version"
)

// AppSpec describes one daemon's command line (docs/daemons.md §1): C is
// the daemon's parsed configuration.
type AppSpec[C any] struct {
	// Name is the binary's name; it starts every error message and tags
	// the log.
	Name  string
	Usage string
	// Bin selects the environment twins of the shared flags ("NETMASTER"
	// or "NETPLUGIN", see Flags).
	Bin string
	// Flags are the daemon's own flags, listed after the shared ones.
	Flags []cli.Flag
	// Parse reads and validates every flag; an error exits ExitInvalid.
	Parse func(c *cli.Context) (C, error)
	// Run runs the daemon until ctx ends (SIGINT, SIGTERM); an error
	// exits 1.
	Run func(ctx context.Context, cfg C, log *logrus.Entry) error
}

// App returns the daemon's urfave/cli application: the shared flags then
// spec.Flags, --version printing version.Get().Lines(), and an action that
// refuses positional arguments, parses, sets up logging from the shared
// flags and runs the daemon.
func App[C any](spec AppSpec[C]) *cli.App {
	app := cli.NewApp()
	app.Name = spec.Name
	app.Usage = spec.Usage
	app.Version = version.Get().Version
	cli.VersionPrinter = func(c *cli.Context) {
		fmt.Fprint(c.App.Writer, version.Get().Lines())
	}
	app.Flags = append(Flags(spec.Bin), spec.Flags...)
	fail := func(err error, code int) error {
		return cli.NewExitError(spec.Name+": "+err.Error(), code)
	}
	app.Action = func(c *cli.Context) error {
		if c.NArg() > 0 {
			return cli.NewExitError(fmt.Sprintf("unexpected arguments: %s", strings.Join(c.Args(), " ")), ExitInvalid)
		}
		cfg, err := spec.Parse(c)
		if err != nil {
			return fail(err, ExitInvalid)
		}
		common, err := FromContext(c)
		if err != nil {
			return fail(err, ExitInvalid)
		}
		log := logrus.StandardLogger()
		if err := logsetup.Configure(log, logsetup.Options{Level: common.LogLevel, JSON: common.JSONLog,
			Syslog: common.Syslog, SyslogURL: common.SyslogURL, Tag: spec.Name}); err != nil {
			return fail(err, ExitInvalid)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := spec.Run(ctx, cfg, logrus.NewEntry(log)); err != nil {
			return fail(err, 1)
		}
		return nil
	}
	return app
}

// NewRegistry is the registry a daemon's /metrics serves: the Go runtime
// and process collectors, then whatever the daemon registers
// (docs/operations.md).
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}
