// Package ofctrl is the OpenFlow 1.3 controller of the dataplane (docs/dataplane.md §2): a
// passive TCP endpoint that Open vSwitch bridges connect to, built on our codec
// (ofnet/openflow13).
//
// # Connections
//
//	ctrl, err := ofctrl.New(ofctrl.Config{ListenAddr: "127.0.0.1:6653",
//		OnConnect: func(sw *ofctrl.Switch) { ... }, OnPacketIn: handle})
//	go ctrl.Run(ctx) // returns after ctx ends and every goroutine has finished
//
// For every accepted connection the controller sends HELLO (bitmap OF1.0+OF1.3),
// requires OpenFlow 1.3, reads the datapath ID from FEATURES_REPLY and starts one
// goroutine set (reader, keep-alive, packet-in dispatcher) owned by that connection.
// An ECHO_REQUEST goes out when nothing was received for EchoInterval; a switch that
// sends nothing for EchoInterval+DeadTimeout is disconnected (ErrDeadPeer). The
// switch's echo requests are answered with their xid and payload.
//
// # Recorded state
//
// Controller.Switch(dpid) returns the handle of a datapath, connected or not. The
// handle records every flow and group installed through it; the record is the single
// source of truth for that datapath and survives disconnects. On every (re)connect —
// including after ovs-vswitchd restarts — the controller runs Resync before calling
// OnConnect: it dumps the switch's flows and groups, strictly deletes what is not
// recorded and adds what is missing or differs. Resync is also available on demand.
// With Config.DeferFirstResync the first connection of a datapath in this process
// only pushes the record and deletes nothing, so flows left by a previous run keep
// forwarding until the owner has replayed its state and calls Resync itself.
// Config.KeepUnrecorded names unrecorded flows Resync leaves (flows the switch
// learned with a learn action).
//
// A flow's identity is table + priority + match as OVS defines it (FlowKey: the match
// canonicalised — fields sorted, values masked, redundant masks dropped, tcp_flags in
// its ONF-experimenter form folded to the basic one), so ModifyFlow and DeleteFlows
// are exact (MODIFY_STRICT / DELETE_STRICT). Content comparison (cookie and
// instructions, in OVS's instruction order) ignores counters, durations and flags.
//
// # Installs
//
// InstallFlows writes flow mods in chunks of 512, each followed by a barrier, with at
// most 8 chunks awaiting their barrier reply; the call returns after the last reply.
// OpenFlow errors are matched to the flow mods by xid; if any flow is rejected the
// accepted ones are rolled back and a *FlowError names each rejected flow with its
// table and OVS's error. Installs on a disconnected switch are recorded and pushed on
// connect. Mutations and Resync are serialised per switch.
package ofctrl
