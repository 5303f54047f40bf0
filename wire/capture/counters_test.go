package capture

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// countersFile is a pcapng file whose interface statistics and packet
// blocks report drops, in two sections, and the counters it holds.
func countersFile() ([]byte, Counters) {
	data := []byte{1, 2, 3, 4}
	w := &ngWriter{}
	w.shb(le)
	w.idb(LinkTypeEthernet, 0, ngOpt{9, u8(9)}) // ns
	w.idb(LinkTypeRaw, 0)
	w.epb(0, 1, data, 0)
	w.epb(1, 2, data, 0, ngOpt{optEPBDropCount, w.u64(3)}, ngOpt{1, []byte("note")})
	w.opb(0, 2, 3, data, 0)
	w.opb(0, opbDropsUnknown, 4, data, 0)
	w.epb(0, 5, data, 0, ngOpt{optEPBDropCount, w.u64(0)})
	w.spb(len(data), data)
	start, end := uint64(t0.UnixNano()), uint64(t0.UnixNano()+2e9)
	w.isb(0, end, ngOpt{optISBStartTime, w.tsVal(nil, start)}, ngOpt{optISBEndTime, w.tsVal(nil, end)},
		ngOpt{4, w.u64(1000)}, ngOpt{optISBIfDrop, w.u64(5)}) // isb_ifrecv, then isb_ifdrop
	w.isb(1, end, ngOpt{optISBIfDrop, w.u64(0)}, ngOpt{optISBOSDrop, w.u64(0)})
	w.shb(be)
	w.idb(LinkTypeRaw, 0)
	w.isb(0, 0, ngOpt{optISBIfDrop, w.u64(1)}) // counts from the start: the later block's
	w.isb(0, 0, ngOpt{optISBOSDrop, w.u64(7)})
	want := Counters{
		Interfaces: []Interface{
			{Section: 0, Index: 0, LinkType: LinkTypeEthernet, TSResol: 9, Stats: true,
				IfDrop: Count{5, true}, Start: t0, End: t0.Add(2 * time.Second)},
			{Section: 0, Index: 1, LinkType: LinkTypeRaw, TSResol: 6, Stats: true,
				IfDrop: Count{0, true}, OSDrop: Count{0, true}},
			{Section: 1, Index: 0, LinkType: LinkTypeRaw, TSResol: 6, Stats: true, OSDrop: Count{7, true}},
		},
		Losses:      []Loss{{Frame: 2, Interface: 1, Count: 3, Source: "epb_dropcount"}, {Frame: 3, Interface: 0, Count: 2, Source: "drops count"}},
		LossReports: 2,
		Lost:        5,
	}
	return w.b, want
}

func TestCounters(t *testing.T) {
	file, want := countersFile()
	r, err := NewReader(bytes.NewReader(file), "counters")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if c := r.Counters(); c.Dropped() || len(c.Interfaces) != 2 || c.Interfaces[0].Stats {
		t.Errorf("after frame 1: Counters() = %+v, want two interfaces, no statistics, no drop", c)
	}
	frames, err := readAll(t, r)
	if err != io.EOF || len(frames) != 5 {
		t.Fatalf("read %d more frames, err %v; want 5 and io.EOF", len(frames), err)
	}
	if len(frames[0].Comments) != 1 {
		t.Errorf("frame 2's comments = %q, want the one beside its drop count", frames[0].Comments)
	}
	got := r.Counters()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Counters() =\n%+v\nwant\n%+v", got, want)
	}
	if !got.Dropped() {
		t.Error("Dropped() = false")
	}
	summary := got.DropSummary()
	for _, s := range []string{
		"interface 0's statistics: 5 dropped by the interface (isb_ifdrop), unknown by the operating system (isb_osdrop)",
		"interface 0 of section 2's statistics: unknown dropped by the interface (isb_ifdrop), 7 by the operating system",
		"2 packet records report 5 packets lost, the first 3 packets lost before frame 2 (epb_dropcount)",
	} {
		if !strings.Contains(summary, s) {
			t.Errorf("DropSummary() = %q, want it to contain %q", summary, s)
		}
	}
	if strings.Contains(summary, "interface 1") {
		t.Errorf("DropSummary() = %q names interface 1, which dropped nothing", summary)
	}

	path := filepath.Join(t.TempDir(), "c.pcapng.gz")
	if err := os.WriteFile(path, gzipped(file), 0o644); err != nil {
		t.Fatal(err)
	}
	scanned, err := ScanCounters(path)
	if err != nil || !reflect.DeepEqual(scanned, want) {
		t.Errorf("ScanCounters = %+v, %v; want %+v", scanned, err, want)
	}
}

// TestCountersNoDrop: counts that are zero, or unknown, report no drop.
func TestCountersNoDrop(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(w *ngWriter)
	}{
		{"zero", func(w *ngWriter) {
			w.epb(0, 1, []byte{1}, 0, ngOpt{optEPBDropCount, w.u64(0)})
			w.isb(0, 2, ngOpt{optISBIfDrop, w.u64(0)}, ngOpt{optISBOSDrop, w.u64(0)})
		}},
		{"unknown", func(w *ngWriter) {
			w.opb(0, opbDropsUnknown, 1, []byte{1}, 0)
			w.isb(0, 2)
		}},
		{"none", func(w *ngWriter) { w.epb(0, 1, []byte{1}, 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := (&ngWriter{}).shb(le).idb(LinkTypeRaw, 0)
			tc.build(w)
			r, err := NewReader(bytes.NewReader(w.b), tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := readAll(t, r); err != io.EOF {
				t.Fatal(err)
			}
			c := r.Counters()
			if c.Dropped() || c.DropSummary() != "" || c.LossReports != 0 {
				t.Errorf("Counters() = %+v: Dropped() = %v, DropSummary() = %q; want no drop", c, c.Dropped(), c.DropSummary())
			}
			if tc.name == "unknown" && (c.Interfaces[0].IfDrop.Known || !c.Interfaces[0].Stats) {
				t.Errorf("interface = %+v, want statistics with unknown counts", c.Interfaces[0])
			}
		})
	}
}

// TestERFLossCounter: an ERF record's loss counter is a loss before it,
// except in the coloured types, where the field holds a colour.
func TestERFLossCounter(t *testing.T) {
	v4 := ipv4Packet(4)
	pkts := []pkt{
		{ts: t0, data: erfRecord(erfTypeIPv4, 0, v4)},
		{ts: t0, data: erfRecord(erfTypeInfiniBand, 4, make([]byte, 30))},
		{ts: t0, data: erfRecord(erfTypeColorEth, 9, append([]byte{0, 0}, etherFrame(EtherTypeIPv4, v4)...))},
		{ts: t0, data: make([]byte, 10)}, // too short for its header
		{ts: t0, data: erfRecord(erfTypeIPv4|0x80, 1, append(make([]byte, 8), v4...))},
	}
	for _, typ := range []byte{erfTypeColorHDLCPoS, erfTypeDSMColorHDLCPoS, erfTypeDSMColorEth,
		erfTypeColorMCHDLCPoS, erfTypeColorHashPoS, erfTypeColorHash} {
		pkts = append(pkts, pkt{ts: t0, data: erfRecord(typ, 9, append([]byte{0, 0}, etherFrame(EtherTypeIPv4, v4)...))})
	}
	want := Counters{
		Losses:      []Loss{{Frame: 2, Count: 4, Source: "ERF lctr"}, {Frame: 5, Count: 1, Source: "ERF lctr"}},
		LossReports: 2, Lost: 5,
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		file []byte
	}{
		{"erf.pcap", buildPcap(le, false, LinkTypeERF, pkts)},
		{"erf.pcapng", func() []byte {
			w := (&ngWriter{}).shb(be).idb(LinkTypeERF, 0)
			for i, p := range pkts {
				w.epb(0, uint64(i), p.data, 0)
			}
			return w.b
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			if err := os.WriteFile(path, tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := ScanCounters(path)
			if err != nil {
				t.Fatal(err)
			}
			got.Interfaces = nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ScanCounters = %+v, want %+v", got, want)
			}
		})
	}
	// Ethernet records hold no loss counter, whatever their bytes.
	path := filepath.Join(dir, "eth.pcap")
	if err := os.WriteFile(path, buildPcap(le, false, LinkTypeEthernet, pkts), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ScanCounters(path); err != nil || got.Dropped() {
		t.Errorf("ScanCounters(Ethernet) = %+v, %v; want nothing", got, err)
	}
}

// TestLossesListed: the losses beyond MaxListedLosses are counted, not
// listed, and their sum saturates.
func TestLossesListed(t *testing.T) {
	w := (&ngWriter{}).shb(le).idb(LinkTypeRaw, 0)
	for i := 0; i < MaxListedLosses+5; i++ {
		w.epb(0, uint64(i), []byte{1}, 0, ngOpt{optEPBDropCount, w.u64(-1)})
	}
	r, err := NewReader(bytes.NewReader(w.b), "many")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readAll(t, r); err != io.EOF {
		t.Fatal(err)
	}
	c := r.Counters()
	if len(c.Losses) != MaxListedLosses || c.LossReports != MaxListedLosses+5 || c.Lost != ^uint64(0) {
		t.Errorf("%d listed, %d reports, %d lost; want %d, %d, 2^64-1", len(c.Losses), c.LossReports, c.Lost, MaxListedLosses, MaxListedLosses+5)
	}
}

// TestPrecision: the coarsest timestamp resolution a file's interfaces
// declare (if_tsresol, decimal or binary), at least a nanosecond; none for
// a file that declares no interface.
func TestPrecision(t *testing.T) {
	for _, tc := range []struct {
		tsresol []uint8
		want    time.Duration
	}{
		{nil, 0},
		{[]uint8{6}, time.Microsecond},
		{[]uint8{9, 3}, time.Millisecond},
		{[]uint8{0}, time.Second},
		{[]uint8{12}, time.Nanosecond},
		{[]uint8{0x80 | 10}, time.Second >> 10},
		{[]uint8{0x80 | 40}, time.Nanosecond},
	} {
		var c Counters
		for _, r := range tc.tsresol {
			c.Interfaces = append(c.Interfaces, Interface{TSResol: r})
		}
		if got := c.Precision(); got != tc.want {
			t.Errorf("if_tsresol %v: Precision() = %v, want %v", tc.tsresol, got, tc.want)
		}
	}
}
