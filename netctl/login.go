package netctl

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli"
)

func (n *Netctl) loginCommand() cli.Command {
	return cli.Command{
		Name:   "login",
		Usage:  "authenticate to Contiv (you must specify auth_proxy's HTTPS address in the --netmaster flag)",
		Action: func(c *cli.Context) error { return n.login(c) },
	}
}

// login asks for credentials, posts them to the auth_proxy and stores the
// answer (the token file) in ~/.netctl/config.json (docs/netctl.md §6.14).
func (n *Netctl) login(c *cli.Context) error {
	if err := n.noMoreArgs(c); err != nil {
		return err
	}
	if !strings.HasPrefix(n.netmaster, "https://") {
		n.logError("login requires a https auth_proxy URL")
		_ = cli.ShowCommandHelp(c, c.Command.Name)
		return &exitError{code: exitInvalid, msg: "login requires a https auth_proxy URL", printed: true}
	}
	cl, err := n.restClient()
	if err != nil {
		return err
	}
	fmt.Fprint(n.opts.Stdout, "Username: ")
	line, err := n.readLine()
	if err != nil {
		return fail(exitIO, err.Error())
	}
	username := strings.TrimSpace(line)
	if username == "" {
		return fail(exitInvalid, "you must specify a username")
	}
	fmt.Fprint(n.opts.Stdout, "Password: ")
	password, err := n.opts.ReadPassword()
	if err != nil {
		return fail(exitIO, err.Error())
	}
	fmt.Fprintln(n.opts.Stdout)
	resp, body, err := cl.Login(username, password)
	if err != nil {
		return fail(exitIO, n.describe(err))
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return fail(exitInvalid, "Login failed: Bad username or password.")
	case resp.StatusCode != http.StatusOK:
		msg := fmt.Sprintf("Login failed: unexpected response code (%d)", resp.StatusCode)
		if b := oneLine(string(body)); b != "" {
			msg += ": " + b
		}
		return fail(exitInvalid, msg)
	}
	fmt.Fprintln(n.opts.Stdout, "Login succeeded.")
	path, err := n.configPath()
	if err != nil {
		return fail(exitIO, err.Error())
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fail(exitIO, err.Error())
	}
	if err := os.WriteFile(path, body, 0o600); err != nil {
		return fail(exitIO, err.Error())
	}
	return nil
}
