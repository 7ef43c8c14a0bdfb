package netctl

import (
	"fmt"
	"strings"

	"github.com/urfave/cli"
)

// Shell completion (beyond the original). `netctl completion bash|zsh`
// prints a script; the script calls netctl with the words typed so far
// plus --generate-bash-completion, which the library routes to complete.
// The application help lists it among the original's commands.

const bashCompletion = `# bash completion for %[1]s; load with: source <(%[1]s completion bash)
_%[2]s_complete() {
    local cur="${COMP_WORDS[COMP_CWORD]}"
    local words=("${COMP_WORDS[@]:0:COMP_CWORD}")
    local IFS=$'\n'
    COMPREPLY=($(compgen -W "$("${words[@]}" "$cur" --generate-bash-completion 2>/dev/null)" -- "$cur"))
    return 0
}
complete -o default -F _%[2]s_complete %[1]s
`

const zshCompletion = `#compdef %[1]s
# zsh completion for %[1]s; load with: source <(%[1]s completion zsh)
_%[2]s_complete() {
    local -a opts
    opts=(${(f)"$(${words[1,CURRENT-1]} "${words[CURRENT]}" --generate-bash-completion 2>/dev/null)"})
    compadd -- $opts
}
compdef _%[2]s_complete %[1]s
`

func (n *Netctl) completionCommand() cli.Command {
	script := func(tmpl string) func(c *cli.Context) error {
		return func(c *cli.Context) error {
			if err := n.noMoreArgs(c); err != nil {
				return err
			}
			prog := "netctl"
			if len(n.args) > 0 && n.args[0] != "" {
				prog = n.args[0]
				if i := strings.LastIndexByte(prog, '/'); i >= 0 {
					prog = prog[i+1:]
				}
			}
			fn := strings.Map(func(r rune) rune {
				if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
					return r
				}
				return '_'
			}, prog)
			fmt.Fprintf(n.opts.Stdout, tmpl, prog, fn)
			return nil
		}
	}
	return cli.Command{
		Name:  "completion",
		Usage: "Print a shell completion script (bash or zsh)",
		Subcommands: []cli.Command{
			{Name: "bash", Usage: "bash completion script", ArgsUsage: noArgs, Action: script(bashCompletion)},
			{Name: "zsh", Usage: "zsh completion script", ArgsUsage: noArgs, Action: script(zshCompletion)},
		},
	}
}

// complete answers a completion request at the level of cmd (nil: the
// top level): option names after a word starting with "-", otherwise the
// names of the subcommands.
func (n *Netctl) complete(cmd *cli.Command) cli.BashCompleteFunc {
	return func(c *cli.Context) {
		last := ""
		if len(n.args) >= 2 {
			last = n.args[len(n.args)-2]
		}
		var flags []cli.Flag
		var cmds []cli.Command
		if cmd == nil {
			flags, cmds = c.App.Flags, c.App.Commands
		} else {
			flags, cmds = cmd.Flags, cmd.Subcommands
		}
		if strings.HasPrefix(last, "-") {
			for _, f := range flags {
				if ef, ok := f.(envFlag); ok {
					f = ef.Flag
				}
				for _, name := range strings.Split(f.GetName(), ",") {
					fmt.Fprintln(n.opts.Stdout, prefixedNames(name))
				}
			}
			return
		}
		for _, sc := range cmds {
			if sc.Hidden {
				continue
			}
			for _, name := range sc.Names() {
				fmt.Fprintln(n.opts.Stdout, name)
			}
		}
	}
}
