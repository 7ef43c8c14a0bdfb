// Package k8splugin is netplugin's Kubernetes front end: the CNI server
// (docs/daemons.md §8.2) that the contivk8s binary calls over
// /run/contiv/contiv-cni.sock in kubernetes mode. It places a pod by its
// labels (LabelSource), attaches it through the agent's attach path (the
// same attach.Attacher the attach API serves, docs/daemons.md §6.9) and
// keeps a record of every attachment on this host for DEL, CHECK and GC
// (docs/k8s.md).
//
// A request that does not decode or validate is answered 400 and changes
// nothing: no record is read or written and the agent is not called.
package k8splugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/api/attach"
	"github.com/contiv/netplugin/mgmtfn/k8splugin/cniapi"
	"github.com/contiv/netplugin/utils/httpserve"
	"github.com/contiv/netplugin/utils/phase"
)

// AttachmentRef identifies an attachment to check and what it was given.
type AttachmentRef struct {
	Tenant, Network string
	ContainerID     string // the attach API's container id
	NetNS, IfName   string
	IPAddress       string // ip/len
	MacAddress      string
}

// Checker verifies that an attachment still works: the endpoint is local,
// and the interface is in the namespace, up, with its address.
type Checker interface {
	CheckAttachment(ctx context.Context, ref AttachmentRef) error
}

// Config is what a Server needs.
type Config struct {
	Attacher attach.Attacher
	Checker  Checker
	// Labels gives pods' labels; nil means RequestLabels.
	Labels LabelSource
	// StateDir holds the attachment records.
	StateDir string
	// Ready answers STATUS: nil when ADD can be served. nil means always.
	Ready func(ctx context.Context) error
	// RepeatAdd makes an ADD of an attachment that exists answer its
	// recorded result (the Mesos front end, mgmtfn/mesosplugin) instead of
	// failing, when it asks for the same placement.
	RepeatAdd bool
	Log       logrus.FieldLogger
	// SweepInterval is how often attachments whose pod network namespace
	// is gone are detached and forgotten (sweepGone); 0 means
	// DefaultSweepInterval, negative turns the sweep off.
	SweepInterval time.Duration
}

// DefaultSweepInterval is Config.SweepInterval's default.
const DefaultSweepInterval = time.Minute

// Server serves the CNI API.
type Server struct {
	cfg   Config
	rec   records
	locks keyLocks
	gc    sync.RWMutex // GC excludes ADD and DEL
	log   logrus.FieldLogger
}

// New returns a server; it touches nothing until it serves a request.
func New(cfg Config) (*Server, error) {
	if cfg.Attacher == nil || cfg.Checker == nil {
		return nil, errors.New("k8splugin: Attacher and Checker are required")
	}
	if cfg.StateDir == "" {
		return nil, errors.New("k8splugin: StateDir is required")
	}
	if cfg.Labels == nil {
		cfg.Labels = RequestLabels{}
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	return &Server{cfg: cfg, rec: records{dir: cfg.StateDir}, locks: keyLocks{m: map[string]*keyLock{}}, log: cfg.Log}, nil
}

// Serve runs the API on the unix socket (directory 0700, socket 0600, a
// stale socket replaced, a live one refused) until ctx ends.
func (s *Server) Serve(ctx context.Context, socket string) error {
	ln, err := attach.Listen(socket)
	if err != nil {
		return fmt.Errorf("CNI server: %w", err)
	}
	return s.ServeListener(ctx, ln)
}

// ServeListener runs the API on ln until ctx ends, sweeping attachments
// whose pod is gone meanwhile (Config.SweepInterval); it closes ln.
func (s *Server) ServeListener(ctx context.Context, ln net.Listener) error {
	if every := s.sweepInterval(); every > 0 {
		sctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.sweepLoop(sctx, every)
		}()
		defer func() {
			stop()
			<-done
		}()
	}
	return ServeListener(ctx, "CNI", ln, s)
}

// ServeSocket serves h, the API called name, on the unix socket
// (directory 0700, socket 0600, a stale socket replaced, a live one
// refused) until ctx ends. The Mesos CNI server uses it too.
func ServeSocket(ctx context.Context, name, socket string, h http.Handler) error {
	ln, err := attach.Listen(socket)
	if err != nil {
		return fmt.Errorf("%s server: %w", name, err)
	}
	return ServeListener(ctx, name, ln, h)
}

// ServeListener serves h on ln until ctx ends; it closes ln.
func ServeListener(ctx context.Context, name string, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if err := httpserve.Serve(ctx, srv, ln); err != nil {
		return fmt.Errorf("serve the %s API on %s: %w", name, ln.Addr(), err)
	}
	return nil
}

// ServeHTTP routes POST /ContivCNI.{AddPod,DelPod,CheckPod,GC,Status}.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var route func(http.ResponseWriter, *http.Request)
	switch r.URL.Path {
	case cniapi.PathAddPod:
		route = s.podRoute("AddPod", true, s.addPod)
	case cniapi.PathDelPod:
		route = s.podRoute("DelPod", false, s.delPod)
	case cniapi.PathCheckPod:
		route = s.podRoute("CheckPod", true, s.checkPod)
	case cniapi.PathGC:
		route = s.gcPods
	case cniapi.PathStatus:
		route = s.status
	default:
		writeJSON(w, http.StatusNotFound, cniapi.RspAddPod{Result: 1, ErrMsg: "no such route: " + r.URL.Path})
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, cniapi.RspAddPod{Result: 1, ErrMsg: "method " + r.Method + " not allowed; use POST"})
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			writeJSON(w, http.StatusUnsupportedMediaType, cniapi.RspAddPod{Result: 1, ErrMsg: "content type " + ct + " is not application/json"})
			return
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, cniapi.MaxBodyBytes)
	route(w, r)
}

// badRequest answers a request that did not decode or validate.
func (s *Server) badRequest(w http.ResponseWriter, op string, err error) {
	code := http.StatusBadRequest
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		code = http.StatusRequestEntityTooLarge
	}
	s.log.WithError(err).Warnf("CNI %s: invalid request", op)
	writeJSON(w, code, cniapi.RspAddPod{Result: 1, ErrMsg: "Invalid request", ErrInfo: "Err: " + err.Error(), Code: cniapi.CodeFor(err)})
}

// Failure is a request the server refused or could not serve: the HTTP
// status, the original's message, the CNI error code and the cause.
type Failure struct {
	Status int
	Msg    string
	Code   uint
	Err    error
}

func (f *Failure) Error() string { return f.Msg + ": " + f.Err.Error() }

// Unwrap gives the cause.
func (f *Failure) Unwrap() error { return f.Err }

func failure(status int, msg string, code uint, err error) *Failure {
	return &Failure{Status: status, Msg: msg, Code: code, Err: err}
}

// fail logs a failure of the work and answers it with the original's
// message.
func (s *Server) fail(w http.ResponseWriter, fields logrus.Fields, f *Failure) {
	s.log.WithFields(fields).WithError(f.Err).Warn(f.Msg)
	writeJSON(w, f.Status, cniapi.RspAddPod{Result: 1, ErrMsg: f.Msg, ErrInfo: "Err: " + f.Err.Error(), Code: f.Code})
}

func endpointContainer(containerID, ifName string) string {
	if ifName == attach.DefaultIfName {
		return containerID
	}
	return containerID + "-" + ifName
}

// podRoute wraps a handler of one pod request: it decodes and checks the
// body (a refusal answers 400 and changes nothing), holds off GC and
// serialises requests for the same attachment (container id, interface).
func (s *Server) podRoute(op string, needNetNS bool, h func(context.Context, cniapi.PodAttr, logrus.Fields) (cniapi.RspAddPod, *Failure)) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := cniapi.DecodePodAttr(r.Body, needNetNS)
		if err != nil {
			s.badRequest(w, op, err)
			return
		}
		fields := podFields(p)
		rsp, f := s.serialised(r.Context(), p, fields, h)
		if f != nil {
			s.fail(w, fields, f)
			return
		}
		writeJSON(w, http.StatusOK, rsp)
	}
}

func podFields(p cniapi.PodAttr) logrus.Fields {
	return logrus.Fields{"pod": p.K8sNameSpace + "/" + p.Name, "container": p.InfraContainerID, "ifname": p.IntfName}
}

// serialised runs h holding off GC and after every other request for the
// same attachment (container id, interface).
func (s *Server) serialised(ctx context.Context, p cniapi.PodAttr, fields logrus.Fields,
	h func(context.Context, cniapi.PodAttr, logrus.Fields) (cniapi.RspAddPod, *Failure)) (cniapi.RspAddPod, *Failure) {
	s.gc.RLock()
	defer s.gc.RUnlock()
	defer s.locks.lock(p.InfraContainerID + "@" + p.IntfName)()
	return h(ctx, p, fields)
}

// Add attaches p as the CNI server's AddPod does (p validated by the
// caller); a front end that speaks another protocol (mgmtfn/mesosplugin)
// calls it directly. A failure is a *Failure, logged here.
func (s *Server) Add(ctx context.Context, p cniapi.PodAttr) (cniapi.RspAddPod, *Failure) {
	return s.logged(ctx, p, s.addPod)
}

// Del detaches p as DelPod does; an attachment the server does not know
// is success.
func (s *Server) Del(ctx context.Context, p cniapi.PodAttr) (cniapi.RspAddPod, *Failure) {
	return s.logged(ctx, p, s.delPod)
}

// logged runs h serialised and logs its failure.
func (s *Server) logged(ctx context.Context, p cniapi.PodAttr,
	h func(context.Context, cniapi.PodAttr, logrus.Fields) (cniapi.RspAddPod, *Failure)) (cniapi.RspAddPod, *Failure) {
	fields := podFields(p)
	rsp, f := s.serialised(ctx, p, fields, h)
	if f != nil {
		s.log.WithFields(fields).WithError(f.Err).Warn(f.Msg)
	}
	return rsp, f
}

func (s *Server) addPod(ctx context.Context, p cniapi.PodAttr, fields logrus.Fields) (cniapi.RspAddPod, *Failure) {
	ctx, steps := phase.With(ctx) // logged with the ADD (docs/scale.md)
	var err error
	var podLabels map[string]string
	inAPI := false // the API server has the pod: NetworkPolicy may select it
	if p.Name != "" && p.K8sNameSpace != "" {
		podLabels, err = s.cfg.Labels.PodLabels(ctx, PodRef{Namespace: p.K8sNameSpace, Name: p.Name, UID: p.PodUID})
		if err != nil && !errors.Is(err, ErrPodNotFound) {
			return cniapi.RspAddPod{}, failure(http.StatusInternalServerError, "Error getting labels", types.ErrTryAgainLater, err)
		}
		inAPI = err == nil
	}
	phase.Mark(ctx, "labels")
	pl := PlacementFrom(podLabels, p.Labels)
	name := p.Name
	if name == "" {
		name = p.InfraContainerID
	}
	areq := attach.Request{Tenant: pl.Tenant, Network: pl.Network, Group: pl.Group,
		ContainerID: endpointContainer(p.InfraContainerID, p.IntfName), Name: name, NetNS: p.NwNameSpace, IfName: p.IntfName}
	if inAPI {
		areq.PodNamespace, areq.PodName = p.K8sNameSpace, p.Name
	}
	if err := areq.Validate(); err != nil {
		return cniapi.RspAddPod{}, failure(http.StatusBadRequest, "Invalid pod placement", types.ErrInvalidNetworkConfig, err)
	}
	fields["tenant"], fields["network"], fields["group"] = pl.Tenant, pl.Network, pl.Group

	old, found, err := s.rec.read(p.InfraContainerID, p.IntfName)
	if err != nil {
		return cniapi.RspAddPod{}, failure(http.StatusInternalServerError, "Error reading the attachment record", types.ErrIOFailure, err)
	}
	if found && old.State == stateAttached {
		if s.cfg.RepeatAdd && old.Tenant == pl.Tenant && old.Network == pl.Network && old.Group == pl.Group && old.NetNS == p.NwNameSpace {
			s.log.WithFields(fields).WithField("endpoint", old.Result.EndpointID).Info("CNI ADD repeated: the recorded result")
			return old.Result, nil
		}
		return cniapi.RspAddPod{}, failure(http.StatusInternalServerError, "Error creating EP", types.ErrInternal,
			fmt.Errorf("the attachment %s@%s already exists (endpoint %s in %s/%s, group %q, netns %s)", p.InfraContainerID, p.IntfName,
				old.Result.EndpointID, old.Tenant, old.Network, old.Group, old.NetNS))
	}
	if found {
		// A half-made attachment (an ADD cut short): undo it first.
		if err := s.detach(ctx, old, old.NetNS); err != nil {
			return cniapi.RspAddPod{}, failure(http.StatusInternalServerError, "Error removing a half-made attachment", types.ErrTryAgainLater, err)
		}
	}
	rec := record{CNINetwork: p.CNINetwork, ContainerID: p.InfraContainerID, IfName: p.IntfName, NetNS: p.NwNameSpace,
		PodName: p.Name, PodNamespace: p.K8sNameSpace, Tenant: pl.Tenant, Network: pl.Network, Group: pl.Group,
		EndpointCtr: areq.ContainerID, State: stateAdding}
	if err := s.rec.write(rec); err != nil {
		return cniapi.RspAddPod{}, failure(http.StatusInternalServerError, "Error writing the attachment record", types.ErrIOFailure, err)
	}
	phase.Mark(ctx, "record")
	res, err := s.cfg.Attacher.Attach(ctx, areq)
	if err != nil {
		// Attach undid its own steps; the record goes too.
		if rerr := s.rec.remove(rec.ContainerID, rec.IfName); rerr != nil {
			s.log.WithFields(fields).WithError(rerr).Warn("remove the record of a failed ADD")
		}
		status, code := http.StatusInternalServerError, types.ErrInternal
		if errors.Is(err, attach.ErrInvalidRequest) {
			status, code = http.StatusBadRequest, types.ErrInvalidNetworkConfig
		}
		return cniapi.RspAddPod{}, failure(status, "Error creating EP", code, err)
	}
	rsp := cniapi.RspAddPod{EndpointID: res.EndpointID, IPAddress: res.IPAddress, IPv6Address: res.IPv6Address,
		MacAddress: res.MacAddress, Gateway: res.Gateway, IPv6Gateway: res.IPv6Gateway, MTU: res.MTU, IfName: res.IfName}
	rec.State, rec.Result = stateAttached, rsp
	if err := s.rec.write(rec); err != nil {
		// Without its record the attachment could not be deleted: undo it.
		if derr := s.detach(context.WithoutCancel(ctx), rec, rec.NetNS); derr != nil {
			s.log.WithFields(fields).WithError(derr).Warn("undo an attachment whose record failed")
		}
		return cniapi.RspAddPod{}, failure(http.StatusInternalServerError, "Error writing the attachment record", types.ErrIOFailure, err)
	}
	phase.Mark(ctx, "record")
	s.log.WithFields(fields).WithFields(logrus.Fields{"endpoint": rsp.EndpointID, "ip": rsp.IPAddress}).WithFields(steps.Fields()).Info("CNI ADD done")
	return rsp, nil
}

// detach removes the attachment's endpoint and then its record.
func (s *Server) detach(ctx context.Context, rec record, netns string) error {
	if err := s.cfg.Attacher.Detach(ctx, attach.DetachRequest{Tenant: rec.Tenant, Network: rec.Network,
		ContainerID: rec.EndpointCtr, NetNS: netns, IfName: rec.IfName,
		PodNamespace: rec.PodNamespace, PodName: rec.PodName}); err != nil {
		return err
	}
	return s.rec.remove(rec.ContainerID, rec.IfName)
}

func (s *Server) delPod(ctx context.Context, p cniapi.PodAttr, fields logrus.Fields) (cniapi.RspAddPod, *Failure) {
	rec, found, err := s.rec.read(p.InfraContainerID, p.IntfName)
	if err != nil {
		return cniapi.RspAddPod{}, failure(http.StatusInternalServerError, "Error reading the attachment record", types.ErrIOFailure, err)
	}
	if !found {
		s.log.WithFields(fields).Info("CNI DEL of an unknown attachment: nothing to do")
		return cniapi.RspAddPod{}, nil
	}
	if err := s.detach(ctx, rec, p.NwNameSpace); err != nil {
		return cniapi.RspAddPod{}, failure(http.StatusInternalServerError, "Error deleting EP", types.ErrTryAgainLater, err)
	}
	s.log.WithFields(fields).WithField("endpoint", rec.Result.EndpointID).Info("CNI DEL done")
	return cniapi.RspAddPod{EndpointID: rec.Result.EndpointID}, nil
}

func (s *Server) checkPod(ctx context.Context, p cniapi.PodAttr, _ logrus.Fields) (cniapi.RspAddPod, *Failure) {
	rec, found, err := s.rec.read(p.InfraContainerID, p.IntfName)
	if err != nil {
		return cniapi.RspAddPod{}, failure(http.StatusInternalServerError, "Error reading the attachment record", types.ErrIOFailure, err)
	}
	if !found || rec.State != stateAttached {
		return cniapi.RspAddPod{}, failure(http.StatusNotFound, "Unknown attachment", types.ErrUnknownContainer,
			fmt.Errorf("no attachment %s@%s on this host", p.InfraContainerID, p.IntfName))
	}
	err = s.cfg.Checker.CheckAttachment(ctx, AttachmentRef{Tenant: rec.Tenant, Network: rec.Network,
		ContainerID: rec.EndpointCtr, NetNS: p.NwNameSpace, IfName: p.IntfName,
		IPAddress: rec.Result.IPAddress, MacAddress: rec.Result.MacAddress})
	if err != nil {
		return cniapi.RspAddPod{}, failure(http.StatusInternalServerError, "Attachment is broken", types.ErrInternal, err)
	}
	return rec.Result, nil
}

func (s *Server) sweepInterval() time.Duration {
	if s.cfg.SweepInterval == 0 {
		return DefaultSweepInterval
	}
	return s.cfg.SweepInterval
}

func (s *Server) sweepLoop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.SweepGone(ctx); err != nil && ctx.Err() == nil {
			s.log.WithError(err).Warn("sweep of attachments whose pod is gone incomplete; retrying later")
		}
	}
}

// SweepGone detaches and forgets every attachment whose pod network
// namespace no longer exists: its pod is gone, and no DEL will come (a
// runtime that fails to tear a sandbox's network down while it cleans up
// a failed RunPodSandbox drops the sandbox anyway; containerd 1.6 does,
// and sends no CNI GC). A namespace is only taken as gone when its folder
// is visible here, so a netplugin that cannot see the runtime's namespaces
// removes nothing. It returns how many it removed.
func (s *Server) SweepGone(ctx context.Context) (int, error) {
	recs, err := s.rec.list()
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, rec := range recs {
		if !netnsGone(rec.NetNS) {
			continue
		}
		// Same order as ADD and DEL: the GC lock, then the attachment's.
		s.gc.RLock()
		unlock := s.locks.lock(rec.ContainerID + "@" + rec.IfName)
		cur, found, err := s.rec.read(rec.ContainerID, rec.IfName)
		if err == nil && found && netnsGone(cur.NetNS) {
			err = s.detach(ctx, cur, "")
			if err == nil {
				n++
				s.log.WithFields(logrus.Fields{"container": cur.ContainerID, "ifname": cur.IfName, "netns": cur.NetNS,
					"pod": cur.PodNamespace + "/" + cur.PodName}).Info("detached an attachment whose pod network namespace is gone")
			}
		}
		unlock()
		s.gc.RUnlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s@%s: %w", rec.ContainerID, rec.IfName, err))
		}
	}
	return n, errors.Join(errs...)
}

// netnsGone reports whether the namespace path p does not exist while
// its folder does.
func netnsGone(p string) bool {
	if p == "" || !filepath.IsAbs(p) {
		return false
	}
	if fi, err := os.Stat(filepath.Dir(p)); err != nil || !fi.IsDir() {
		return false
	}
	_, err := os.Lstat(p)
	return errors.Is(err, fs.ErrNotExist)
}

func (s *Server) gcPods(w http.ResponseWriter, r *http.Request) {
	g, err := cniapi.DecodeGCRequest(r.Body)
	if err != nil {
		s.badRequest(w, "GC", err)
		return
	}
	s.gc.Lock()
	defer s.gc.Unlock()
	valid := map[cniapi.Attachment]bool{}
	for _, a := range g.Valid {
		valid[a] = true
	}
	recs, lerr := s.rec.list()
	rsp := cniapi.RspGC{Removed: []cniapi.Attachment{}}
	var errs []error
	if lerr != nil {
		errs = append(errs, lerr)
	}
	for _, rec := range recs {
		if rec.CNINetwork != g.CNINetwork || valid[rec.attachment()] {
			continue
		}
		if err := s.detach(r.Context(), rec, rec.NetNS); err != nil {
			errs = append(errs, fmt.Errorf("%s@%s: %w", rec.ContainerID, rec.IfName, err))
			continue
		}
		rsp.Removed = append(rsp.Removed, rec.attachment())
	}
	s.log.WithFields(logrus.Fields{"network": g.CNINetwork, "valid": len(g.Valid), "removed": len(rsp.Removed)}).Info("CNI GC done")
	if err := errors.Join(errs...); err != nil {
		rsp.ErrMsg = err.Error()
		writeJSON(w, http.StatusInternalServerError, rsp)
		return
	}
	writeJSON(w, http.StatusOK, rsp)
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(r.Context()); err != nil {
			writeJSON(w, http.StatusInternalServerError, cniapi.RspStatus{ErrMsg: "Not ready: " + err.Error(), Code: cniapi.ErrPluginNotAvailable})
			return
		}
	}
	writeJSON(w, http.StatusOK, cniapi.RspStatus{})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"result":1,"errmsg":"encode answer"}`)
	}
	_, _ = w.Write(append(b, '\n'))
}

// keyLocks serialises requests per attachment.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	mu sync.Mutex
	n  int
}

// lock takes key's lock and returns its release.
func (k *keyLocks) lock(key string) func() {
	k.mu.Lock()
	l := k.m[key]
	if l == nil {
		l = &keyLock{}
		k.m[key] = l
	}
	l.n++
	k.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		if l.n--; l.n == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
