// Command contiv-certs makes the certificates of a Contiv cluster's ofnet
// RPC (docs/security.md, "Certificates and roles"):
//
//	contiv-certs ca     --dir DIR                              # DIR/ca.pem, DIR/ca-key.pem
//	contiv-certs master --dir DIR --ip 10.0.0.1 [--name N]     # DIR/master.pem, DIR/master-key.pem
//	contiv-certs agent  --dir DIR --host node1 --ip 10.0.0.11 --ip 10.1.0.11
//
// master and agent sign with DIR/ca.pem and DIR/ca-key.pem (or --ca-cert,
// --ca-key). The agent's --host must be the host name netplugin runs with
// (--host), and --ip every address it serves the RPC on (control and VTEP).
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/contiv/netplugin/utils/certgen"
	"github.com/contiv/netplugin/utils/tlsutil"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "contiv-certs:", err)
		os.Exit(1)
	}
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

const usage = "usage: contiv-certs ca|master|agent|client --dir DIR [--host H] [--ip IP]... [--dns NAME]... [--name N] [--days D]"

func run(args []string, out io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%s", usage)
	}
	cmd := args[0]
	fs := flag.NewFlagSet("contiv-certs "+cmd, flag.ContinueOnError)
	dir := fs.String("dir", ".", "output directory (and where ca.pem, ca-key.pem are)")
	caCert := fs.String("ca-cert", "", "CA certificate (default DIR/ca.pem)")
	caKey := fs.String("ca-key", "", "CA key (default DIR/ca-key.pem)")
	host := fs.String("host", "", "agent: the host name netplugin runs with (--host)")
	name := fs.String("name", "", "file name without .pem (default: the role, or agent-<host>)")
	days := fs.Int("days", 0, "validity in days (default 365; the CA 3650)")
	var ips, dns listFlag
	fs.Var(&ips, "ip", "an address the certificate serves on (repeat)")
	fs.Var(&dns, "dns", "a DNS name the certificate serves on (repeat)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	validity := time.Duration(*days) * 24 * time.Hour
	if cmd == "ca" {
		ca, err := certgen.NewCA("contiv CA", validity)
		if err != nil {
			return err
		}
		f, err := certgen.WriteCA(*dir, ca)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, f.Cert, f.Key)
		return nil
	}
	if *caCert == "" {
		*caCert = filepath.Join(*dir, "ca.pem")
	}
	if *caKey == "" {
		*caKey = filepath.Join(*dir, "ca-key.pem")
	}
	ca, err := certgen.LoadCA(*caCert, *caKey)
	if err != nil {
		return err
	}
	req := certgen.Request{Host: *host, DNSNames: dns, Validity: validity}
	for _, s := range ips {
		ip := net.ParseIP(s)
		if ip == nil {
			return fmt.Errorf("--ip %q is not an IP address", s)
		}
		req.IPs = append(req.IPs, ip)
	}
	switch cmd {
	case "master":
		req.Role = tlsutil.RoleMaster
		if *name == "" {
			*name = "master"
		}
	case "agent":
		req.Role = tlsutil.RoleAgent
		if *host == "" {
			return fmt.Errorf("agent: --host is required")
		}
		if *name == "" {
			*name = "agent-" + *host
		}
	case "client":
		if *name == "" {
			*name = "client"
		}
		req.CommonName = *name
	default:
		return fmt.Errorf("unknown command %q; %s", cmd, usage)
	}
	p, err := ca.Issue(req)
	if err != nil {
		return err
	}
	f, err := certgen.WritePair(*dir, *name, p)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, f.Cert, f.Key)
	return nil
}
