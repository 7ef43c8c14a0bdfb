package ofmaster_test

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/contiv/netplugin/ofnet/ofmaster"
	"github.com/contiv/netplugin/ofnet/ofrpc"
)

// The agent and endpoint tables are bounded: beyond MaxNodes a new agent's
// registration and beyond MaxEndpoints a new endpoint are refused with an
// error, and nothing changes; known ones are still updated
// (docs/security.md, "RPC limits").
func TestTableBounds(t *testing.T) {
	m := startMaster(t, ofmaster.Config{Limits: ofmaster.Limits{MaxNodes: 1, MaxEndpoints: 2}})
	a, b := startAgent(t, hostA), startAgent(t, hostB)
	m.join(t, a)
	err := m.rpc(t, ofrpc.MasterRegisterNode, b.node)
	var re *ofrpc.RemoteError
	if !errors.As(err, &re) || !strings.Contains(re.Msg, "limit reached") {
		t.Fatalf("registration beyond MaxNodes: %v", err)
	}
	m.mustRPC(t, ofrpc.MasterRegisterNode, a.node) // already known: accepted
	if st := m.State(); len(st.AgentDb) != 1 {
		t.Fatalf("agents %v", st.AgentDb)
	}

	m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostB, 1, 1))
	m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostB, 2, 1))
	err = m.rpc(t, ofrpc.MasterEndpointAdd, ep(hostB, 3, 1))
	if !errors.As(err, &re) || !strings.Contains(re.Msg, "limit reached") {
		t.Fatalf("endpoint beyond MaxEndpoints: %v", err)
	}
	m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostB, 2, 2)) // a newer copy of a known one
	st := m.State()
	if len(st.EndpointDb) != 2 || !st.EndpointDb["198.18.10.2:default"].Timestamp.Equal(epoch.Add(2*time.Second)) {
		t.Fatalf("endpoints %v", st.EndpointDb)
	}
	// A delete frees a slot.
	m.mustRPC(t, ofrpc.MasterEndpointDel, ep(hostB, 1, 5))
	m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostB, 3, 1))
}

// The master's RPC server applies Config.RPC: a request over the bound
// closes the connection, and the master keeps serving.
func TestMasterRPCLimits(t *testing.T) {
	m := startMaster(t, ofmaster.Config{Limits: ofmaster.Limits{RPC: ofrpc.Limits{MaxMessageBytes: 512}}})
	c, err := net.Dial("tcp", m.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	big := `{"method":"OfnetMaster.EndpointAdd","params":[{"EndpointID":"` + strings.Repeat("x", 600) + `"}],"id":1}`
	if _, err := c.Write([]byte(big)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	var got []byte
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("connection not closed")
			}
			break
		}
	}
	if !strings.Contains(string(got), "request too large") {
		t.Fatalf("answer %q", got)
	}
	if len(m.State().EndpointDb) != 0 {
		t.Fatal("oversized request changed the table")
	}
	m.mustRPC(t, ofrpc.MasterEndpointAdd, ep(hostB, 1, 1))
}
