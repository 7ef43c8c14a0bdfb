package netctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/contiv/netplugin/contivmodel/client"
)

// restClient builds the object client for the --netmaster URL, with the
// --insecure transport and the token of ~/.netctl/config.json (docs/netctl.md §2).
// The token is only attached for https URLs: the model client refuses to
// send it in clear text, and unlike the original netctl a config file no
// longer makes every http:// command fail.
func (n *Netctl) restClient() (*client.ContivClient, error) {
	cl, err := client.NewContivClient(n.netmaster)
	if err != nil {
		return nil, fail(exitUsage, "Error connecting to netmaster: "+err.Error())
	}
	if err := cl.SetHttpClient(n.newHTTPClient()); err != nil {
		return nil, fail(exitInvalid, err.Error())
	}
	token, err := n.readToken()
	if err != nil {
		return nil, err
	}
	if token != "" && strings.HasPrefix(n.netmaster, "https://") {
		if err := cl.SetAuthToken(token); err != nil {
			return nil, fail(exitInvalid, "error processing netctl config: failed to set auth token: "+err.Error())
		}
	}
	return cl, nil
}

func (n *Netctl) configPath() (string, error) {
	home, err := n.opts.HomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".netctl", "config.json"), nil
}

// readToken returns the token of the config file, "" when there is none.
func (n *Netctl) readToken() (string, error) {
	path, err := n.configPath()
	if err != nil {
		return "", fail(exitIO, "error processing netctl config: "+err.Error())
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return "", fail(exitIO, "error processing netctl config: "+err.Error())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fail(exitInvalid, "error processing netctl config: failed to read config file: "+err.Error())
	}
	var cfg struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", fail(exitInvalid, "error processing netctl config: failed to unmarshal JSON: "+err.Error())
	}
	return cfg.Token, nil
}

// restError turns an error of the object client into the command's exit
// error (exit 3). A transport failure names the netmaster URL tried.
func (n *Netctl) restError(err error) error {
	return fail(exitInvalid, n.describe(err))
}

func (n *Netctl) describe(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Sprintf("cannot reach netmaster at %s (%s %s): %v%s", n.netmaster, strings.ToUpper(ue.Op), ue.URL, ue.Err, tlsHint(ue.Err))
	}
	var he *client.HTTPError
	if errors.As(err, &he) && strings.TrimSpace(he.Error()) == "" {
		return fmt.Sprintf("netmaster answered status %d with an empty body", he.StatusCode)
	}
	return err.Error()
}
