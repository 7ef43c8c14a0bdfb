package netctl

import (
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// oneErrorLine checks the "one clear line on stderr" rule.
func oneErrorLine(t *testing.T, r result) {
	t.Helper()
	if strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, `time="`) || !strings.Contains(r.stderr, "level=error msg=") {
		t.Errorf("stderr is not one error record: %q", r.stderr)
	}
}

func TestArgumentCountErrors(t *testing.T) {
	more := "More arguments than required"
	cases := map[string]string{
		"tenant create": "Tenant name required", "tenant create a b": "Tenant name required",
		"tenant rm": "Tenant name required", "tenant inspect": "Tenant name required", "tenant ls x": more,
		"network create": "Network name required", "net create -s 1.1.1.0/24 a b": "Network name required",
		"net rm": "Network name required", "net inspect": "Network name required", "net ls x": more,
		"group create n1": "Network and group name required", "group inspect": "EndpointGroup name required",
		"group rm": "EndpointGroup name required", "group ls x": more,
		"policy create": "Policy name required", "policy rm": "Policy name required",
		"policy inspect": "Policy name required", "policy ls x": more,
		"policy rule-add p": "Policy name and Rule ID required", "policy rule-rm p": "Policy name and Rule ID required",
		"policy rule-ls": "Policy name required", "policy rule-ls p q": "Policy name required",
		"netprofile create": "Net profile name required", "netprofile rm": "Net profile name required",
		"netprofile inspect": "Net profile name required", "netprofile ls x": more,
		"app-profile create": "Profile name required", "app-profile update": "Profile name required",
		"app-profile rm": "Profile name required", "app-profile ls x": more, "app-profile group-ls": "Profile name required",
		"external-contracts create": "Contracts group name required", "external-contracts rm": "Contracts group name required",
		"external-contracts ls x": more,
		"service create":          "Service name required", "service rm": "Service name required",
		"service inspect": "Service group name required", "service ls x": more,
		"bgp create": "Host name required", "bgp create a b": "Host name required", "bgp rm": "Host name required",
		"bgp inspect": "Host name required", "bgp ls x": more,
		"global info x": more, "global inspect x": more, "global set x": more,
		"aci-gw info x": more, "aci-gw inspect x": more, "aci-gw set x": more,
		"endpoint inspect": "Endpoint name required", "version x": more, "login x": more,
		"net create n1":                           "Subnet is required",
		"net create -s 1.1.1.0/24 -g 1.1.1 n1":    "Invalid gateway - Enter in A.B.C.D format",
		"net create -s 1.1.1.0/24 --g6 zz::zz n1": "Invalid IPv6 gateway ",
	}
	for args, msg := range cases {
		t.Run(args, func(t *testing.T) {
			f := newFake(t, nil)
			words := strings.Fields(args)
			r := f.run(t, words...)
			if r.code != 1 {
				t.Errorf("exit %d", r.code)
			}
			if r.stderr != errLine(msg) {
				t.Errorf("stderr %q", r.stderr)
			}
			oneErrorLine(t, r)
			// the leaf's help follows on stdout
			leaf := words[:2]
			if words[0] == "version" || words[0] == "login" {
				leaf = words[:1]
			}
			help := runNetctl(t, runOpts{}, append(leaf, "--help")...)
			if r.stdout != help.stdout {
				t.Errorf("stdout %q\nwant help %q", r.stdout, help.stdout)
			}
			if reqs := f.requests(); len(reqs) != 0 {
				t.Errorf("requests sent: %q", reqs)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	cases := []struct{ args, msg, helpOf string }{
		{"net ls --bogus", "Incorrect Usage: flag provided but not defined: -bogus", "net ls --help"},
		{"net create -p abc -s 1.1.1.0/24 n1", `Incorrect Usage: invalid value "abc" for flag -pkt-tag: parse error`, "net create --help"},
		{"net create n1 -s", "Incorrect Usage: flag needs an argument: -subnet", "net create --help"},
		{"tenant ls -qj", "Incorrect Usage: flag provided but not defined: -qj", "tenant ls --help"},
		{"policy rule-add -P 1.5 p r", `Incorrect Usage: invalid value "1.5" for flag -port: parse error`, "policy rule-add --help"},
		{"--bogus tenant ls", "Incorrect Usage: flag provided but not defined: -bogus", "--help"},
		{"tenant --bogus", "Incorrect Usage: flag provided but not defined: -bogus", "tenant --help"},
	}
	for _, c := range cases {
		t.Run(c.args, func(t *testing.T) {
			f := newFake(t, nil)
			r := f.run(t, strings.Fields(c.args)...)
			if r.code != 1 || r.stderr != errLine(c.msg) {
				t.Errorf("exit %d stderr %q", r.code, r.stderr)
			}
			help := runNetctl(t, runOpts{}, strings.Fields(c.helpOf)...)
			if r.stdout != help.stdout {
				t.Errorf("stdout %q\nwant %q", r.stdout, help.stdout)
			}
			if len(f.requests()) != 0 {
				t.Errorf("requests sent")
			}
		})
	}
	for _, args := range []string{"bogus", "tenant bogus", "help bogus", "tenant help bogus"} {
		r := runNetctl(t, runOpts{}, strings.Fields(args)...)
		word := "bogus"
		if r.code != 1 || r.stderr != errLine("No help topic for '"+word+"'") || r.stdout != "" {
			t.Errorf("%s: %d %q %q", args, r.code, r.stderr, r.stdout)
		}
	}
}

func TestArgumentsAreNotReordered(t *testing.T) {
	cases := map[string]string{
		"tenant create -- -weird":            `POST /api/v1/tenants/-weird/ {"tenantName":"-weird","link-sets":{}}`,
		"group create n1 -t t1 g1":           `POST /api/v1/endpointGroups/t1:g1/ {"groupName":"g1","networkName":"n1","tenantName":"t1","link-sets":{},"links":{"AppProfile":{},"NetProfile":{},"Network":{},"Tenant":{}}}`,
		"group create -t t1 n1 -p p g1":      `POST /api/v1/endpointGroups/t1:g1/ {"groupName":"g1","networkName":"n1","policies":["p"],"tenantName":"t1","link-sets":{},"links":{"AppProfile":{},"NetProfile":{},"Network":{},"Tenant":{}}}`,
		"group create n1 g1 --policy a -p b": `POST /api/v1/endpointGroups/default:g1/ {"groupName":"g1","networkName":"n1","policies":["a","b"],"tenantName":"default","link-sets":{},"links":{"AppProfile":{},"NetProfile":{},"Network":{},"Tenant":{}}}`,
		"policy rule-rm -t t p -- -1":        "DELETE /api/v1/rules/t:p:-1/",
	}
	for args, want := range cases {
		f := newFake(t, nil)
		r := f.run(t, strings.Fields(args)...)
		if reqs := f.requests(); r.code != 0 || len(reqs) != 1 || reqs[0] != want {
			t.Errorf("%s: exit %d %q reqs %q", args, r.code, r.stderr, reqs)
		}
	}
}

func TestNetmasterErrors(t *testing.T) {
	cases := []struct{ route, msg string }{
		{"500:tenant not found\n", "tenant not found"},
		{"500:boom\ngithub.com/x.y [a.go 1]\n", "boom"},
		{"403:nope", "Access denied!"},
		{"404:404 page not found\n", "Page not found!"},
		{"404:", "Page not found!"},
		{"404:tenant default not found\n", "tenant default not found"},
		{"400:bad", "bad"},
		{"400:", "400 Bad Request"},
		{"409:network in use\n", "network in use"},
		{"201:created", "201 Created"},
		{"503:later", "503 Service Unavailable"},
		{"{not json", "invalid character 'n' looking for beginning of object key string"},
		{"500:", "netmaster answered status 500 with an empty body"},
	}
	for _, c := range cases {
		for _, args := range []string{"tenant ls", "net inspect n1", "net ls"} {
			path := map[string]string{"tenant ls": "/api/v1/tenants/", "net inspect n1": "/api/v1/inspect/networks/default:n1/", "net ls": "/api/v1/tenants/default/"}[args]
			f := newFake(t, map[string]string{"GET " + path: c.route})
			r := f.run(t, strings.Fields(args)...)
			if r.code != 3 || r.stderr != errLine(c.msg) || r.stdout != "" {
				t.Errorf("%s with %q: exit %d stderr %q stdout %q", args, c.route, r.code, r.stderr, r.stdout)
			}
		}
	}
	// POST errors
	f := newFake(t, map[string]string{"POST /api/v1/tenants/x/": "403:no"})
	if r := f.run(t, "tenant", "create", "x"); r.code != 3 || r.stderr != errLine("Access denied!") || r.stdout != "" {
		t.Errorf("post: %+v", r)
	}
	// DELETE 403 is an error, 404 success
	f = newFake(t, map[string]string{"DELETE /api/v1/policys/default:p/": "403:no"})
	if r := f.run(t, "policy", "rm", "p"); r.code != 3 || r.stderr != errLine("Access denied!") || r.stdout != "Deleting policy default:p\n" {
		t.Errorf("delete: %+v", r)
	}
}

func TestUnreachableNetmaster(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	for _, args := range [][]string{{"tenant", "ls"}, {"net", "create", "-s", "1.1.1.0/24", "n"}, {"version"}} {
		r := runNetctl(t, runOpts{env: map[string]string{"NETMASTER": url}}, args...)
		wantCode := 3
		if args[0] == "version" {
			wantCode = 2
		}
		if r.code != wantCode {
			t.Errorf("%v: exit %d", args, r.code)
		}
		oneErrorLine(t, r)
		if !strings.Contains(r.stderr, "cannot reach netmaster at "+url+" (") || !strings.Contains(r.stderr, "connection refused") {
			t.Errorf("%v: %q", args, r.stderr)
		}
	}
	r := runNetctl(t, runOpts{}, "--netmaster", "127.0.0.1:9999", "tenant", "ls")
	if r.code != 1 || r.stderr != errLine(`Error connecting to netmaster: invalid URL "127.0.0.1:9999": must begin with http:// or https://`) {
		t.Errorf("bad scheme: %+v", r)
	}
	r = runNetctl(t, runOpts{}, "--netmaster", "127.0.0.1:9999", "version")
	if r.code != 2 {
		t.Errorf("bad scheme version: %+v", r)
	}
	oneErrorLine(t, r)
}

func TestNetmasterOptionAndEnv(t *testing.T) {
	a := newFake(t, map[string]string{"GET /api/v1/tenants/": `[]`})
	b := newFake(t, map[string]string{"GET /api/v1/tenants/": `[]`})
	// env used when the option is absent
	runNetctl(t, runOpts{env: map[string]string{"NETMASTER": a.URL}}, "tenant", "ls")
	// the option wins over the env
	runNetctl(t, runOpts{env: map[string]string{"NETMASTER": a.URL}}, "--netmaster", b.URL, "tenant", "ls")
	runNetctl(t, runOpts{}, "--netmaster="+b.URL, "tenant", "ls")
	if len(a.requests()) != 1 || len(b.requests()) != 2 {
		t.Errorf("a %q b %q", a.requests(), b.requests())
	}
	// default
	r := runNetctl(t, runOpts{}, "--netmaster", "http://127.0.0.1:1", "tenant", "ls")
	if !strings.Contains(r.stderr, "http://127.0.0.1:1/api/v1/tenants/") {
		t.Errorf("%q", r.stderr)
	}
}

// quietTLSServer is an httptest TLS server that does not log handshake
// failures (they are expected here).
func quietTLSServer(h http.HandlerFunc) *httptest.Server {
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	return srv
}

// serverCA writes the test server's certificate as a CA file for
// --tls-ca-file, so that tests other than TestInsecure verify netmaster's
// certificate as the secure default does.
func serverCA(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestInsecure(t *testing.T) {
	srv := quietTLSServer(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`[]`))
	})
	defer srv.Close()
	r := runNetctl(t, runOpts{}, "--netmaster", srv.URL, "tenant", "ls", "-q")
	if r.code != 3 || !strings.Contains(r.stderr, "certificate") {
		t.Errorf("verify expected to fail: %+v", r)
	}
	oneErrorLine(t, r)
	for _, o := range []runOpts{{env: map[string]string{"INSECURE": "true"}}, {env: map[string]string{"INSECURE": "1"}}} {
		r = runNetctl(t, o, "--netmaster", srv.URL, "tenant", "ls", "-q")
		if r.code != 0 {
			t.Errorf("INSECURE env: %+v", r)
		}
	}
	r = runNetctl(t, runOpts{}, "--insecure", "--netmaster", srv.URL, "tenant", "ls", "-j")
	if r.code != 0 || r.stdout != "[]\n" {
		t.Errorf("--insecure: %+v", r)
	}
	r = runNetctl(t, runOpts{env: map[string]string{"INSECURE": "maybe"}}, "--netmaster", srv.URL, "tenant", "ls")
	if r.code != 3 {
		t.Errorf("unparsable INSECURE must be ignored: %+v", r)
	}
}

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".netctl"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".netctl", "config.json"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

func TestTokenFile(t *testing.T) {
	var tokens []string
	srv := quietTLSServer(func(w http.ResponseWriter, r *http.Request) {
		tokens = append(tokens, r.Header.Get("X-Auth-Token"))
		_, _ = w.Write([]byte(`[]`))
	})
	defer srv.Close()
	home := writeConfig(t, `{"token": "TOKEN123", "other": 1}`)
	r := runNetctl(t, runOpts{home: home}, "--tls-ca-file", serverCA(t, srv), "--netmaster", srv.URL, "tenant", "ls", "-q")
	if r.code != 0 || len(tokens) != 1 || tokens[0] != "TOKEN123" {
		t.Errorf("https: %+v %q", r, tokens)
	}
	// http: the token file does not break the command, and no token is sent
	f := newFake(t, map[string]string{"GET /api/v1/tenants/": `[]`})
	r = runNetctl(t, runOpts{home: home, env: map[string]string{"NETMASTER": f.URL}}, "tenant", "ls", "-q")
	if r.code != 0 || len(f.tokens) != 1 || f.tokens[0] != "" {
		t.Errorf("http: %+v %q", r, f.tokens)
	}
	// a broken file is an error (exit 3)
	home = writeConfig(t, `{"token": `)
	r = runNetctl(t, runOpts{home: home, env: map[string]string{"NETMASTER": f.URL}}, "tenant", "ls")
	if r.code != 3 || !strings.Contains(r.stderr, "error processing netctl config: failed to unmarshal JSON: unexpected end of JSON input") {
		t.Errorf("bad config: %+v", r)
	}
	oneErrorLine(t, r)
	// version never reads the token file
	r = runNetctl(t, runOpts{home: home, env: map[string]string{"NETMASTER": f.URL}}, "version")
	if r.code != 3 || !strings.Contains(r.stderr, "Status 404") {
		t.Errorf("version: %+v", r)
	}
}

func TestLogin(t *testing.T) {
	var bodies []string
	srv := quietTLSServer(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 200)
		k, _ := r.Body.Read(b)
		bodies = append(bodies, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+" "+string(b[:k]))
		switch {
		case strings.Contains(string(b[:k]), `"password":"good"`):
			_, _ = w.Write([]byte(`{"token": "TOKEN123"}`))
		case strings.Contains(string(b[:k]), `"password":"odd"`):
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("try later\n"))
		default:
			w.WriteHeader(http.StatusUnauthorized)
		}
	})
	defer srv.Close()
	home := t.TempDir()
	r := runNetctl(t, runOpts{home: home, stdin: " admin \n", pass: "good"}, "--tls-ca-file", serverCA(t, srv), "--netmaster", srv.URL, "login")
	if r.code != 0 || r.stdout != "Username: Password: \nLogin succeeded.\n" {
		t.Errorf("login: %+v", r)
	}
	if len(bodies) != 1 || bodies[0] != `POST /api/v1/auth_proxy/login/ application/json {"username":"admin","password":"good"}` {
		t.Errorf("request %q", bodies)
	}
	data, err := os.ReadFile(filepath.Join(home, ".netctl", "config.json"))
	if err != nil || string(data) != `{"token": "TOKEN123"}` {
		t.Errorf("config %q %v", data, err)
	}
	if st, _ := os.Stat(filepath.Join(home, ".netctl", "config.json")); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode())
	}
	r = runNetctl(t, runOpts{stdin: "admin\n", pass: "bad"}, "--tls-ca-file", serverCA(t, srv), "--netmaster", srv.URL, "login")
	if r.code != 3 || r.stderr != errLine("Login failed: Bad username or password.") {
		t.Errorf("401: %+v", r)
	}
	r = runNetctl(t, runOpts{stdin: "admin\n", pass: "odd"}, "--tls-ca-file", serverCA(t, srv), "--netmaster", srv.URL, "login")
	if r.code != 3 || r.stderr != errLine("Login failed: unexpected response code (503): try later") {
		t.Errorf("503: %+v", r)
	}
	r = runNetctl(t, runOpts{stdin: "\n"}, "--tls-ca-file", serverCA(t, srv), "--netmaster", srv.URL, "login")
	if r.code != 3 || r.stderr != errLine("you must specify a username") {
		t.Errorf("empty user: %+v", r)
	}
	r = runNetctl(t, runOpts{stdin: ""}, "--tls-ca-file", serverCA(t, srv), "--netmaster", srv.URL, "login")
	if r.code != 4 || r.stderr != errLine("EOF") {
		t.Errorf("EOF: %+v", r)
	}
	r = runNetctl(t, runOpts{stdin: "u\n", passErr: os.ErrInvalid}, "--tls-ca-file", serverCA(t, srv), "--netmaster", srv.URL, "login")
	if r.code != 4 {
		t.Errorf("password error: %+v", r)
	}
	r = runNetctl(t, runOpts{stdin: "u\n", pass: "good"}, "--netmaster", srv.URL, "login")
	if r.code != 4 || !strings.Contains(r.stderr, "certificate") {
		t.Errorf("tls: %+v", r)
	}
	oneErrorLine(t, r)
	r = runNetctl(t, runOpts{}, "--netmaster", "http://x:1", "login")
	help := runNetctl(t, runOpts{}, "login", "--help")
	if r.code != 3 || r.stderr != errLine("login requires a https auth_proxy URL") || r.stdout != help.stdout {
		t.Errorf("http login: %+v", r)
	}
}

func TestTerminalErrorFormat(t *testing.T) {
	var out, errb strings.Builder
	n := App(Options{Stdout: &out, Stderr: &errb, StderrIsTerminal: func() bool { return true },
		Getenv: func(string) string { return "" }})
	if code := n.Run([]string{"netctl", "tenant", "create"}); code != 1 {
		t.Fatal(code)
	}
	want := "\x1b[31mERRO\x1b[0m[0000] Tenant name required                         \n"
	if errb.String() != want {
		t.Errorf("%q", errb.String())
	}
}
