package ovsdriver

import (
	"encoding/binary"
	"testing"
)

// echoPacket builds an IPv4 packet (20-byte header) carrying an ICMP message.
func echoPacket(src, dst [4]byte, typ, code byte, rest uint32, payload []byte) []byte {
	b := make([]byte, 20+8+len(payload))
	b[0] = 0x45
	copy(b[12:], src[:])
	copy(b[16:], dst[:])
	b[20], b[21] = typ, code
	binary.BigEndian.PutUint32(b[24:], rest)
	copy(b[28:], payload)
	return b
}

func TestClassify(t *testing.T) {
	peer, me := [4]byte{198, 18, 0, 12}, [4]byte{198, 18, 0, 11}
	p := &prober{peer: peer, id: 0x1234}
	reply := echoPacket(peer, me, icmpEchoReply, 0, 0x1234<<16|2, nil)
	if k, _ := p.classify(reply, peer, 2); k != answerEcho {
		t.Errorf("reply: kind %d", k)
	}
	if k, _ := p.classify(reply, peer, 3); k != answerOther {
		t.Errorf("reply to another seq: kind %d", k)
	}
	if k, _ := p.classify(reply, me, 2); k != answerOther {
		t.Errorf("reply from another host: kind %d", k)
	}
	quoted := echoPacket(me, peer, icmpEcho, 0, 0x1234<<16|2, nil)
	frag := echoPacket([4]byte{198, 18, 0, 1}, me, icmpUnreachable, icmpFragNeeded, 1400, quoted)
	if k, mtu := p.classify(frag, [4]byte{198, 18, 0, 1}, 2); k != answerFragNeeded || mtu != 1400 {
		t.Errorf("frag needed: kind %d mtu %d", k, mtu)
	}
	if k, _ := p.classify(frag[:30], peer, 2); k != answerOther {
		t.Errorf("truncated: kind %d", k)
	}
	if inetChecksum([]byte{0x45, 0, 0, 0x1c}) == 0 {
		t.Error("checksum")
	}
}

func FuzzClassify(f *testing.F) {
	peer, me := [4]byte{198, 18, 0, 12}, [4]byte{198, 18, 0, 11}
	f.Add(echoPacket(peer, me, icmpEchoReply, 0, 0x1234<<16|2, nil))
	f.Add(echoPacket([4]byte{198, 18, 0, 1}, me, icmpUnreachable, icmpFragNeeded, 1400,
		echoPacket(me, peer, icmpEcho, 0, 0x1234<<16|2, nil)))
	f.Add([]byte{0x4f, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		p := &prober{peer: peer, id: 0x1234}
		p.classify(b, peer, 2)
	})
}
