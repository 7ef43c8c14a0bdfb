// Package netctl is the netctl command-line client of netmaster (spec
// docs/netctl.md). It is built on urfave/cli v1; App returns a runnable value
// whose Run returns the process exit code instead of exiting, and all
// output goes to the writers given in Options.
package netctl

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli"
)

// Exit codes (docs/netctl.md §4).
const (
	exitOK      = 0
	exitUsage   = 1
	exitRequest = 2
	exitInvalid = 3
	exitIO      = 4
)

// defaultNetmaster is the --netmaster default shown in help and used when
// neither the option nor NETMASTER is given.
const defaultNetmaster = "http://netmaster:9999"

// Options are the process environment of one netctl run. Zero fields fall
// back to the real process environment.
type Options struct {
	Stdout io.Writer
	Stderr io.Writer
	Stdin  io.Reader
	// Getenv reads environment variables (NETMASTER, INSECURE).
	Getenv func(string) string
	// HomeDir returns the current OS user's home directory (from the user
	// database, not $HOME), where .netctl/config.json lives.
	HomeDir func() (string, error)
	// ReadPassword reads a password from the terminal without echo.
	ReadPassword func() (string, error)
	// Now is the clock of error records.
	Now func() time.Time
	// StderrIsTerminal reports whether error records get the terminal
	// (colour) format. Default: whether Stderr is a terminal.
	StderrIsTerminal func() bool

	Version   string
	GitCommit string
	BuildTime string
}

// Netctl is one configured netctl program.
type Netctl struct {
	opts  Options
	start time.Time
	stdin *bufio.Reader

	// Filled by the root Before hook from the global options.
	netmaster string
	insecure  bool
	// tlsConfig and token come from the TLS and token options.
	tlsConfig *tls.Config
	token     string
	// code is set by paths that report an error outside an action's
	// return value (unknown command names).
	code int
	// args is the command line of the current Run (shell completion
	// looks at the word before the completion flag).
	args []string
}

// App returns a netctl program using opts.
func App(opts Options) *Netctl {
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Stdin == nil {
		opts.Stdin = os.Stdin
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.HomeDir == nil {
		opts.HomeDir = func() (string, error) {
			u, err := user.Current()
			if err != nil {
				return "", err
			}
			return u.HomeDir, nil
		}
	}
	if opts.ReadPassword == nil {
		opts.ReadPassword = readPasswordFromTerminal
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.StderrIsTerminal == nil {
		w := opts.Stderr
		opts.StderrIsTerminal = func() bool { return isTerminal(w) }
	}
	n := &Netctl{opts: opts, start: opts.Now()}
	n.stdin = bufio.NewReader(opts.Stdin)
	return n
}

// Run executes the command line args (args[0] is the program name, used
// verbatim in help and --version) and returns the exit code.
func (n *Netctl) Run(args []string) int {
	setupCLIPackage()
	if len(args) == 0 {
		args = []string{"netctl"}
	}
	n.args, n.code = args, exitOK
	app := n.cliApp(args[0])
	// A completion request keeps its words as typed: the library expects
	// its flag last.
	if args[len(args)-1] != "--"+cli.BashCompletionFlag.GetName() {
		args = normalizeArgs(app, args)
	}
	err := app.Run(args)
	if err != nil {
		var ee *exitError
		if !errors.As(err, &ee) {
			ee = &exitError{code: exitUsage, msg: err.Error()}
		}
		if !ee.printed {
			n.logError(ee.msg)
		}
		return ee.code
	}
	return n.code
}

// exitError ends a command with an exit code; msg is logged on stderr
// unless printed is set (the message was already reported).
type exitError struct {
	code    int
	msg     string
	printed bool
}

func (e *exitError) Error() string { return e.msg }

func fail(code int, msg string) error { return &exitError{code: code, msg: msg} }

// usageError reports msg, prints the help of the running leaf command and
// returns the usage exit code ("+help" errors of the spec).
func (n *Netctl) usageError(c *cli.Context, msg string) error {
	n.logError(msg)
	_ = cli.ShowCommandHelp(c, c.Command.Name)
	return &exitError{code: exitUsage, msg: msg, printed: true}
}

// onUsageError handles flag-parsing errors of every level: one error
// record on stderr, the help of that level on stdout, exit 1.
func (n *Netctl) onUsageError(level string) cli.OnUsageErrorFunc {
	return func(c *cli.Context, err error, isSubcommand bool) error {
		msg := "Incorrect Usage: " + err.Error()
		n.logError(msg)
		switch {
		case level == "app":
			_ = cli.ShowAppHelp(c)
		case isSubcommand:
			_ = cli.ShowSubcommandHelp(c)
		default:
			_ = cli.ShowCommandHelp(c, c.Command.Name)
		}
		return &exitError{code: exitUsage, msg: msg, printed: true}
	}
}

// commandNotFound reports an unknown command or help topic.
func (n *Netctl) commandNotFound(_ *cli.Context, name string) {
	n.logError("No help topic for '" + name + "'")
	n.code = exitUsage
}

func (n *Netctl) cliApp(argv0 string) *cli.App {
	app := cli.NewApp()
	app.Name = argv0
	app.HelpName = argv0
	app.Usage = "A command line client for Contiv netplugin"
	app.Version = "\nVersion: " + n.opts.Version + "\nGitCommit: " + n.opts.GitCommit + "\nBuildTime: " + n.opts.BuildTime + "\n"
	app.Writer = n.opts.Stdout
	app.ErrWriter = n.opts.Stderr
	app.EnableBashCompletion = true
	app.BashComplete = n.complete(nil)
	// Exit codes are computed by Run; never let the library exit.
	app.ExitErrHandler = func(*cli.Context, error) {}
	app.OnUsageError = n.onUsageError("app")
	app.CommandNotFound = n.commandNotFound
	app.Flags = []cli.Flag{
		envFlag{cli.StringFlag{Name: "netmaster", Value: defaultNetmaster, Usage: "The hostname of the netmaster"}, "NETMASTER"},
		envFlag{cli.BoolFlag{Name: "insecure", Usage: "if true, strict certificate checking will be disabled"}, "INSECURE"},
	}
	app.Flags = append(app.Flags, opsFlags()...)
	app.Before = func(c *cli.Context) error {
		n.netmaster = defaultNetmaster
		if c.IsSet("netmaster") {
			n.netmaster = c.String("netmaster")
		} else if v := n.opts.Getenv("NETMASTER"); v != "" {
			n.netmaster = v
		}
		n.insecure = c.Bool("insecure")
		if !c.IsSet("insecure") {
			if b, err := strconv.ParseBool(n.opts.Getenv("INSECURE")); err == nil {
				n.insecure = b
			}
		}
		return n.readOpsOptions(c)
	}
	app.Action = func(c *cli.Context) error {
		if c.Args().Present() {
			n.commandNotFound(c, c.Args().First())
			return nil
		}
		return cli.ShowAppHelp(c)
	}
	app.Commands = []cli.Command{
		n.aciGwCommand(),
		n.appProfileCommand(),
		n.bgpCommand(),
		n.completionCommand(),
		n.endpointCommand(),
		n.extContractsCommand(),
		n.globalCommand(),
		n.groupCommand(),
		n.loginCommand(),
		n.netprofileCommand(),
		n.networkCommand(),
		n.policyCommand(),
		n.serviceCommand(),
		n.tenantCommand(),
		n.traceCommand(),
		n.versionCommand(),
	}
	for i := range app.Commands {
		n.finishCommand(&app.Commands[i])
	}
	return app
}

// finishCommand sets what every command shares: usage-error handling,
// completion, and no library argument reordering (normalizeArgs does it).
func (n *Netctl) finishCommand(c *cli.Command) {
	c.OnUsageError = n.onUsageError("command")
	c.SkipArgReorder = true
	if c.BashComplete == nil {
		c.BashComplete = n.complete(c)
	}
	for i := range c.Subcommands {
		n.finishCommand(&c.Subcommands[i])
	}
}

// envFlag is a global option that also reads an environment variable. The
// variable is applied by the root Before hook (through Options.Getenv, so
// tests can inject it); the wrapper only carries its name for help text.
type envFlag struct {
	cli.Flag
	env string
}

// normalizeArgs rewrites the words of the leaf command so that options may
// appear anywhere before "--" while positional arguments keep their
// relative order: options first, then "--", then the positional words.
// Everything before the leaf (global options, command and subcommand
// names) is left as it is. Unknown command names leave args unchanged.
func normalizeArgs(app *cli.App, args []string) []string {
	i := 1
	// global options (Go flag semantics: stop at the first non-option)
	for i < len(args) {
		w := args[i]
		if w == "--" || len(w) < 2 || w[0] != '-' {
			break
		}
		if flagTakesValue(app.Flags, w) {
			i++
		}
		i++
	}
	if i >= len(args) {
		return args
	}
	cmd := findCommand(app.Commands, args[i])
	if cmd == nil {
		return args
	}
	i++
	if len(cmd.Subcommands) > 0 {
		for i < len(args) {
			w := args[i]
			if w == "--" || len(w) < 2 || w[0] != '-' {
				break
			}
			i++
		}
		if i >= len(args) {
			return args
		}
		cmd = findCommand(cmd.Subcommands, args[i])
		if cmd == nil {
			return args
		}
		i++
	}
	flags := append([]cli.Flag{cli.HelpFlag}, cmd.Flags...)
	var opts, pos []string
	for j := i; j < len(args); j++ {
		w := args[j]
		if w == "--" {
			pos = append(pos, args[j+1:]...)
			break
		}
		if len(w) > 1 && w[0] == '-' {
			opts = append(opts, canonicalOption(flags, w))
			if flagTakesValue(flags, w) {
				if j+1 == len(args) {
					// The option lacks its value: keep it last so the
					// parser reports it (instead of taking "--" as value).
					return append(append([]string{}, args[:i]...), opts...)
				}
				j++
				opts = append(opts, args[j])
			}
			continue
		}
		pos = append(pos, w)
	}
	out := append(append([]string{}, args[:i]...), opts...)
	if len(pos) > 0 {
		out = append(out, "--")
		out = append(out, pos...)
	}
	return out
}

func findCommand(cmds []cli.Command, name string) *cli.Command {
	for i := range cmds {
		if cmds[i].HasName(name) {
			return &cmds[i]
		}
	}
	return nil
}

// canonicalOption rewrites an option word to the first name of its option
// ("-t=x" becomes "--tenant=x"), so that mixing the spellings of one option
// works (the library rejects two forms of one option; repeated slice
// options accumulate across spellings). Unknown options are kept.
func canonicalOption(flags []cli.Flag, w string) string {
	name := strings.TrimPrefix(strings.TrimPrefix(w, "-"), "-")
	value := ""
	if i := strings.IndexByte(name, '='); i >= 0 {
		name, value = name[:i], name[i:]
	}
	for _, f := range flags {
		names := strings.Split(f.GetName(), ",")
		for _, fn := range names {
			if strings.TrimSpace(fn) == name {
				return "--" + strings.TrimSpace(names[0]) + value
			}
		}
	}
	return w
}

// flagTakesValue reports whether the option word w ("-t", "--tenant")
// names a known non-boolean option given without "=value".
func flagTakesValue(flags []cli.Flag, w string) bool {
	name := strings.TrimPrefix(strings.TrimPrefix(w, "-"), "-")
	if strings.Contains(name, "=") {
		return false
	}
	for _, f := range flags {
		if ef, ok := f.(envFlag); ok {
			f = ef.Flag
		}
		for _, fn := range strings.Split(f.GetName(), ",") {
			if strings.TrimSpace(fn) != name {
				continue
			}
			switch f.(type) {
			case cli.BoolFlag, cli.BoolTFlag:
				return false
			default:
				return true
			}
		}
	}
	return false
}

// readLine reads one line of stdin (login's user name).
func (n *Netctl) readLine() (string, error) {
	s, err := n.stdin.ReadString('\n')
	if err != nil && (s == "" || !errors.Is(err, io.EOF)) {
		return "", err
	}
	return s, nil
}
