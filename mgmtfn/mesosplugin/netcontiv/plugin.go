// Package netcontiv is the Mesos CNI plugin netcontiv (docs/mesos.md,
// docs/daemons.md §8.5): Mesos' unified containerizer runs it with
// CNI_COMMAND ADD or DEL and its network configuration on stdin, where
// Mesos has put the container's NetworkInfo
// (args["org.apache.mesos"]["network_info"]); the container is placed by
// its io.contiv.* labels and attached by netplugin's Mesos CNI server
// (package mesosplugin) over /run/contiv/contiv-mesos.sock. The binary
// cmd/netcontiv only calls Main.
//
// ADD and DEL are idempotent: a repeated ADD prints the same result, a
// DEL of an attachment netplugin does not know succeeds. Errors are CNI
// error results (exit status 1): the library's codes for bad environment
// (4), configuration (6, 7) and versions (1); 11 "try again later" when
// netplugin cannot be reached; otherwise the code netplugin names, with
// the message prefixed "Contiv:" as in the original.
package netcontiv

import (
	"context"
	"io"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/mgmtfn/k8splugin/cniapi"
	"github.com/contiv/netplugin/mgmtfn/k8splugin/cniplugin"
	"github.com/contiv/netplugin/mgmtfn/mesosplugin"
)

// Versions are the CNI spec versions netcontiv speaks: those Mesos writes
// (its isolator reads 0.2.0-style results) up to 0.3.1. Later versions
// add CHECK, which Mesos never sends.
var Versions = version.PluginSupports("0.1.0", "0.2.0", "0.3.0", "0.3.1")

// DefaultLogFile is the original's log file.
const DefaultLogFile = "/var/log/netcontiv.log"

// API is what the plugin needs of netplugin (cniapi.Client over the Mesos
// socket).
type API interface {
	Post(ctx context.Context, path string, in, out any) error
}

// Plugin carries the verbs. The zero value talks to the socket named in
// the configuration and logs to its log file.
type Plugin struct {
	// Dial returns the API for a socket path; nil means cniapi.NewClient.
	Dial func(socket string) API
	// Log, when set, receives the log instead of the configured file.
	Log io.Writer
	// Timeout bounds one call (cniplugin.DefaultTimeout when 0).
	Timeout time.Duration
}

// Funcs returns the verbs for skel.
func (p *Plugin) Funcs() skel.CNIFuncs {
	return skel.CNIFuncs{Add: p.Add, Del: p.Del}
}

// Main runs the plugin as a CNI binary.
func Main(about string) {
	p := &Plugin{}
	skel.PluginMainFuncs(p.Funcs(), Versions, about)
}

// call is one verb's configuration, request, log and API.
type call struct {
	conf   *mesosplugin.NetConf
	req    mesosplugin.Request
	log    *logrus.Entry
	api    API
	closer io.Closer
}

func (p *Plugin) begin(verb string, args *skel.CmdArgs, needNetNS bool) (*call, error) {
	conf, err := mesosplugin.LoadConf(args.StdinData)
	if err != nil {
		return nil, err
	}
	c := &call{conf: conf}
	var l *logrus.Logger
	l, c.closer = cniplugin.OpenLog(p.Log, conf.LogFile, DefaultLogFile)
	c.log = l.WithFields(logrus.Fields{"NETNS": args.Netns, "cmd": verb, "container": args.ContainerID, "ifname": args.IfName})
	labels, _ := conf.ContivLabels() // checked by LoadConf
	c.req = mesosplugin.Request{IfName: args.IfName, NetNS: args.Netns, ContainerID: args.ContainerID,
		Network: conf.Name, Labels: labels}
	if _, err := c.req.PodAttr(needNetNS); err != nil {
		c.log.WithError(err).Error("bad request")
		c.end()
		return nil, types.NewError(cniapi.CodeFor(err), "Contiv: invalid request", err.Error())
	}
	socket := conf.Socket
	if socket == "" {
		socket = mesosplugin.DefaultSocket
	}
	if p.Dial != nil {
		c.api = p.Dial(socket)
	} else {
		c.api = cniapi.NewClient(socket)
	}
	return c, nil
}

func (c *call) end() {
	if c.closer != nil {
		c.closer.Close()
	}
}

func (p *Plugin) ctx() (context.Context, context.CancelFunc) {
	return cniplugin.CallContext(p.Timeout)
}

// Add attaches the container and prints the result in the
// configuration's version, chained onto prevResult when there is one.
func (p *Plugin) Add(args *skel.CmdArgs) error {
	c, err := p.begin("ADD", args, true)
	if err != nil {
		return err
	}
	defer c.end()
	ctx, cancel := p.ctx()
	defer cancel()
	var reply mesosplugin.Reply
	if err := c.api.Post(ctx, mesosplugin.PathAdd, c.req, &reply); err != nil {
		c.log.WithError(err).Error("ADD failed")
		return cniplugin.CNIError(err, types.ErrTryAgainLater)
	}
	rsp, err := reply.Attachment()
	if err != nil {
		return types.NewError(types.ErrInternal, "Contiv: netplugin's answer", err.Error())
	}
	res, err := cniplugin.BuildResult(c.conf.PrevResult, args, rsp)
	if err != nil {
		c.log.WithError(err).Error("build result")
		return types.NewError(types.ErrInternal, "Contiv: build the result", err.Error())
	}
	c.log.WithFields(logrus.Fields{"endpoint": rsp.EndpointID, "ip": rsp.IPAddress, "labels": c.req.Labels}).Info("ADD done")
	return types.PrintResult(res, c.conf.CNIVersion)
}

// Del detaches the container; an attachment netplugin does not know
// (never made, or already removed) is success.
func (p *Plugin) Del(args *skel.CmdArgs) error {
	c, err := p.begin("DEL", args, false)
	if err != nil {
		return err
	}
	defer c.end()
	ctx, cancel := p.ctx()
	defer cancel()
	if err := c.api.Post(ctx, mesosplugin.PathDel, c.req, nil); err != nil {
		c.log.WithError(err).Error("DEL failed")
		return cniplugin.CNIError(err, types.ErrTryAgainLater)
	}
	c.log.Info("DEL done")
	return nil
}
