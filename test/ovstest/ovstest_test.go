package ovstest

import (
	"bufio"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

func TestStartRestartAndListen(t *testing.T) {
	o := Start(t)

	if out, err := o.Vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev"); err != nil {
		t.Fatalf("add-br: %v: %s", err, out)
	}
	l := o.ListenTCP(t)
	target := "tcp:" + l.Addr().String()
	if out, err := o.Vsctl("set-controller", "br0", target); err != nil {
		t.Fatalf("set-controller: %v: %s", err, out)
	}

	// ovs-vswitchd inside the namespace reaches the listener: it sends an
	// OpenFlow HELLO (first byte is the version).
	accepted := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			accepted <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = bufio.NewReader(c).ReadByte()
		accepted <- err
	}()
	select {
	case err := <-accepted:
		if err != nil {
			t.Fatalf("controller connection: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("ovs-vswitchd did not connect to the controller in the namespace")
	}

	if out, err := o.Ofctl("-O", "OpenFlow13", "dump-flows", "br0"); err != nil {
		t.Fatalf("dump-flows: %v: %s", err, out)
	}

	o.RestartOVSDB(t)
	out, err := o.Vsctl("--no-wait", "br-exists", "br0")
	if err != nil {
		t.Fatalf("br0 gone after ovsdb-server restart: %v: %s", err, out)
	}
	o.RestartVswitchd(t)
	if out, err := o.Vsctl("add-port", "br0", "p1", "--", "set", "interface", "p1", "type=internal"); err != nil {
		t.Fatalf("add-port after vswitchd restart: %v: %s", err, out)
	}
	out, err = o.Vsctl("get", "interface", "p1", "ofport")
	if err != nil || strings.TrimSpace(out) == "-1" || strings.TrimSpace(out) == "[]" {
		t.Fatalf("ofport of p1: %q %v", out, err)
	}

	remote := o.AddOVSDBRemote(t)
	c, err := o.DialContext(context.Background(), "tcp", strings.TrimPrefix(remote, "tcp:"))
	if err != nil {
		t.Fatalf("dial %s: %v", remote, err)
	}
	c.Close()
}

func TestTeardown(t *testing.T) {
	var o *OVS
	t.Run("instance", func(t *testing.T) { o = Start(t) })
	if _, err := os.Stat(netnsPath(o.NetNS)); err == nil {
		t.Errorf("namespace %s still exists", o.NetNS)
	}
	for _, d := range []string{"ovsdb-server", "ovs-vswitchd"} {
		if _, err := os.Stat(o.pidfile(d)); err == nil {
			t.Errorf("%s pidfile still exists", d)
		}
	}
}

func TestStartInNetNS(t *testing.T) {
	Require(t)
	ns := NamePrefix + "own-" + randomHex(3)
	if out, err := run(nil, "ip", "netns", "add", ns); err != nil {
		t.Fatalf("add namespace: %v: %s", err, out)
	}
	defer run(nil, "ip", "netns", "delete", ns)
	var o *OVS
	t.Run("instance", func(t *testing.T) {
		o = StartInNetNS(t, ns, t.TempDir())
		if o.NetNS != ns {
			t.Fatalf("NetNS %q", o.NetNS)
		}
		if out, err := o.Vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev"); err != nil {
			t.Fatalf("add-br: %v: %s", err, out)
		}
		// The bridge's interface lives in the given namespace.
		if out, err := run(nil, "ip", "-n", ns, "link", "show", "br0"); err != nil {
			t.Fatalf("br0 not in %s: %v: %s", ns, err, out)
		}
	})
	if _, err := os.Stat(netnsPath(ns)); err != nil {
		t.Errorf("the caller's namespace was removed: %v", err)
	}
	for _, d := range []string{"ovsdb-server", "ovs-vswitchd"} {
		if _, err := os.Stat(o.pidfile(d)); err == nil {
			t.Errorf("%s still running", d)
		}
	}
}
