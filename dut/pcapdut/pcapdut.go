// Package pcapdut is the capture adapter: it replays a pcap or pcapng file
// (optionally gzip-compressed) through every passive monitor in one pass.
//
// A capture cannot be sent packets, so the adapter declares only the
// Capture capability and every active scenario reports "unsupported". What
// it can do is audit: AuditFile reads each frame once, finds RoCE in it
// (RoCEv2 on UDP destination port 4791 over IPv4 or IPv6, and RoCEv1), checks
// its ICRC, turns it into a trace.Record and hands it to a harness.Auditor.
// Memory stays bounded by the auditor's live connections and outstanding
// requests, never by the length of the capture: frames are decoded into one
// reused wire.Frame, and each record keeps the packet's headers but not its
// payload (see AuditReader).
//
// Select it in the suite with `--dut=pcap --capture=FILE`; the command
// `rcconform audit` calls AuditFile directly.
package pcapdut

import (
	"errors"
	"fmt"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire/capture"
)

func init() { dut.Register("pcap", New) }

// DUT is a capture replayed through the passive monitors.
type DUT struct {
	path string
}

// New returns the adapter for the capture file o.Capture. It opens the file
// and reads its header, so a missing file or one that is not a capture is
// reported here, before any spec runs.
func New(o dut.Options) (dut.DUT, error) {
	if o.Capture == "" {
		return nil, errors.New("pcap adapter: no capture file given (use --capture=FILE)")
	}
	r, err := capture.Open(o.Capture)
	if err != nil {
		return nil, fmt.Errorf("pcap adapter: %w", err)
	}
	r.Close()
	return &DUT{path: o.Capture}, nil
}

// Name returns "pcap".
func (d *DUT) Name() string { return "pcap" }

// Capabilities says the adapter is a capture: passive monitors only.
func (d *DUT) Capabilities() dut.Capabilities { return dut.Capabilities{Capture: true} }

// NewConn always fails: a capture cannot be given a new connection. The
// error wraps dut.ErrUnsupported.
func (d *DUT) NewConn(dut.ConnConfig) (dut.Conn, error) {
	return nil, fmt.Errorf("pcap adapter replaying %s: opening a connection: %w", d.path, dut.ErrUnsupported)
}

// Declared names the capture, for the run's certificate (its SHA-256 is
// in the result's captures).
func (d *DUT) Declared() map[string]string { return map[string]string{"capture": d.path} }

// Capture returns the path of the capture file.
func (d *DUT) Capture() string { return d.path }

// Audit runs the auditor over every frame of the capture (see AuditFile).
// It satisfies rulekit.Auditable.
func (d *DUT) Audit(a *harness.Auditor) (reports.CaptureInfo, error) {
	return AuditFile(d.path, a, nil)
}

// AuditFile audits the capture at path in one streaming pass, its ICRCs
// checked unless the capture holds none that is good (ICRCAuto; see
// AuditFileOptions); see Audit
// for what it does with each frame. progress, when not nil, is called now
// and then with the bytes read so far and the file's size (both counted
// in compressed bytes for a gzip file), and once more at the end.
//
// a is a *harness.Auditor or a *harness.ShardedAuditor (see AuditReader).
// It returns the capture's statistics. When the file cannot be opened, the
// CaptureInfo names the file and the error is returned. When the file is
// damaged part-way (truncated, corrupt block), every frame before the
// damage has been audited and the auditor ended: the CaptureInfo describes
// what was read, its Errors end with the damage, and the returned error
// wraps the capture package's (capture.ErrTruncated, capture.ErrCorrupt),
// naming the file and the frame.
//
// Before the first frame, it reads what the file reports of its own drops
// (pcapng interface statistics, packet blocks' drop counts, ERF loss
// counters): where it reports one, the connections are not taken as held
// whole from their beginning (harness.Settings.CaptureDrops) and a note
// says so; where a's settings claim the capture complete, nothing is
// audited and the error wraps ErrCompleteContradicted.
func AuditFile(path string, a Observer, progress func(read, total int64)) (reports.CaptureInfo, error) {
	return AuditFileOptions(path, a, progress, Options{})
}
