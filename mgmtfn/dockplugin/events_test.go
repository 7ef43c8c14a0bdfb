package dockplugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

type sink struct {
	mu  sync.Mutex
	evs []ContainerEvent
}

func (s *sink) ContainerEvent(_ context.Context, ev ContainerEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, ev)
	return nil
}

func (s *sink) got() []ContainerEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ContainerEvent(nil), s.evs...)
}

// fakeDockerd serves the engine calls the follower makes. Every events
// connection reports "c2" started then died, then ends (the engine went
// away): the follower must reconnect.
func fakeDockerd(t *testing.T) (string, *int) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	conns := 0
	ctr := func(id, name, netID string) map[string]any {
		return map[string]any{"Id": id, "Name": "/" + name, "State": map[string]any{"Running": true},
			"Config": map[string]any{"Labels": map[string]string{"app": name}},
			"NetworkSettings": map[string]any{"Networks": map[string]any{
				"x":      map[string]string{"NetworkID": netID, "EndpointID": "ep-" + id, "IPAddress": "198.19.1.5"},
				"bridge": map[string]string{"NetworkID": "other", "EndpointID": "ep2-" + id, "IPAddress": "172.17.0.2"}}}}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/containers/json", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode([]map[string]string{{"Id": "c1"}})
	})
	mux.HandleFunc("/containers/c1/json", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(ctr("c1", "one", "dn1"))
	})
	mux.HandleFunc("/containers/c2/json", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(ctr("c2", "two", "dn2"))
	})
	mux.HandleFunc("/containers/c3/json", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(ctr("c3", "three", "dn1"))
	})
	mux.HandleFunc("/events", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns++
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
		for _, a := range []string{"start", "die"} {
			fmt.Fprintf(w, `{"Type":"container","Action":%q,"Actor":{"ID":"c2","Attributes":{"name":"two"}}}`+"\n", a)
		}
		// docker network connect: to another driver's network (ignored),
		// then to ours.
		fmt.Fprintln(w, `{"Type":"network","Action":"connect","Actor":{"ID":"other","Attributes":{"container":"c3","type":"bridge"}}}`)
		fmt.Fprintln(w, `{"Type":"network","Action":"connect","Actor":{"ID":"dn1","Attributes":{"container":"c3","name":"net1","type":"netplugin"}}}`)
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sock, &conns
}

func TestFollowEvents(t *testing.T) {
	sock, _ := fakeDockerd(t)
	eng := fakeEngine{"dn1": {ID: "dn1", Driver: "netplugin"}, "dn2": {ID: "dn2", Driver: "netplugin"}, "other": {ID: "other", Driver: "bridge"}}
	p, err := New(Config{Backend: newFakeBackend(), Engine: eng, Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.FollowEvents(ctx, sock, s) }()
	defer func() { cancel(); <-done }()

	deadline := time.Now().Add(10 * time.Second)
	for len(s.got()) < 8 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	got := s.got()
	if len(got) < 8 {
		t.Fatalf("events %+v: want two rounds (the follower reconnects)", got)
	}
	want := []ContainerEvent{
		{Event: "start", ContainerID: "c1", Name: "one", Labels: map[string]string{"app": "one"}, Tenant: "default",
			Network: "net1", EndpointID: "ep-c1", IPAddress: "198.19.1.5"},
		{Event: "start", ContainerID: "c2", Name: "two", Labels: map[string]string{"app": "two"}, Tenant: "default",
			Network: "web", EndpointID: "ep-c2", IPAddress: "198.19.1.5"},
		{Event: "die", ContainerID: "c2"},
		{Event: "start", ContainerID: "c3", Name: "three", Labels: map[string]string{"app": "three"}, Tenant: "default",
			Network: "net1", EndpointID: "ep-c3", IPAddress: "198.19.1.5"},
	}
	for i := 0; i < 8; i++ {
		if fmt.Sprint(got[i]) != fmt.Sprint(want[i%4]) {
			t.Errorf("event %d: %+v, want %+v", i, got[i], want[i%4])
		}
	}
}

var _ Engine = fakeEngine{}
