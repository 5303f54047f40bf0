package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/google/gopacket/pcapgo"
)

// toPcapng rewrites the lab's tcpdump capture (classic pcap) as pcapng, the
// form the lab promises in out/rxe/.
func toPcapng(in, out string) error {
	f, err := os.Open(in)
	if err != nil {
		return fmt.Errorf("reading the capture: %w", err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(bufio.NewReader(f))
	if err != nil {
		return fmt.Errorf("reading the capture %s: %w", in, err)
	}
	o, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("writing the capture: %w", err)
	}
	bw := bufio.NewWriter(o)
	intf := pcapgo.DefaultNgInterface
	intf.LinkType = r.LinkType()
	intf.Name = "tap0"
	intf.Description = "the soft-RoCE lab's tap device, inside its network namespace"
	intf.SnapLength = r.Snaplen()
	w, err := pcapgo.NewNgWriterInterface(bw, intf, pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{
		Application: "rcconform ci/rxe-lab.sh", Comment: "RoCEv2 traffic between the rule suite and rdma_rxe"}})
	if err != nil {
		o.Close()
		return fmt.Errorf("writing the capture %s: %w", out, err)
	}
	n := 0
	for {
		data, ci, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break // tcpdump stopped mid-frame: keep what was whole
		}
		if err != nil {
			o.Close()
			return fmt.Errorf("reading the capture %s, frame %d: %w", in, n+1, err)
		}
		n++
		ci.InterfaceIndex = 0
		if err := w.WritePacket(ci, data); err != nil {
			o.Close()
			return fmt.Errorf("writing the capture %s, frame %d: %w", out, n, err)
		}
	}
	if err := w.Flush(); err != nil {
		o.Close()
		return fmt.Errorf("writing the capture %s: %w", out, err)
	}
	if err := bw.Flush(); err != nil {
		o.Close()
		return fmt.Errorf("writing the capture %s: %w", out, err)
	}
	return o.Close()
}
