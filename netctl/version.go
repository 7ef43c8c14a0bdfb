package netctl

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/urfave/cli"
)

func (n *Netctl) versionCommand() cli.Command {
	return cli.Command{
		Name:   "version",
		Usage:  "Version Information",
		Action: func(c *cli.Context) error { return n.version(c) },
	}
}

// version prints the client and the server version. The server is asked
// with a plain HTTP client: no token, no --insecure (docs/netctl.md §6.13); only the
// CA of --tls-ca-file is trusted in addition.
func (n *Netctl) version(c *cli.Context) error {
	if err := n.noMoreArgs(c); err != nil {
		return err
	}
	resp, err := n.versionClient().Get(n.netmaster + "/version")
	if err != nil {
		return fail(exitRequest, n.describe(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fail(exitRequest, n.describe(err))
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = n.opts.Stderr.Write(body)
		return fail(exitInvalid, fmt.Sprintf("Status %d in request response", resp.StatusCode))
	}
	var srv struct {
		GitCommit string
		Version   string
		BuildTime string
	}
	if err := json.Unmarshal(body, &srv); err != nil {
		return fail(exitRequest, err.Error())
	}
	fmt.Fprintf(n.opts.Stdout, "Client Version:\nVersion: %s\nGitCommit: %s\nBuildTime: %s\n\nServer Version:\nVersion: %s\nGitCommit: %s\nBuildTime: %s\n",
		n.opts.Version, n.opts.GitCommit, n.opts.BuildTime, srv.Version, srv.GitCommit, srv.BuildTime)
	return nil
}
