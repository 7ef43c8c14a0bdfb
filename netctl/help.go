package netctl

import (
	"io"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"text/template"

	"github.com/urfave/cli"
)

// urfave/cli v1 prints help through the package-level variable
// cli.HelpPrinter. This is the one place netctl touches the library's
// package state: setupCLIPackage installs printHelp, a stateless function
// that renders to the writer it is given, so concurrent Netctl values (and
// tests) stay independent. It is idempotent.
var setupOnce sync.Once

func setupCLIPackage() {
	setupOnce.Do(func() { cli.HelpPrinter = printHelp })
}

// The help layouts of the original CLI framework (docs/netctl.md §1.3, §9). They are
// rendered through a tabwriter with TAB padding, as the original did.
const (
	appHelpTemplate = `NAME:
   {{.Name}} - {{.Usage}}

USAGE:
   {{.HelpName}} {{if .VisibleFlags}}[global options]{{end}}{{if .VisibleCommands}} command [command options]{{end}} {{if .ArgsUsage}}{{.ArgsUsage}}{{else}}[arguments...]{{end}}
   {{if .Version}}
VERSION:
   {{.Version}}
   {{end}}{{if .VisibleCommands}}
COMMANDS:
   {{range .VisibleCommands}}{{join .Names ", "}}{{"\t"}}{{.Usage}}
   {{end}}{{end}}{{if .VisibleFlags}}
GLOBAL OPTIONS:
   {{range .VisibleFlags}}{{flagHelp .}}
   {{end}}{{end}}
`
	subcommandHelpTemplate = `NAME:
   {{.HelpName}} - {{.Usage}}

USAGE:
   {{.HelpName}} command{{if .VisibleFlags}} [command options]{{end}} {{if .ArgsUsage}}{{.ArgsUsage}}{{else}}[arguments...]{{end}}

COMMANDS:
   {{range .VisibleCommands}}{{join .Names ", "}}{{"\t"}}{{.Usage}}
   {{end}}{{if .VisibleFlags}}
OPTIONS:
   {{range .VisibleFlags}}{{flagHelp .}}
   {{end}}{{end}}
`
	commandHelpTemplate = `NAME:
   {{.HelpName}} - {{.Usage}}

USAGE:
   {{.HelpName}}{{if .VisibleFlags}} [command options]{{end}} {{if .ArgsUsage}}{{.ArgsUsage}}{{else}}[arguments...]{{end}}{{if .VisibleFlags}}

OPTIONS:
   {{range .VisibleFlags}}{{flagHelp .}}
   {{end}}{{end}}
`
)

// printHelp replaces cli.HelpPrinter. The library passes a *cli.App for the
// application help and for the subcommand list of a command (the latter
// with cli.SubcommandHelpTemplate), and a cli.Command for a command's own
// help.
func printHelp(w io.Writer, templ string, data interface{}) {
	var text string
	switch data.(type) {
	case cli.Command, *cli.Command:
		text = commandHelpTemplate
	default:
		if templ == cli.SubcommandHelpTemplate {
			text = subcommandHelpTemplate
		} else {
			text = appHelpTemplate
		}
	}
	funcs := template.FuncMap{"join": strings.Join, "flagHelp": flagHelp}
	tw := tabwriter.NewWriter(w, 0, 8, 1, '\t', 0)
	t := template.Must(template.New("help").Funcs(funcs).Parse(text))
	if err := t.Execute(tw, data); err != nil {
		return
	}
	_ = tw.Flush()
}

// flagHelp renders one option line the way the original framework did:
// `--name, -n "default"<TAB>usage`.
func flagHelp(f cli.Flag) string {
	env := ""
	if ef, ok := f.(envFlag); ok {
		f, env = ef.Flag, " [$"+ef.env+"]"
	}
	names := prefixedNames(f.GetName())
	var s string
	switch v := f.(type) {
	case cli.StringFlag:
		def := ""
		if v.Value != "" {
			def = `"` + v.Value + `"`
		}
		s = names + " " + def + "\t" + v.Usage
	case cli.IntFlag:
		s = names + ` "` + strconv.Itoa(v.Value) + `"` + "\t" + v.Usage
	case cli.BoolFlag:
		s = names + "\t" + v.Usage
	case cli.StringSliceFlag:
		first := prefixedNames(strings.Split(v.Name, ",")[0])
		s = names + " [" + first + " option " + first + " option]\t" + v.Usage
	default:
		s = f.String()
	}
	return s + env
}

func prefixedNames(fullName string) string {
	var out []string
	for _, name := range strings.Split(fullName, ",") {
		name = strings.TrimSpace(name)
		if len(name) == 1 {
			out = append(out, "-"+name)
		} else {
			out = append(out, "--"+name)
		}
	}
	return strings.Join(out, ", ")
}
