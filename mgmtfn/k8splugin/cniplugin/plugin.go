// Package cniplugin is the contivk8s CNI plugin (docs/daemons.md §8.3):
// the CNI verbs ADD, DEL, CHECK, GC, STATUS and VERSION for spec versions
// 0.3.1 to 1.1.0, dispatched by the CNI library's skel and answered by
// netplugin's CNI server over its unix socket (package cniapi). The binary
// cmd/contivk8s only calls Main.
//
// Errors are CNI error results: the library's codes for bad environment
// (4), configuration (6, 7) and versions (1); 11 "try again later" when
// netplugin cannot be reached for ADD, DEL, CHECK or GC, 50 "not
// available" for STATUS, and otherwise the code the server names or 999,
// with the message prefixed "Contiv:" as in the original.
package cniplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/mgmtfn/k8splugin/cniapi"
	cniversion "github.com/contiv/netplugin/utils/version"
)

// Versions are the CNI spec versions contivk8s speaks.
var Versions = version.PluginSupports("0.3.1", "0.4.0", "1.0.0", "1.1.0")

// DefaultLogFile is the original's log file.
const DefaultLogFile = "/var/log/contivk8s.log"

// DefaultTimeout bounds one call to netplugin.
const DefaultTimeout = 2 * time.Minute

// Label keys the server maps to tenant, network and group (docs/daemons.md
// §8.2), and the CNI_ARGS keys that carry them.
const (
	LabelTenant  = "io.contiv.tenant"
	LabelNetwork = "io.contiv.network"
	LabelGroup   = "io.contiv.net-group"
)

// NetConf is the plugin's configuration (a CNI network configuration or
// one entry of a configuration list):
//
//	{"cniVersion":"1.0.0","name":"contiv-net","type":"contivk8s"}
//
// with optional "socket" (netplugin's CNI socket, default
// /run/contiv/contiv-cni.sock), "logFile" (default
// /var/log/contivk8s.log, "" or "-" for standard error) and the
// conventional "args":{"cni":{"labels":[{"key":…,"value":…}]}}.
type NetConf struct {
	types.PluginConf
	Socket  string   `json:"socket,omitempty"`
	LogFile *string  `json:"logFile,omitempty"`
	Args    *netArgs `json:"args,omitempty"`
}

type netArgs struct {
	CNI *struct {
		Labels []struct {
			Key   string `json:"key"`
			Value string `json:"value"`
		} `json:"labels,omitempty"`
	} `json:"cni,omitempty"`
}

// PodArgs are the CNI_ARGS keys read: the pod identity the kubelet's
// runtime sends, and the contiv labels (for runtimes and tests without an
// API server). Unknown keys are refused unless IgnoreUnknown=1 is given.
type PodArgs struct {
	types.CommonArgs
	K8S_POD_NAME               types.UnmarshallableString //nolint:revive // CNI_ARGS key
	K8S_POD_NAMESPACE          types.UnmarshallableString //nolint:revive
	K8S_POD_INFRA_CONTAINER_ID types.UnmarshallableString //nolint:revive
	K8S_POD_UID                types.UnmarshallableString //nolint:revive
	CONTIV_TENANT              types.UnmarshallableString //nolint:revive
	CONTIV_NETWORK             types.UnmarshallableString //nolint:revive
	CONTIV_NET_GROUP           types.UnmarshallableString //nolint:revive
}

// API is what the plugin needs of netplugin (cniapi.Client).
type API interface {
	AddPod(ctx context.Context, p cniapi.PodAttr) (cniapi.RspAddPod, error)
	DelPod(ctx context.Context, p cniapi.PodAttr) error
	CheckPod(ctx context.Context, p cniapi.PodAttr) (cniapi.RspAddPod, error)
	GC(ctx context.Context, g cniapi.GCRequest) (cniapi.RspGC, error)
	Status(ctx context.Context) error
}

// Plugin carries the verbs. The zero value talks to the socket named in
// the configuration and logs to its log file.
type Plugin struct {
	// Dial returns the API for a socket path; nil means cniapi.NewClient.
	Dial func(socket string) API
	// Log, when set, receives the log instead of the configured file.
	Log io.Writer
	// Timeout bounds one call (DefaultTimeout when 0).
	Timeout time.Duration
}

// Funcs returns the verbs for skel.
func (p *Plugin) Funcs() skel.CNIFuncs {
	return skel.CNIFuncs{Add: p.Add, Del: p.Del, Check: p.Check, GC: p.GC, Status: p.Status}
}

// RunBinary is the main of a CNI binary (contivk8s, netcontiv): with the
// one argument "-version" or "--version" it prints the build stamped into
// utils/version, like the daemons' --version; otherwise it calls run with
// the "about" text, name and version.
func RunBinary(name string, run func(about string)) {
	v := cniversion.Get()
	if len(os.Args) == 2 && (os.Args[1] == "-version" || os.Args[1] == "--version") {
		fmt.Print(v.Lines())
		return
	}
	about := name
	if v.Version != "" {
		about += " " + v.Version
	}
	run(about)
}

// Main runs the plugin as a CNI binary (exit status 1 and an error result
// on stdout on failure).
func Main(about string) {
	p := &Plugin{}
	skel.PluginMainFuncs(p.Funcs(), Versions, about)
}

// call is one verb's context: configuration, log and API.
type call struct {
	conf   *NetConf
	log    *logrus.Entry
	api    API
	socket string
	closer io.Closer
}

func (p *Plugin) begin(verb string, args *skel.CmdArgs) (*call, error) {
	conf, err := LoadConf(args.StdinData)
	if err != nil {
		return nil, err
	}
	c := &call{conf: conf, socket: conf.Socket}
	if c.socket == "" {
		c.socket = cniapi.DefaultSocket
	}
	var l *logrus.Logger
	l, c.closer = OpenLog(p.Log, conf.LogFile, DefaultLogFile)
	c.log = l.WithFields(logrus.Fields{"NETNS": args.Netns, "cmd": verb, "container": args.ContainerID, "ifname": args.IfName})
	if p.Dial != nil {
		c.api = p.Dial(c.socket)
	} else {
		c.api = cniapi.NewClient(c.socket)
	}
	return c, nil
}

// OpenLog returns a CNI binary's logger: to w when it is set, else to
// standard error when logFile is "" or "-", else appended to logFile (def
// when nil; standard error when it cannot be opened). The closer, when not
// nil, closes the file.
func OpenLog(w io.Writer, logFile *string, def string) (*logrus.Logger, io.Closer) {
	l := logrus.New()
	switch {
	case w != nil:
		l.SetOutput(w)
	case logFile != nil && (*logFile == "" || *logFile == "-"):
		l.SetOutput(os.Stderr)
	default:
		path := def
		if logFile != nil {
			path = *logFile
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			l.SetOutput(os.Stderr)
			return l, nil
		}
		l.SetOutput(f)
		return l, f
	}
	return l, nil
}

func (c *call) end() {
	if c.closer != nil {
		c.closer.Close()
	}
}

func (p *Plugin) ctx() (context.Context, context.CancelFunc) {
	return CallContext(p.Timeout)
}

// CallContext bounds one call of a CNI binary to netplugin: by t, or
// DefaultTimeout when t is 0.
func CallContext(t time.Duration) (context.Context, context.CancelFunc) {
	if t == 0 {
		t = DefaultTimeout
	}
	return context.WithTimeout(context.Background(), t)
}

// LoadConf parses and checks the configuration on stdin, with its
// prevResult when there is one.
func LoadConf(data []byte) (*NetConf, error) {
	conf := &NetConf{}
	if err := DecodeConf(data, conf, &conf.PluginConf, &conf.Socket); err != nil {
		return nil, err
	}
	return conf, nil
}

// DecodeConf decodes a configuration into conf, whose embedded
// types.PluginConf is pc and "socket" member socket: the socket must be
// an absolute path when given, and prevResult is parsed when present.
// Errors are CNI errors.
func DecodeConf(data []byte, conf any, pc *types.PluginConf, socket *string) error {
	if err := json.Unmarshal(data, conf); err != nil {
		return types.NewError(types.ErrDecodingFailure, "Contiv: parse the network configuration", err.Error())
	}
	if *socket != "" && !filepath.IsAbs(*socket) {
		return types.NewError(types.ErrInvalidNetworkConfig, "Contiv: invalid network configuration",
			fmt.Sprintf("\"socket\" %q is not an absolute path", *socket))
	}
	if pc.RawPrevResult != nil {
		if err := version.ParsePrevResult(pc); err != nil {
			return types.NewError(types.ErrDecodingFailure, "Contiv: parse prevResult", err.Error())
		}
	}
	return nil
}

// podAttr builds the request from the environment, CNI_ARGS and the
// configuration's labels.
func podAttr(args *skel.CmdArgs, conf *NetConf) (cniapi.PodAttr, error) {
	var pa PodArgs
	if err := types.LoadArgs(args.Args, &pa); err != nil {
		return cniapi.PodAttr{}, types.NewError(types.ErrInvalidEnvironmentVariables, "Contiv: invalid CNI_ARGS", err.Error())
	}
	attr := cniapi.PodAttr{
		Name: string(pa.K8S_POD_NAME), K8sNameSpace: string(pa.K8S_POD_NAMESPACE), PodUID: string(pa.K8S_POD_UID),
		InfraContainerID: args.ContainerID, NwNameSpace: args.Netns, IntfName: args.IfName, CNINetwork: conf.Name,
	}
	if id := string(pa.K8S_POD_INFRA_CONTAINER_ID); id != "" && id != args.ContainerID {
		return cniapi.PodAttr{}, types.NewError(types.ErrInvalidEnvironmentVariables, "Contiv: invalid CNI_ARGS",
			fmt.Sprintf("K8S_POD_INFRA_CONTAINER_ID %q differs from CNI_CONTAINERID %q", id, args.ContainerID))
	}
	labels := map[string]string{}
	if conf.Args != nil && conf.Args.CNI != nil {
		for _, l := range conf.Args.CNI.Labels {
			labels[l.Key] = l.Value
		}
	}
	for k, v := range map[string]types.UnmarshallableString{LabelTenant: pa.CONTIV_TENANT, LabelNetwork: pa.CONTIV_NETWORK, LabelGroup: pa.CONTIV_NET_GROUP} {
		if v != "" {
			labels[k] = string(v)
		}
	}
	if len(labels) > 0 {
		attr.Labels = labels
	}
	needNetNS := args.Netns != ""
	if err := attr.Validate(needNetNS); err != nil {
		return cniapi.PodAttr{}, types.NewError(cniapi.CodeFor(err), "Contiv: invalid request", err.Error())
	}
	return attr, nil
}

// CNIError turns a failure of the API into a CNI error. unavailable is the
// code used when netplugin cannot be reached. A server message that has
// the "Contiv:" prefix already keeps it once.
func CNIError(err error, unavailable uint) error {
	var se *cniapi.ServerError
	switch {
	case errors.As(err, &se):
		code := se.Code
		if code == 0 {
			code = types.ErrInternal
		}
		msg := se.Msg
		if !strings.HasPrefix(msg, "Contiv:") {
			msg = "Contiv:" + msg
		}
		return types.NewError(code, msg, se.Details)
	case errors.Is(err, cniapi.ErrUnavailable):
		return types.NewError(unavailable, "Contiv: netplugin's CNI server is not reachable", err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return types.NewError(types.ErrTryAgainLater, "Contiv: netplugin did not answer in time", err.Error())
	}
	return types.NewError(types.ErrInternal, "Contiv: "+err.Error(), "")
}

// beginPod is begin followed by the pod's attributes from args; a request
// refused there is logged and its call ended.
func (p *Plugin) beginPod(verb string, args *skel.CmdArgs) (*call, cniapi.PodAttr, error) {
	c, err := p.begin(verb, args)
	if err != nil {
		return nil, cniapi.PodAttr{}, err
	}
	attr, err := podAttr(args, c.conf)
	if err != nil {
		c.log.WithError(err).Error("bad request")
		c.end()
		return nil, cniapi.PodAttr{}, err
	}
	return c, attr, nil
}

// Add attaches the container and prints the result, chained onto
// prevResult when there is one.
func (p *Plugin) Add(args *skel.CmdArgs) error {
	t0 := time.Now()
	c, attr, err := p.beginPod("ADD", args)
	if err != nil {
		return err
	}
	defer c.end()
	ctx, cancel := p.ctx()
	defer cancel()
	t1 := time.Now()
	rsp, err := c.api.AddPod(ctx, attr)
	tCall := time.Since(t1)
	if err != nil {
		c.log.WithError(err).Error("AddPod failed")
		return CNIError(err, types.ErrTryAgainLater)
	}
	res, err := BuildResult(c.conf.PrevResult, args, rsp)
	if err != nil {
		c.log.WithError(err).Error("build result")
		return types.NewError(types.ErrInternal, "Contiv: build the result", err.Error())
	}
	// The time in netplugin and the plugin's own (docs/scale.md).
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()/10) / 100 }
	c.log.WithFields(logrus.Fields{"endpoint": rsp.EndpointID, "ip": rsp.IPAddress,
		"phase.addpod": ms(tCall), "phase.plugin": ms(time.Since(t0) - tCall)}).Info("ADD done")
	return types.PrintResult(res, c.conf.CNIVersion)
}

// BuildResult adds the attachment's interface, addresses and default
// routes to prevResult (or to an empty result when it is nil). The Mesos
// CNI binary (mgmtfn/mesosplugin/netcontiv) builds its result with it too.
func BuildResult(prevResult types.Result, args *skel.CmdArgs, rsp cniapi.RspAddPod) (*current.Result, error) {
	res := &current.Result{CNIVersion: current.ImplementedSpecVersion}
	if prevResult != nil {
		prev, err := current.NewResultFromResult(prevResult)
		if err != nil {
			return nil, fmt.Errorf("convert prevResult: %w", err)
		}
		res = prev
	}
	ifName := rsp.IfName
	if ifName == "" {
		ifName = args.IfName
	}
	idx := len(res.Interfaces)
	res.Interfaces = append(res.Interfaces, &current.Interface{Name: ifName, Mac: rsp.MacAddress, Mtu: rsp.MTU, Sandbox: args.Netns})
	for _, a := range []struct{ addr, gw string }{{rsp.IPAddress, rsp.Gateway}, {rsp.IPv6Address, rsp.IPv6Gateway}} {
		if a.addr == "" {
			continue
		}
		ip, ipnet, err := net.ParseCIDR(a.addr)
		if err != nil {
			return nil, fmt.Errorf("netplugin answered a bad address %q: %w", a.addr, err)
		}
		ipc := &current.IPConfig{Address: net.IPNet{IP: ip, Mask: ipnet.Mask}, Interface: current.Int(idx)}
		if a.gw != "" {
			gw := net.ParseIP(a.gw)
			if gw == nil {
				return nil, fmt.Errorf("netplugin answered a bad gateway %q", a.gw)
			}
			ipc.Gateway = gw
			dst := net.IPNet{IP: net.IPv4zero, Mask: net.CIDRMask(0, 32)}
			if ip.To4() == nil {
				dst = net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}
			}
			res.Routes = append(res.Routes, &types.Route{Dst: dst, GW: gw})
		}
		res.IPs = append(res.IPs, ipc)
	}
	if len(res.IPs) == 0 {
		return nil, errors.New("netplugin answered no address")
	}
	return res, nil
}

// Del detaches the container; an attachment netplugin does not know (never
// made, half made, or already removed) is success.
func (p *Plugin) Del(args *skel.CmdArgs) error {
	c, attr, err := p.beginPod("DEL", args)
	if err != nil {
		return err
	}
	defer c.end()
	ctx, cancel := p.ctx()
	defer cancel()
	if err := c.api.DelPod(ctx, attr); err != nil {
		c.log.WithError(err).Error("DelPod failed")
		return CNIError(err, types.ErrTryAgainLater)
	}
	c.log.Info("DEL done")
	return nil
}

// Check asks netplugin to verify the attachment (endpoint, port, link and
// address in the namespace) and checks that prevResult holds the address
// netplugin gave.
func (p *Plugin) Check(args *skel.CmdArgs) error {
	c, err := p.begin("CHECK", args)
	if err != nil {
		return err
	}
	defer c.end()
	if c.conf.PrevResult == nil {
		return types.NewError(types.ErrInvalidNetworkConfig, "Contiv: CHECK needs prevResult", "the configuration has no prevResult")
	}
	attr, err := podAttr(args, c.conf)
	if err != nil {
		return err
	}
	ctx, cancel := p.ctx()
	defer cancel()
	rsp, err := c.api.CheckPod(ctx, attr)
	if err != nil {
		c.log.WithError(err).Error("CheckPod failed")
		return CNIError(err, types.ErrTryAgainLater)
	}
	prev, err := current.NewResultFromResult(c.conf.PrevResult)
	if err != nil {
		return types.NewError(types.ErrDecodingFailure, "Contiv: convert prevResult", err.Error())
	}
	for _, want := range []string{rsp.IPAddress, rsp.IPv6Address} {
		if want == "" {
			continue
		}
		found := false
		for _, ipc := range prev.IPs {
			if ipc.Address.String() == want {
				found = true
			}
		}
		if !found {
			return types.NewError(types.ErrInternal, "Contiv: address mismatch",
				fmt.Sprintf("netplugin holds %s for this attachment, prevResult does not list it", want))
		}
	}
	c.log.Info("CHECK done")
	return nil
}

// GC removes every attachment of this network on this host that is not
// in cni.dev/valid-attachments.
func (p *Plugin) GC(args *skel.CmdArgs) error {
	c, err := p.begin("GC", args)
	if err != nil {
		return err
	}
	defer c.end()
	req := cniapi.GCRequest{CNINetwork: c.conf.Name, Valid: []cniapi.Attachment{}}
	for _, a := range c.conf.ValidAttachments {
		req.Valid = append(req.Valid, cniapi.Attachment{ContainerID: a.ContainerID, IfName: a.IfName})
	}
	if err := req.Validate(); err != nil {
		return types.NewError(cniapi.CodeFor(err), "Contiv: invalid request", err.Error())
	}
	ctx, cancel := p.ctx()
	defer cancel()
	rsp, err := c.api.GC(ctx, req)
	for _, a := range rsp.Removed {
		c.log.WithField("removed", a).Info("GC")
	}
	if err != nil {
		c.log.WithError(err).Error("GC failed")
		return CNIError(err, types.ErrTryAgainLater)
	}
	return nil
}

// Status succeeds when netplugin can serve ADD; otherwise it answers code
// 50 (plugin not available).
func (p *Plugin) Status(args *skel.CmdArgs) error {
	c, err := p.begin("STATUS", args)
	if err != nil {
		return err
	}
	defer c.end()
	ctx, cancel := p.ctx()
	defer cancel()
	if err := c.api.Status(ctx); err != nil {
		c.log.WithError(err).Warn("STATUS: not available")
		var se *cniapi.ServerError
		if errors.As(err, &se) {
			if se.Code == 0 {
				se.Code = cniapi.ErrPluginNotAvailable
			}
			return CNIError(se, 0)
		}
		return CNIError(err, cniapi.ErrPluginNotAvailable)
	}
	return nil
}
