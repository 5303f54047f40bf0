package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rcconform/rcconform/wire/capture"
)

// toPcapng rewrites the lab's tcpdump capture (classic pcap) as pcapng, the
// form the lab promises in out/rxe/, with wire/capture's reader and
// writer. A capture that ends inside a frame (tcpdump stopped mid-write)
// keeps the frames before it.
func toPcapng(in, out string) error {
	r, err := capture.Open(in)
	if err != nil {
		return fmt.Errorf("reading the capture: %w", err)
	}
	defer r.Close()
	o, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("writing the capture: %w", err)
	}
	w, err := capture.NewNgWriter(o, "rcconform ci/rxe-lab.sh: RoCEv2 traffic between the rule suite and rdma_rxe")
	if err != nil {
		o.Close()
		return fmt.Errorf("writing the capture %s: %w", out, err)
	}
	iface := -1
	for {
		fr, err := r.Next()
		if err == io.EOF || errors.Is(err, capture.ErrTruncated) {
			break // (Open read the file's header: a frame was cut)
		}
		if err != nil {
			o.Close()
			return fmt.Errorf("rewriting the capture as pcapng: %w", err)
		}
		if iface < 0 {
			if iface, err = w.AddInterface(fr.LinkType, "tap0", "the soft-RoCE lab's tap device, inside its network namespace"); err != nil {
				o.Close()
				return fmt.Errorf("writing the capture %s: %w", out, err)
			}
		}
		if err := w.WritePacket(iface, fr.Time, fr.Data, fr.OrigLen, fr.Comments); err != nil {
			o.Close()
			return fmt.Errorf("writing the capture %s, frame %d: %w", out, fr.Num, err)
		}
	}
	if err := w.Flush(); err != nil {
		o.Close()
		return fmt.Errorf("writing the capture %s: %w", out, err)
	}
	return o.Close()
}
