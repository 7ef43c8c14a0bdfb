package ctxutil

import (
	"context"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) {
		t.Fatal("a live context must let the full duration pass")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Fatal("an ended context must end the wait")
	}
}

func TestNewBackoffDoublesToMax(t *testing.T) {
	bo := NewBackoff(100*time.Millisecond, 400*time.Millisecond)
	for i, want := range []time.Duration{100, 200, 400, 400, 400} {
		want *= time.Millisecond
		lo, hi := want-want/5, want+want/5+1
		if d := bo.NextBackOff(); d < lo || d > hi {
			t.Fatalf("delay %d = %v, want %v ±20%%", i, d, want)
		}
	}
	bo.Reset()
	if d := bo.NextBackOff(); d > 120*time.Millisecond+1 {
		t.Fatalf("after Reset the delay is %v, want the initial 100ms ±20%%", d)
	}
}

func TestNewBackoffMaxBelowInitial(t *testing.T) {
	bo := NewBackoff(time.Second, time.Millisecond)
	if d := bo.NextBackOff(); d < 800*time.Millisecond {
		t.Fatalf("max below initial must be raised to initial, got %v", d)
	}
}
