// Package capture reads packet-capture files (pcap and pcapng, optionally
// gzip-compressed) as a stream of link-layer frames, and finds the network
// layer inside each frame, so that RoCE captures recorded by tcpdump,
// Wireshark, ibdump or a hypervisor can be audited frame by frame.
//
// The reader is written for large captures: it streams, never reads the
// whole file, and reuses its buffers, so reading a frame allocates nothing
// in steady state. It is also written for damaged captures: it never
// panics, it reports damage with the sentinel errors ErrBadMagic,
// ErrTruncated and ErrCorrupt (wrapped with the file name and the number of
// the frame being read), and the frames read before the damage have already
// been handed out.
//
// Supported formats are classic pcap with micro- or nanosecond timestamps in
// either byte order, and pcapng with any number of sections (each in its own
// byte order) and interfaces (each with its own link type and timestamp
// resolution). Enhanced, simple and obsolete packet blocks yield frames;
// every other block type is skipped, but for interface statistics blocks.
// Everything is pure Go: no libpcap.
//
// What a file records of its own completeness is kept as it is read
// (Reader.Counters, ScanCounters): the drop counts of pcapng interface
// statistics blocks (isb_ifdrop, isb_osdrop), the losses packet records
// report before themselves (epb_dropcount, an obsolete packet block's
// drops count, an ERF record's loss counter), and each pcapng interface's
// timestamp resolution. A count the file leaves out is unknown, not zero.
//
// Network locates the network-layer header inside a frame for the link
// types that RoCE captures use: Ethernet with any number of VLAN tags,
// Linux cooked capture (SLL and SLL2), raw IP, NULL/loopback and IPoIB.
package capture
