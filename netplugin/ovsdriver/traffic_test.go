package ovsdriver_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"

	"github.com/contiv/netplugin/netplugin/ovsdriver"
)

// moveEndpoint moves an endpoint's container side into a new namespace
// with address ip/24, up, at its default offload settings, and returns
// the namespace's path.
func moveEndpoint(t *testing.T, e *env, p ovsdriver.EndpointPort, ip string) string {
	t.Helper()
	h, path := newNamedNetNS(t)
	link, err := e.nl.LinkByName(p.IntfName)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.nl.LinkSetNsFd(link, int(h)); err != nil {
		t.Fatal(err)
	}
	ch, err := netlink.NewHandleAt(h)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	link, err = ch.LinkByName(p.IntfName)
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := netlink.ParseAddr(ip + "/24")
	if err := ch.AddrAdd(link, addr); err != nil {
		t.Fatal(err)
	}
	if err := ch.LinkSetUp(link); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestEndpointTrafficNetdev proves the container side of an endpoint
// created for the userspace datapath carries TCP and UDP at the
// namespace's default settings: a checksum left to offload would make
// the receiver drop them while ping passes.
func TestEndpointTrafficNetdev(t *testing.T) {
	e := newEnv(t)
	d := e.driver(t, nil)
	ensureBridge(t, e, d, ovsdriver.VlanBridge)
	var ps [2]ovsdriver.EndpointPort
	for i := range ps {
		var err error
		ps[i], err = d.CreateEndpoint(e.ctx, ovsdriver.EndpointSpec{EndpointID: fmt.Sprintf("ep%d", i), Bridge: ovsdriver.VlanBridge, Tag: 7})
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("ip", "netns", "exec", e.ovs.NetNS, "ethtool", "-k", ps[i].IntfName).CombinedOutput()
		if err != nil {
			t.Fatalf("ethtool -k %s: %v: %s", ps[i].IntfName, err, out)
		}
		if !strings.Contains(string(out), "tx-checksumming: off") {
			t.Errorf("%s: TX checksum offload not off:\n%s", ps[i].IntfName, out)
		}
	}
	// No controller: a NORMAL flow switches between the two ports.
	if out, err := e.ovs.Ofctl("-O", "OpenFlow13", "add-flow", ovsdriver.VlanBridge, "priority=1000,actions=NORMAL"); err != nil {
		t.Fatalf("add-flow: %v: %s", err, out)
	}
	server := moveEndpoint(t, e, ps[0], "198.18.7.1")
	client := moveEndpoint(t, e, ps[1], "198.18.7.2")

	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	var ln net.Listener
	var pc net.PacketConn
	err := ns.WithNetNSPath(server, func(ns.NetNS) error {
		var err error
		if ln, err = net.Listen("tcp4", "198.18.7.1:7000"); err != nil {
			return err
		}
		pc, err = net.ListenPacket("udp4", "198.18.7.1:7001")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	defer pc.Close()
	// Echo servers: TCP returns the SHA-256 of what it read, UDP echoes.
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		h := sha256.New()
		io.Copy(h, c)
		c.Write(h.Sum(nil))
	}()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo(buf[:n], from)
		}
	}()

	payload := make([]byte, 3<<20)
	rand.Read(payload)
	want := sha256.Sum256(payload)
	err = ns.WithNetNSPath(client, func(ns.NetNS) error {
		var dl net.Dialer
		c, err := dl.DialContext(ctx, "tcp4", "198.18.7.1:7000")
		if err != nil {
			return fmt.Errorf("TCP connect: %w", err)
		}
		defer c.Close()
		dlTime, _ := ctx.Deadline()
		c.SetDeadline(dlTime)
		if _, err := c.Write(payload); err != nil {
			return fmt.Errorf("TCP send: %w", err)
		}
		c.(*net.TCPConn).CloseWrite()
		got, err := io.ReadAll(c)
		if err != nil {
			return fmt.Errorf("TCP receive: %w", err)
		}
		if !bytes.Equal(got, want[:]) {
			return fmt.Errorf("TCP: checksum %x, want %x", got, want)
		}
		u, err := dl.DialContext(ctx, "udp4", "198.18.7.1:7001")
		if err != nil {
			return err
		}
		defer u.Close()
		msg := []byte("contiv udp probe")
		buf := make([]byte, 64)
		for try := 0; ; try++ {
			u.Write(msg)
			u.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			n, err := u.Read(buf)
			if err == nil && bytes.Equal(buf[:n], msg) {
				return nil
			}
			if try == 5 {
				return fmt.Errorf("UDP: no echo after %d tries: %v", try+1, err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestProbePathMTU: a peer behind a link that drops full-size packets is reported
// as a path-MTU problem; with the link fixed the probe passes; a silent peer is
// unknown, not a problem.
func TestProbePathMTU(t *testing.T) {
	e := newEnv(t)
	d := e.driver(t, nil)
	peerNS, _ := newNamedNetNS(t)
	local := e.addVeth(t, "upl0", "upl0p", 0)
	addr, _ := netlink.ParseAddr("198.18.99.1/24")
	if err := e.nl.AddrAdd(local, addr); err != nil {
		t.Fatal(err)
	}
	peer, err := e.nl.LinkByName("upl0p")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.nl.LinkSetNsFd(peer, int(peerNS)); err != nil {
		t.Fatal(err)
	}
	ph, err := netlink.NewHandleAt(peerNS)
	if err != nil {
		t.Fatal(err)
	}
	defer ph.Close()
	peer, err = ph.LinkByName("upl0p")
	if err != nil {
		t.Fatal(err)
	}
	paddr, _ := netlink.ParseAddr("198.18.99.2/24")
	if err := ph.AddrAdd(peer, paddr); err != nil {
		t.Fatal(err)
	}
	// The peer's end takes only 1400-byte packets: larger frames are dropped
	// by the veth without any ICMP, like a misconfigured switch.
	if err := ph.LinkSetMTU(peer, 1400); err != nil {
		t.Fatal(err)
	}
	if err := ph.LinkSetUp(peer); err != nil {
		t.Fatal(err)
	}
	need, err := ovsdriver.EndpointMTU(e.nl, true)
	if err != nil {
		t.Fatal(err)
	}
	need += 50

	res, err := d.ProbePathMTU(e.ctx, "198.18.99.2", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Reachable || res.OK || res.Need != need || !strings.Contains(res.Problem, fmt.Sprintf("but not %d-byte ones", need)) {
		t.Errorf("through a 1400-byte link: %+v", res)
	}
	if err := ph.LinkSetMTU(peer, 1500); err != nil {
		t.Fatal(err)
	}
	if res, err := d.ProbePathMTU(e.ctx, "198.18.99.2", time.Second); err != nil || !res.OK || res.Problem != "" {
		t.Errorf("through a 1500-byte link: %+v, %v", res, err)
	}
	if res, err := d.ProbePathMTU(e.ctx, "198.18.99.3", 300*time.Millisecond); err != nil || res.Reachable || res.OK {
		t.Errorf("silent peer: %+v, %v", res, err)
	}
	if _, err := d.ProbePathMTU(e.ctx, "not-an-ip", time.Second); !errors.Is(err, ovsdriver.ErrInvalid) {
		t.Errorf("bad peer address: %v", err)
	}
}
