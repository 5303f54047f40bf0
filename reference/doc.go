// Package reference is rcconform's reference RC transport: a complete
// requester and responder for InfiniBand/RoCEv2 Reliable Connection QPs,
// driven by a deterministic virtual clock and joined by a simulated link. It
// is the default device under test and the yardstick every rule of the suite
// is proven against, so it follows every rule of the catalogue
// (rules/catalog) as docs/interpretations.md reads it, makes each choice the
// specification leaves open configurable, and carries named defects that
// break one rule each.
//
// # Pieces
//
//   - Clock: virtual time; events at equal times run in scheduling order.
//     Nothing reads the wall clock, nothing runs in a goroutine, and no
//     behaviour depends on map order, so a run is a function of its
//     configuration and seeds.
//   - Link: two ports; every packet crosses it as a RoCEv2 Ethernet frame
//     (wire.Frame, ICRC included and checked on receipt: a bad ICRC is
//     dropped). Impairments drop, duplicate, reorder or delay frames chosen
//     by direction and index, by opcode (and occurrence) or PSN, or by a
//     probability drawn from the link's seed. WritePcapng writes everything
//     that entered the link.
//   - Memory and MR: registered regions with R_Keys, bounds and access
//     rights.
//   - QP: both halves of an RC QP, in RTS when created (Modify moves it
//     along the verbs state machine; ERROR flushes and sends nothing).
//
// # The responder (responder.go)
//
// A request is classified against the expected PSN: new, duplicate (in
// the half of the PSN space behind it) or ahead. A PSN ahead gets one
// sequence NAK carrying the expected PSN and sets the NAK latch: later
// packets ahead are dropped silently, duplicates are still answered, and
// the expected PSN clears it (C9-111/C9-121, C9-114/C9-122). An RNR NAK
// latches the same way, so the packets behind a refused SEND do not turn
// into sequence NAKs while the requester waits out the RNR timer.
//
// Every response goes through one ordered queue that the transmitter
// drains one packet per PacketGap, responses before requests. READ
// responses are built packet by packet when they leave, so memory is read
// then (a region invalidated mid-stream turns the next packet into an
// Acknowledge NAK with that packet's PSN, C9-100/C9-112), and an ACK with a
// PSN beyond a READ whose responses have not all left waits behind it
// (C9-101). A READ or ATOMIC holds a responder resource from validation
// until its last response has been transmitted; the resources also keep
// the PSN range, RETH and ATOMIC result needed to answer duplicates: a
// duplicate READ is read again from memory starting at the duplicate's PSN
// with a First or Only opcode (C9-107), a duplicate ATOMIC gets its saved
// result (o9-66) or nothing (o9-67), a duplicate SEND or WRITE gets an ACK
// with the PSN of the newest completed request (C9-105), errors on
// duplicates are dropped silently (C9-106/C9-115), and a duplicate is
// queued in PSN order, stopping a later answer that is being streamed
// (C9-104/C9-110). More outstanding READ/ATOMICs than MaxDestRdAtomic get
// NAK invalid request and the QP goes to ERROR (Table 58), as it does
// after every class C NAK.
//
// # The requester (requester.go)
//
// WRs are segmented at the path MTU, with AckReq on each message's last
// packet (and every AckReqEvery packets, and when the window of MaxUnacked
// PSNs fills). The ACK timer (4.096 µs × 2^Timeout, none for 0, C9-140) is
// armed when a packet leaves, restarted on progress and stopped when
// nothing is outstanding. A timeout, a sequence NAK or an implied NAK (an
// acknowledgment past an outstanding READ or ATOMIC, §9.7.5.1.2) spends
// one transport retry and goes back to the oldest unacknowledged PSN (or
// the NAK's) with the same PSNs, resuming a multi-packet message at the
// right packet and a partly received READ at its first missing response.
// An RNR NAK spends one RNR retry (7 is infinite) and resends from its PSN
// when the RNR timer, not the ACK timer, expires. Any progress reloads both
// counters; an exhausted counter ends the WQE with retry-exceeded or
// RNR-retry-exceeded and the QP goes to ERROR. Other NAKs end the WQE with
// the matching status at once (§9.9.2.2). While a go-back-N is under way
// without progress, further implied NAKs are not acted on: they are the
// acknowledgments of packets sent before the rewind (a timeout or a
// sequence NAK still is).
//
// # Open choices
//
// Config makes configurable what the specification leaves open: when a
// SEND/WRITE is acknowledged without AckReq (AckPolicy), when the MSN moves
// for a READ (MSNAtReadEnd), credits or SRQ, the RNR timer advertised,
// READ/ATOMIC depths, unsolicited ACKs with new credits (§9.7.7.2), the
// responder's turnaround and the per-packet serialization time.
//
// # Defects
//
// Defects lists deliberate deviations, each tied to the rules it breaks;
// Config.Defect switches one on. They exist to prove that a check can
// fail: for every rule with public text at least one defect makes the
// reference break it.
package reference
