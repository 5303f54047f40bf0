package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rcconform/rcconform/dut/pcapdut/synth"
)

// runGenBench is the hidden `gen-bench-capture` command: it writes a
// synthetic capture of conformant RC traffic for ci/bench-audit.sh.
func runGenBench(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("gen-bench-capture", "--frames N --out FILE [--qps N] [--mtu N] [--seed N]", stderr)
	frames := fs.Int("frames", 1_000_000, "number of frames")
	out := fs.String("out", "", "the pcap file to write (required)")
	qps := fs.Int("qps", 8, "RC connections, interleaved")
	mtu := fs.Int("mtu", 1024, "path MTU")
	seed := fs.Uint64("seed", 1, "seed for PSNs and the operation mix")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	switch {
	case len(pos) > 0:
		return usageErr(stderr, "gen-bench-capture", fmt.Errorf("unexpected argument %q", pos[0]))
	case *out == "":
		return usageErr(stderr, "gen-bench-capture", errors.New("--out is required"))
	case *frames <= 0 || *qps <= 0:
		return usageErr(stderr, "gen-bench-capture", errors.New("--frames and --qps must be positive"))
	}
	f, err := os.Create(*out)
	if err != nil {
		return usageErr(stderr, "gen-bench-capture", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	st, err := synth.Write(w, synth.Options{Frames: *frames, QPs: *qps, MTU: *mtu, Seed: *seed})
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return usageErr(stderr, "gen-bench-capture", fmt.Errorf("writing %s: %w", *out, err))
	}
	fmt.Fprintf(stdout, "%s: %d frames (%d requests, %d messages), %d frame bytes\n", *out, st.Frames, st.Requests, st.Messages, st.Bytes)
	return exitOK
}
