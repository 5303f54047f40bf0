package pcapdut

import (
	"errors"
	"fmt"
	"os"

	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
	"github.com/rcconform/rcconform/wire/capture"
)

// ICRCMode says what an audit makes of a RoCE frame whose ICRC does not
// match its headers.
//
// The ICRC is the receiver's check (§7.8.1): a packet that fails it is
// dropped, so the audit normally leaves such a frame out, as a packet its
// receiver never saw. But a capture may not hold the ICRC the wire
// carried: captures published with their addresses rewritten (to hide
// them) or made by a path that changed a covered header field show every
// frame with a bad ICRC, while the responders plainly answered the
// requests. Five of the public captures the team audits are such.
type ICRCMode uint8

const (
	// ICRCAuto checks every ICRC, unless no frame the capture shows
	// first carries a good one while both requests and responses of RC
	// connections do carry one (the ones that do not match): then the
	// capture did not record the ICRCs, and they are taken as
	// unverifiable, with a note (icrcRecorded).
	ICRCAuto ICRCMode = iota
	// ICRCCheck checks every ICRC: a frame with a bad one was dropped by
	// its receiver and is not judged.
	ICRCCheck
	// ICRCIgnore takes every ICRC that does not match as unverifiable:
	// the frames are judged as the receivers got them.
	ICRCIgnore
)

// ParseICRCMode reads "auto", "check" or "ignore".
func ParseICRCMode(s string) (ICRCMode, error) {
	switch s {
	case "auto", "":
		return ICRCAuto, nil
	case "check":
		return ICRCCheck, nil
	case "ignore":
		return ICRCIgnore, nil
	}
	return 0, fmt.Errorf("ICRC mode %q: want auto, check or ignore", s)
}

// Options are an audit's choices beyond the auditor's settings.
type Options struct {
	ICRC ICRCMode
}

// icrcChoice is what auditReaderWith makes of a bad ICRC: ignore takes it
// as unverifiable (why says why, for the capture's notes).
type icrcChoice struct {
	ignore bool
	why    string
}

// icrcScanFrames bounds how many RoCE frames icrcRecorded reads, and
// icrcScanAll how many frames in all (a capture of mostly other traffic
// is not read twice): a capture holds a good ICRC among its first frames
// or none at all.
const (
	icrcScanFrames = 10000
	icrcScanAll    = 200000
)

// icrcRecorded reads the capture at path from its start, up to
// icrcScanFrames RoCE frames (icrcScanAll frames), and says whether the ICRCs it holds are the
// wire's: false when none of them is good, at least two are bad, and the
// bad ones include both requests and responses of RC connections (a
// conversation went on, so the receivers took these packets: a device that
// sent bad ICRCs would get no answer). It stops at the first good ICRC.
func icrcRecorded(path string) (recorded bool, why string, err error) {
	r, err := capture.Open(path)
	if err != nil {
		return true, "", err
	}
	defer r.Close()
	var d decoder
	var o outcome
	bad, seen := 0, 0
	var req, resp bool
	for all := 0; seen < icrcScanFrames && all < icrcScanAll; all++ {
		cf, err := r.Next()
		if err != nil {
			break // the audit reports a damaged capture itself
		}
		d.decode(cf, &o)
		if o.skip != notSkipped {
			continue
		}
		seen++
		switch {
		case o.fail == failBadICRC:
			bad++
			op := d.frame.Opcode
			if op.Transport() == wire.TransportRC {
				req = req || op.IsRequest()
				resp = resp || op.IsResponse()
			}
		case o.icrcGood:
			return true, "", nil
		}
	}
	if bad < 2 || !req || !resp {
		return true, "", nil
	}
	return false, fmt.Sprintf("none of the first %d RoCE frames read carries a good ICRC (%d carry a bad one), while RC requests and their responses went on: their receivers took them, so the capture does not hold the ICRCs the wire carried (addresses rewritten to hide them, or a capture path that changed a field the ICRC covers); --icrc=check would leave these frames out as dropped", seen, bad), nil
}

// AuditFileOptions is AuditFile with the audit's options.
func AuditFileOptions(path string, a Observer, progress func(read, total int64), opt Options) (reports.CaptureInfo, error) {
	info := reports.CaptureInfo{File: path}
	var ic icrcChoice
	switch opt.ICRC {
	case ICRCIgnore:
		ic = icrcChoice{ignore: true, why: "--icrc=ignore says the capture does not hold the ICRCs the wire carried"}
	case ICRCAuto:
		recorded, why, err := icrcRecorded(path)
		if err != nil {
			info.Errors = append(info.Errors, err.Error())
			return info, err
		}
		ic = icrcChoice{ignore: !recorded, why: why}
	}
	dropNote, err := captureDrops(path, a)
	if err != nil {
		info.Errors = append(info.Errors, err.Error())
		return info, err
	}
	r, err := capture.OpenHashed(path)
	if err != nil {
		info.Errors = append(info.Errors, err.Error())
		return info, err
	}
	defer r.Close()
	var total int64
	if progress != nil {
		if st, err := os.Stat(path); err == nil {
			total = st.Size()
		}
	}
	info, err = auditReaderWith(r, a, progress, total, ic)
	if dropNote != "" {
		info.Notes = append(info.Notes, dropNote)
	}
	sum, herr := r.SHA256()
	if herr != nil {
		info.Errors = append(info.Errors, herr.Error())
		return info, errors.Join(err, herr)
	}
	info.SHA256 = sum
	return info, err
}
