package k8ssvc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/contiv/netplugin/utils/runtest"
)

// fakeSink records the load balancers; fail makes the next n calls fail.
type fakeSink struct {
	mu   sync.Mutex
	lbs  map[string]LB
	fail int
}

func (s *fakeSink) Put(_ context.Context, lb LB) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail > 0 {
		s.fail--
		return errors.New("injected failure")
	}
	s.lbs[lb.Name] = lb
	return nil
}

func (s *fakeSink) Delete(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.lbs, name)
	return nil
}

func (s *fakeSink) get(name string) (LB, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lb, ok := s.lbs[name]
	return lb, ok
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, detail)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestControllerFollowsServicesAndSlices(t *testing.T) {
	cs := fake.NewSimpleClientset()
	sink := &fakeSink{lbs: map[string]LB{}, fail: 2}
	c, err := New(cs, sink, Options{RetryBase: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runtest.GoLoop(t, c.Run)

	api := context.Background()
	svc := service("ns", "web", "198.19.200.10", svcPortOf("http", corev1.ProtocolTCP, 80, intstr.FromString("http")))
	if _, err := cs.CoreV1().Services("ns").Create(api, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sl := slice("ns", "web", "web-a", discoveryv1.AddressTypeIPv4, []slicePort{{"http", corev1.ProtocolTCP, 8080}},
		ep{"198.19.1.2", ready}, ep{"198.19.1.3", ready})
	if _, err := cs.DiscoveryV1().EndpointSlices("ns").Create(api, sl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := func(provs ...string) func() (bool, string) {
		return func() (bool, string) {
			lb, ok := sink.get("ns/web")
			return ok && fmt.Sprint(lb.Providers) == fmt.Sprint(provs) && len(lb.Ports) == 1 && (len(provs) == 0 || lb.Ports[0].ProvPort == 8080),
				fmt.Sprintf("%+v %v", lb, ok)
		}
	}
	// The first two Puts fail: the queue retries them.
	eventually(t, "both providers after injected failures", want("198.19.1.2", "198.19.1.3"))

	f := false
	sl.Endpoints[0].Conditions.Ready = &f
	if _, err := cs.DiscoveryV1().EndpointSlices("ns").Update(api, sl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a not-ready endpoint leaves", want("198.19.1.3"))

	if err := cs.DiscoveryV1().EndpointSlices("ns").Delete(api, "web-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no providers once the slice is gone", want())

	if err := cs.CoreV1().Services("ns").Delete(api, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the service is deleted", func() (bool, string) {
		_, ok := sink.get("ns/web")
		return !ok, "still there"
	})
}

func TestControllerStopsWithContext(t *testing.T) {
	c, err := New(fake.NewSimpleClientset(), &fakeSink{lbs: map[string]LB{}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// TestControllerResyncAfterRetries: a Service that kept failing past the
// retries is handed to the sink again by the resync once the sink takes it.
func TestControllerResyncAfterRetries(t *testing.T) {
	svc := service("ns", "web", "198.19.200.20", svcPortOf("http", corev1.ProtocolTCP, 80, intstr.FromInt32(8080)))
	cs := fake.NewSimpleClientset(svc)
	sink := &fakeSink{lbs: map[string]LB{}, fail: 1 << 30}
	c, err := New(cs, sink, Options{Resync: 300 * time.Millisecond, RetryBase: time.Millisecond, RetryMax: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runtest.GoLoop(t, c.Run)
	eventually(t, "the retries are used up", func() (bool, string) {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return sink.fail <= 1<<30-maxRetries, fmt.Sprint(1<<30-sink.fail, " failures")
	})
	sink.mu.Lock()
	sink.fail = 0
	sink.mu.Unlock()
	eventually(t, "the resync puts it", func() (bool, string) {
		_, ok := sink.get("ns/web")
		return ok, "not there"
	})
}
