package testbed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/contiv/netplugin/objdb"
)

// The testbed's consul (docs/security.md, "The store"): unless
// Config.InsecureStore it serves https only (no http port) with the store
// PKI's server certificate, asks every client for a certificate of the
// store CA (verify_incoming), and runs ACLs with default_policy "deny".
// Its management token stays with the testbed, which uses it once to
// create the policy "contiv" and the daemons' token (ConsulToken): write
// on the key prefix of contiv's root, sessions (locks, leader election,
// service TTLs) and services, read on nodes.

// consulContivRules is the policy of the daemons' token.
func consulContivRules() string {
	return fmt.Sprintf(`key_prefix %q { policy = "write" }
session_prefix "" { policy = "write" }
service_prefix "" { policy = "write" }
node_prefix "" { policy = "read" }
`, strings.TrimPrefix(objdb.DefaultRoot, "/"))
}

// uuid4 is a random UUID (consul's token format).
func uuid4() string {
	h := randomHex(16)
	return h[0:8] + "-" + h[8:12] + "-4" + h[13:16] + "-8" + h[17:20] + "-" + h[20:32]
}

// consulTokenFile is the daemons' token file (in the store PKI folder,
// mode 0600).
func (tb *Testbed) consulTokenFile() string { return filepath.Join(tb.StorePKI.Dir, "consul-token") }

// consulSecure reports whether the consul store runs with TLS and ACLs.
func (tb *Testbed) consulSecure() bool { return tb.Config.Store == ExternalConsul && tb.storeTLS() }

// consulScheme is the scheme of the consul endpoint.
func (tb *Testbed) consulScheme() string {
	if tb.consulSecure() {
		return "https"
	}
	return "http"
}

// consulHTTPPort is the agent's -http-port: none ("-1") when it serves
// https on ConsulPort.
func (tb *Testbed) consulHTTPPort() string {
	if tb.consulSecure() {
		return "-1"
	}
	return strconv.Itoa(ConsulPort)
}

// consulSecureArgs writes the agent's ACL and TLS configuration into dir
// and the daemons' token file, and returns the agent's extra flags.
func (tb *Testbed) consulSecureArgs(dir string) ([]string, error) {
	if !tb.consulSecure() {
		return nil, nil
	}
	tb.consulMgmtToken, tb.ConsulToken = uuid4(), uuid4()
	p := tb.StorePKI
	hcl := fmt.Sprintf(`acl {
  enabled = true
  default_policy = "deny"
  down_policy = "deny"
  enable_token_persistence = false
  tokens {
    initial_management = %q
    agent = %q
  }
}
ports {
  https = %d
}
tls {
  defaults {
    ca_file = %q
    cert_file = %q
    key_file = %q
    verify_incoming = true
    verify_outgoing = true
  }
  internal_rpc {
    verify_server_hostname = false
  }
}
`, tb.consulMgmtToken, tb.consulMgmtToken, ConsulPort, p.CA, p.ServerCert, p.ServerKey)
	f := filepath.Join(dir, "secure.hcl")
	if err := os.WriteFile(f, []byte(hcl), 0o600); err != nil {
		return nil, fmt.Errorf("consul configuration: %w", err)
	}
	if err := os.WriteFile(tb.consulTokenFile(), []byte(tb.ConsulToken+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("consul token file: %w", err)
	}
	return []string{"-config-file", f}, nil
}

// consulHTTPClient is a client of the consul agent from its namespace
// (with the store's client certificate when it serves https).
func (tb *Testbed) consulHTTPClient() (*http.Client, error) {
	hc := nsHTTPClient(tb.StoreNS)
	hc.Timeout = 5 * time.Second
	cfg, err := tb.storeClientTLS()
	if err != nil {
		return nil, fmt.Errorf("consul client TLS: %w", err)
	}
	hc.Transport.(*http.Transport).TLSClientConfig = cfg
	return hc, nil
}

// consulURL is the agent's base URL.
func (tb *Testbed) consulURL() string {
	return tb.consulScheme() + "://" + StoreIP + ":" + strconv.Itoa(ConsulPort)
}

// consulBootstrapACL creates the policy "contiv" and the daemons' token
// with the management token.
func (tb *Testbed) consulBootstrapACL(hc *http.Client) error {
	if !tb.consulSecure() {
		return nil
	}
	put := func(path string, body any) error {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		req, err := http.NewRequest(http.MethodPut, tb.consulURL()+path, bytes.NewReader(b))
		if err != nil {
			return err
		}
		req.Header.Set("X-Consul-Token", tb.consulMgmtToken)
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("PUT %s: %w", path, err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("PUT %s: %s: %s", path, resp.Status, bytes.TrimSpace(out))
		}
		return nil
	}
	// The ACL system may take a moment after the leader is elected.
	return poll(storeReadyTimeout, tb.store.exited(), func() error {
		err := put("/v1/acl/policy", map[string]string{"Name": "contiv", "Rules": consulContivRules()})
		if err != nil && !bytes.Contains([]byte(err.Error()), []byte("already exists")) {
			return err
		}
		return put("/v1/acl/token", map[string]any{"Description": "contiv daemons", "SecretID": tb.ConsulToken,
			"Policies": []map[string]string{{"Name": "contiv"}}})
	})
}
