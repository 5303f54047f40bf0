// Package wire turns RoCEv2 (and RoCEv1) frames into typed InfiniBand
// transport headers and back, exact to the bit.
//
// It holds the 24-bit PSN arithmetic, the Base Transport Header (BTH), the
// extension headers an RC packet can carry (RETH, AETH, AtomicETH,
// AtomicAckETH, ImmDt, IETH), the RC opcode table saying which headers each
// opcode carries, the AETH syndrome, credit and RNR-timer tables, and the
// invariant CRC (ICRC) over IPv4 and IPv6. Sources for every constant are
// IBTA Volume 1 Release 1.2.1 chapter 9 and Annex A17 (RoCEv2); the
// project's account of them, with the public implementations each fact
// can be checked against, is docs/interpretations.md, "Wire formats".
//
// Two representations exist on purpose: Packet and Frame are builder
// structs, used to write stimuli and to hold a decoded packet; decoding
// into a reused Frame allocates nothing. The gopacket layers in layers.go
// wrap the same code for users of gopacket.
package wire
