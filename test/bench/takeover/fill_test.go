package takeover

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/etcd"
	"github.com/contiv/netplugin/state"
)

// hostsPerNet is what one /18 network holds (its gateway is the last
// address); nets is how many /18 networks of 198.18.0.0/15 carry
// endpoints. The eighth /18 is left for the probe networks.
const (
	hostsPerNet = 1<<14 - 3
	maxNets     = 7
)

// netSubnet is the i-th /18 of 198.18.0.0/15 and its gateway.
func netSubnet(i int) (subnet, gateway string) {
	base := netip.AddrFrom4([4]byte{198, 18 + byte(i/4), byte(i%4) * 64, 0})
	b := base.As4()
	return base.String() + "/18", netip.AddrFrom4([4]byte{b[0], b[1], b[2] + 63, 254}).String()
}

// split spreads n endpoints over as few networks as hold them.
func split(n int) []int {
	nets := (n + hostsPerNet - 1) / hostsPerNet
	out := make([]int, nets)
	for i := range out {
		out[i] = n / nets
		if i < n%nets {
			out[i]++
		}
	}
	return out
}

// fill writes count endpoint records into the network netID (tenant
// "default") as createEndpoint leaves them: the address taken in the
// network's pool, the record at state/eps/<netID>-<container>, and the
// network's endpoint and address counters. It writes with conc requests
// in flight.
func fill(ctx context.Context, kv objdb.KV, netID string, first, count, conc int) error {
	v4 := ipam.NewV4(kv)
	defer v4.Close()
	st := state.New(kv)
	var next atomic.Int64
	next.Store(int64(first))
	end := int64(first + count)
	var wg sync.WaitGroup
	errs := make(chan error, conc)
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= end || ctx.Err() != nil {
					return
				}
				a, err := v4.Allocate(ctx, netID)
				if err != nil {
					errs <- fmt.Errorf("allocate in %s: %w", netID, err)
					return
				}
				b := a.As4()
				container := fmt.Sprintf("c%06d", i)
				ep := state.Endpoint{Common: state.Common{ID: netID + "-" + container}, NetID: netID,
					EndpointID: container, HomingHost: fmt.Sprintf("host%d", i%64), EPCommonName: "n-" + container,
					IPAddress: a.String(), MacAddress: fmt.Sprintf("02:02:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3])}
				if _, err := st.Endpoints.Write(ctx, ep, objdb.WithCreateOnly()); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	_, err := objdb.Update(ctx, kv, st.Networks.Key(netID), func(cur []byte, exists bool) ([]byte, error) {
		if !exists {
			return nil, fmt.Errorf("network state %s: %w", netID, objdb.ErrNotFound)
		}
		return setCounters(cur, count)
	})
	return err
}

// setCounters sets epCount and epAddrCount of a stored network state.
func setCounters(cur []byte, n int) ([]byte, error) {
	var ns state.Network
	if err := json.Unmarshal(cur, &ns); err != nil {
		return nil, fmt.Errorf("decode network state: %w", err)
	}
	ns.EpCount, ns.EpAddrCount = n, n
	return json.Marshal(ns)
}

// openStore is a client of the etcd at endpoint, default root.
func openStore(t testing.TB, endpoint string) objdb.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l := logrus.New()
	l.SetOutput(io.Discard)
	st, err := etcd.New(ctx, etcd.Config{Endpoints: []string{endpoint}, Logger: logrus.NewEntry(l)})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	return st
}
