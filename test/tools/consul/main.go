// Command consul is a real Consul agent built from the upstream module, used
// only by the project's tests (Debian ships no consul package).
package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/consul/command"
	ccli "github.com/hashicorp/consul/command/cli"
	"github.com/mitchellh/cli"
)

func main() {
	ui := &ccli.BasicUI{BasicUi: cli.BasicUi{Reader: os.Stdin, Writer: os.Stdout, ErrorWriter: os.Stderr}}
	c := &cli.CLI{Name: "consul", Args: os.Args[1:], Commands: command.CommandsFromRegistry(ui), HelpWriter: os.Stdout}
	code, err := c.Run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "consul:", err)
	}
	os.Exit(code)
}
