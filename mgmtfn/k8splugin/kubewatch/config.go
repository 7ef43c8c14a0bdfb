package kubewatch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ServiceAccountTokenFile is read when the original's configuration names
// neither a client certificate nor a token (docs/daemons.md §8.3).
const ServiceAccountTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// contivConfig is the original's /var/contiv/config/contiv.json
// (docs/daemons.md §8.3). Only the keys that reach the API server are read.
type contivConfig struct {
	APIServer string `json:"K8S_API_SERVER"`
	CA        string `json:"K8S_CA"`
	Key       string `json:"K8S_KEY"`
	Cert      string `json:"K8S_CERT"`
	Token     string `json:"K8S_TOKEN"`
}

// RESTConfig gives the client settings for the API server (docs/k8s.md,
// "Informers"):
//   - path "": the in-cluster settings (service-account token and CA, the
//     KUBERNETES_SERVICE_HOST/PORT variables);
//   - a JSON object with K8S_API_SERVER: the original's contiv.json;
//   - anything else: a kubeconfig file, its current context.
func RESTConfig(path string) (*rest.Config, error) {
	if path == "" {
		c, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("kubernetes in-cluster settings: %w", err)
		}
		return c, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("kubernetes settings: %w", err)
	}
	if cc, ok, err := parseContivConfig(b); ok {
		if err != nil {
			return nil, fmt.Errorf("kubernetes settings %s: %w", path, err)
		}
		return cc.restConfig(), nil
	}
	c, err := clientcmd.RESTConfigFromKubeConfig(b)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return c, nil
}

// parseContivConfig reports ok when b is a JSON object carrying
// K8S_API_SERVER, and then checks it.
func parseContivConfig(b []byte) (contivConfig, bool, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return contivConfig{}, false, nil
	}
	if _, ok := probe["K8S_API_SERVER"]; !ok {
		return contivConfig{}, false, nil
	}
	var cc contivConfig
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&cc); err != nil {
		return cc, true, fmt.Errorf("decode: %w", err)
	}
	if !strings.HasPrefix(cc.APIServer, "https://") && !strings.HasPrefix(cc.APIServer, "http://") {
		return cc, true, fmt.Errorf("K8S_API_SERVER %q: want https://host:port", cc.APIServer)
	}
	if (cc.Cert == "") != (cc.Key == "") {
		return cc, true, fmt.Errorf("K8S_CERT and K8S_KEY go together")
	}
	return cc, true, nil
}

func (cc contivConfig) restConfig() *rest.Config {
	c := &rest.Config{Host: cc.APIServer, BearerToken: cc.Token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: cc.CA, CertFile: cc.Cert, KeyFile: cc.Key}}
	if cc.Cert == "" && cc.Token == "" {
		c.BearerTokenFile = ServiceAccountTokenFile
	}
	return c
}
