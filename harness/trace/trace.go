// Package trace records the packets of an RC exchange, in both directions,
// with their time and frame number, and rebuilds RC connections from a
// stream of packets by pairing each QP's two directions.
//
// A trace is what every passive monitor reads: the suite records one for
// each active scenario, and the capture audit builds one from a file.
package trace

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/rcconform/rcconform/wire"
)

// Dir is the direction of a packet relative to the RC connection.
type Dir uint8

// Directions.
const (
	// ToResponder is a packet from the requester to the responder
	// (requests).
	ToResponder Dir = iota
	// ToRequester is a packet from the responder to the requester
	// (responses: ACK, NAK, READ responses, ATOMIC acknowledgments).
	ToRequester
)

func (d Dir) String() string {
	if d == ToResponder {
		return "req>rsp"
	}
	return "rsp>req"
}

// Arrow renders the direction for text ladders.
func (d Dir) Arrow() string {
	if d == ToResponder {
		return "-->"
	}
	return "<--"
}

// DirOf is the direction of a packet with opcode op: requests go to the
// responder, responses to the requester, and a packet with neither kind
// of opcode (a reserved one) goes the way its sender's packets go: from
// the harness, a stimulus for the device's responder.
func DirOf(op wire.Opcode, fromHarness bool) Dir {
	switch {
	case op.IsRequest():
		return ToResponder
	case op.IsResponse():
		return ToRequester
	case fromHarness:
		return ToResponder
	}
	return ToRequester
}

// Record is one packet of a trace.
//
// The small fields sit together (a capture audit makes a Record, with
// its Packet, per frame: 240 bytes in all).
type Record struct {
	Frame int           // 1-based frame number in the capture, or sequence number in an active run
	Time  time.Duration // since the start of the trace (virtual clock for the reference DUT)
	Src   netip.Addr
	Dst   netip.Addr
	Dir   Dir
	// HasIPID says IPID holds the packet's IPv4 Identification (0 for
	// IPv6): it tells a network duplicate from a resend.
	HasIPID bool
	IPID    uint16
	// SrcPort is the UDP source port of a RoCEv2 packet (0: unknown or
	// none). Linux stacks derive it from both QP numbers alike, so both
	// directions of a connection share it; the pairing of a connection's
	// first response with its requests uses it to break ties.
	SrcPort uint16
	// ICRC is the ICRC check's outcome; a packet with a bad ICRC never
	// reached the transport and monitors leave it out.
	ICRC wire.ICRCStatus
	// Truncated is set when the capture cut the frame short: its headers
	// are analysed, its payload length and ICRC are unknown.
	Truncated bool
	Packet    *wire.Packet // owned by the record (payload copied)
	// PayloadLen is the payload length the packet had on the wire (which
	// may exceed len(Packet.Payload) when Truncated).
	PayloadLen int
	// Note is free text (for example the defect that shaped this packet).
	Note string
	// Skew is the largest time by which the trace showed, before this
	// record, a packet recorded after one its sender sent later (their
	// IPv4 Identifications tell): how far the capture or the network is
	// seen to reorder packets. The auditor sets it as it takes the
	// record in.
	Skew time.Duration
	// Copy says the record repeats an earlier request of its sender, IPv4
	// Identification included, from a sender whose IDs change: a copy the
	// network made or a frame the capture recorded twice, not a resend.
	// The auditor sets it as it takes the record in (requests only).
	Copy bool
	// HostCounts says the record's sender is seen, over all its packets
	// in the trace up to this one, to count its IPv4 Identification up
	// (one counter for every connection, as Linux keeps per host pair):
	// its IDs then date this connection's packets even where the
	// connection alone has too few to show it. The auditor sets it as it
	// takes the record in.
	HostCounts bool
}

// Usable reports whether monitors should analyse the record: a frame
// whose ICRC is bad was dropped by its receiver.
func (r *Record) Usable() bool { return r.ICRC != wire.ICRCBad }

// String renders the record on one line.
func (r *Record) String() string {
	return fmt.Sprintf("#%d %v %s %s", r.Frame, r.Time, r.Dir, r.Packet)
}

// AppendFrame appends the record as the Ethernet frame a capture of its
// packet would hold, made from what the record keeps: RoCEv2 over IPv4
// or IPv6 (by its addresses), its IPv4 Identification, UDP source port
// and transport packet, with the ICRC computed (MAC addresses zero, TTL
// 64). A record whose ICRC was bad gets every bit of the right one
// inverted, so that a reader of the frame drops it as the monitors did.
// The records of an active run are whole; a truncated record (from a
// capture) is written with the payload it kept.
func (r *Record) AppendFrame(b []byte) []byte {
	f := wire.Frame{Encap: wire.RoCEv2IPv4, Src: r.Src, Dst: r.Dst, TTL: 64, IPID: r.IPID, SrcPort: r.SrcPort, Packet: *r.Packet}
	if !r.Src.Unmap().Is4() {
		f.Encap = wire.RoCEv2IPv6
	}
	b = f.AppendEthernet(b)
	if r.ICRC == wire.ICRCBad {
		for i := len(b) - wire.ICRCLen; i < len(b); i++ {
			b[i] = ^b[i]
		}
	}
	return b
}
