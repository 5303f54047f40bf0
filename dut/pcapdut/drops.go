package pcapdut

import (
	"errors"
	"fmt"
	"time"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/wire/capture"
)

// ErrCompleteContradicted is returned (wrapped, naming the file and what
// it reports) when the settings claim the capture complete
// (harness.Settings.Complete, --complete) but the file itself reports
// packets it dropped: the claim is false, and an audit resting on it could
// fail a device for a packet the capture lost. Nothing is audited.
var ErrCompleteContradicted = errors.New("the capture file reports packets it dropped, so it is not complete")

// captureDrops reads what the capture at path records of its own
// completeness (capture.ScanCounters: pcapng interface statistics, packet
// blocks' drop counts, ERF loss counters) and, where it reports a packet
// dropped, sets CaptureDrops in the settings a gives its connections: no
// connection is then taken as held whole from its beginning (a connection
// manager's handshake or a first request acknowledged with a new QP's MSN
// no longer says so), while a sender's consecutive IPv4 Identifications
// still show its packets were not among those dropped. It returns the note
// that says so ("" when the file reports no drop: a count it leaves out is
// unknown, and changes nothing). Where the settings claim the capture
// complete, it returns an error wrapping ErrCompleteContradicted instead.
// Damage is left to the audit to report.
//
// It also gives the settings the file's timestamp resolution where an
// interface declares one coarser than a microsecond (if_tsresol): packets
// recorded within it of each other may have passed the capture point in
// either order (Settings.TimePrecision).
func captureDrops(path string, a Observer) (note string, err error) {
	c, _ := capture.ScanCounters(path)
	st := observerSettings(a)
	if p := c.Precision(); st != nil && p > time.Microsecond {
		st.TimePrecision = max(st.TimePrecision, p)
	}
	if !c.Dropped() {
		return "", nil
	}
	what := c.DropSummary()
	if st != nil && st.Complete {
		return "", fmt.Errorf("auditing %s: --complete says the capture holds every packet that passed its capture point, but the file reports %s: %w",
			path, what, ErrCompleteContradicted)
	}
	if st != nil {
		st.CaptureDrops = true
	}
	return fmt.Sprintf("the capture file reports packets it dropped (%s): no connection is taken as held whole from its beginning; a sender's consecutive IPv4 Identifications still show which of its packets were not among them", what), nil
}

// observerSettings returns the settings a gives the connections it makes
// (nil for an observer of another kind).
func observerSettings(a Observer) *harness.Settings {
	switch ha := a.(type) {
	case *harness.Auditor:
		return &ha.Settings
	case *harness.ShardedAuditor:
		return &ha.Settings
	}
	return nil
}
