package pcapdut_test

import (
	"bytes"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/rcconform/rcconform/dut/pcapdut/synth"
	"github.com/rcconform/rcconform/wire"
	"github.com/rcconform/rcconform/wire/capture"
)

// standIns are synthetic captures that do what the soft-RoCE capture of
// the same name does (rxe/README.md in the shared captures): one RC
// connection held whole, one kind of operation, path MTU 1024, every frame
// RoCEv2 over IPv4 with a good ICRC and a fresh IPv4 ID. The tests that
// edit a real capture run on the stand-in always, and on the capture
// itself when it is beside the repository.
var standIns = map[string]synth.Options{
	"rxe/send-4k-mtu1024.pcap":  {Frames: 1500, QPs: 1, Seed: 31, Whole: true, Ops: []wire.Opcode{wire.SendFirst}},
	"rxe/write-8k-mtu1024.pcap": {Frames: 1500, QPs: 1, Seed: 32, Whole: true, Ops: []wire.Opcode{wire.WriteFirst}},
	"rxe/read-8k-mtu1024.pcap":  {Frames: 1500, QPs: 1, Seed: 33, Whole: true, Ops: []wire.Opcode{wire.ReadRequest}},
	"rxe/atomic-cas.pcap":       {Frames: 1500, QPs: 1, Seed: 34, Whole: true, Ops: []wire.Opcode{wire.CompareSwap}},
}

// severalQPs stands in for the other shared captures (four QPs with loss,
// IPv6, errors, 32 ConnectX QPs): several QPs at once, every operation.
var severalQPs = synth.Options{Frames: 4000, QPs: 8, Seed: 35}

// source is a capture's frames under a name.
type source struct {
	name   string
	frames []capture.Frame
}

// sources returns, for each shared capture rel, its synthetic stand-in
// (standIns[rel], else severalQPs, each once) and, when the shared
// captures are beside the repository, the capture itself; it says so when
// they are not.
func sources(t *testing.T, rels ...string) []source {
	t.Helper()
	var out []source
	made := map[string]bool{}
	missing := 0
	for _, rel := range rels {
		name, o := "synthetic, "+filepath.Base(rel), standIns[rel]
		if o.Frames == 0 {
			name, o = "synthetic, several QPs", severalQPs
		}
		if !made[name] {
			made[name] = true
			out = append(out, source{name, synthFrames(t, o)})
		}
		rd, err := capture.Open(filepath.Join(capturesDir, rel))
		if errors.Is(err, fs.ErrNotExist) {
			missing++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, source{rel, framesOf(t, rd)})
	}
	if missing > 0 {
		t.Logf("%d of %d shared captures absent from %s: their synthetic stand-ins only", missing, len(rels), capturesDir)
	}
	return out
}

// synthFrames returns the frames of a synthetic capture.
func synthFrames(t *testing.T, o synth.Options) []capture.Frame {
	t.Helper()
	var buf bytes.Buffer
	if _, err := synth.Write(&buf, o); err != nil {
		t.Fatal(err)
	}
	rd, err := capture.NewReader(bytes.NewReader(buf.Bytes()), "synthetic.pcap")
	if err != nil {
		t.Fatal(err)
	}
	return framesOf(t, rd)
}
