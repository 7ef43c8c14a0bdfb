package netctl

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli"

	"github.com/contiv/netplugin/api/trace"
	"github.com/contiv/netplugin/utils/problem"
)

// traceCommand is "netctl trace": where does a packet from an endpoint go
// (docs/operations.md, "Packet trace"). Beyond the original: listed in the
// application help after the original's lines (docs/compat.md).
func (n *Netctl) traceCommand() cli.Command {
	return cli.Command{
		Name:      "trace",
		Usage:     "Trace a packet from an endpoint through its host's flow tables",
		ArgsUsage: "<endpoint> <destination address>",
		Flags: []cli.Flag{
			cli.StringFlag{Name: "proto, p", Value: "tcp", Usage: "protocol: tcp, udp or icmp"},
			cli.IntFlag{Name: "port", Value: 80, Usage: "destination port (tcp, udp)"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error {
			if err := n.needArgs(c, 2, "Endpoint and destination address required"); err != nil {
				return err
			}
			return n.trace(c)
		},
	}
}

func (n *Netctl) trace(c *cli.Context) error {
	if !strings.HasPrefix(n.netmaster, "http://") && !strings.HasPrefix(n.netmaster, "https://") {
		return fail(exitUsage, "Error connecting to netmaster: invalid URL "+strconv.Quote(n.netmaster))
	}
	q := url.Values{}
	q.Set("endpoint", c.Args().Get(0))
	q.Set("dst", c.Args().Get(1))
	proto := strings.ToLower(c.String("proto"))
	q.Set("proto", proto)
	if proto != "icmp" {
		q.Set("port", strconv.Itoa(c.Int("port")))
	}
	req, err := http.NewRequest(http.MethodGet, n.netmaster+"/trace?"+q.Encode(), nil)
	if err != nil {
		return fail(exitUsage, "Error connecting to netmaster: "+err.Error())
	}
	req.Header.Set("Accept", problem.Accept)
	resp, err := n.newHTTPClient().Do(req)
	if err != nil {
		return fail(exitInvalid, n.describe(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fail(exitInvalid, n.describe(err))
	}
	if resp.StatusCode != http.StatusOK {
		if d, ok := problem.Parse(resp.Header, resp.StatusCode, body); ok {
			return fail(exitInvalid, d.Error())
		}
		return fail(exitInvalid, strings.TrimSpace(string(body)))
	}
	var res trace.Result
	if err := json.Unmarshal(body, &res); err != nil {
		return fail(exitInvalid, "trace answer: "+err.Error())
	}
	if c.Bool("json") {
		return writeJSON(n.opts.Stdout, res)
	}
	printTrace(n.opts.Stdout, res)
	return nil
}

// printTrace writes the human form of a trace.
func printTrace(w io.Writer, r trace.Result) {
	fmt.Fprintf(w, "Endpoint: %s on host %s (bridge %s, port %d)\n", r.Endpoint, r.Host, r.Bridge, r.InPort)
	fmt.Fprintf(w, "Packet:   %s\n", r.Packet)
	fmt.Fprintln(w, "Tables:")
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, h := range r.Hops {
		if h.Bridge != r.Bridge {
			continue
		}
		what := h.Object
		if h.NoMatch {
			what = "no match"
		} else if what == "" {
			what = h.Match
		}
		fmt.Fprintf(tw, "  %d\t%s\tpriority %d\t%s\t%s\n", h.Table, h.TableName, h.Priority, what, strings.Join(h.Actions, "; "))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "Decided:  %s\n", r.DecidedBy)
	fmt.Fprintf(w, "Result:   %s\n", r.Summary)
}
