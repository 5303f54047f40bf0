// Command benchread measures the bare read rate of a pcap file, the
// yardstick of ci/bench-audit.sh: it reads every frame with gopacket's
// pure-Go pcapgo reader (zero-copy, through a 1 MiB buffer) and touches
// nothing else, then does the same with rcconform's own capture reader
// (which also locates each frame's network header).
//
//	go run ./cmd/rcconform/internal/benchread [-runs N] FILE.pcap
//
// It prints one line per reader, "pcapgo: N frames in D: R frames/s",
// with the best of the runs.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/gopacket/pcapgo"

	"github.com/rcconform/rcconform/wire/capture"
)

func main() {
	runs := flag.Int("runs", 3, "runs per reader; the best is reported")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: benchread [-runs N] FILE.pcap")
		os.Exit(2)
	}
	path := flag.Arg(0)
	for _, r := range []struct {
		name string
		read func(string) (int, error)
	}{{"pcapgo", readPcapgo}, {"capture", readCapture}} {
		var best time.Duration
		n := 0
		for range max(*runs, 1) {
			start := time.Now()
			var err error
			n, err = r.read(path)
			d := time.Since(start)
			if err != nil {
				fmt.Fprintf(os.Stderr, "benchread: %s: %v\n", r.name, err)
				os.Exit(1)
			}
			if best == 0 || d < best {
				best = d
			}
		}
		fmt.Printf("%s: %d frames in %v: %.0f frames/s\n", r.name, n, best.Round(time.Millisecond), float64(n)/best.Seconds())
	}
}

func readPcapgo(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r, err := pcapgo.NewReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", path, err)
	}
	n := 0
	for {
		_, _, err := r.ZeroCopyReadPacketData()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("reading %s: frame %d: %w", path, n+1, err)
		}
		n++
	}
}

func readCapture(path string) (int, error) {
	r, err := capture.Open(path)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	n := 0
	for {
		f, err := r.Next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if _, _, err := f.Network(); err != nil {
			return n, err
		}
		n++
	}
}
