package reference

import "sort"

// Defect is a named, deliberate deviation of the reference from a rule,
// used to prove that the suite's checks for that rule can fail. Clauses
// lists the catalogue IDs it breaks (clause numbers, or the section, table
// or topic keys of rules without a public clause number).
type Defect struct {
	Name        string
	Clauses     []string
	Description string
	// Also gives, for each clause of Clauses that is not the defect's
	// own target, why the deviation breaks that clause too (the suite
	// blames one root cause on one clause; these are deviations a second
	// rule states in its own words).
	Also map[string]string
}

// also lists the second clauses a defect truly breaks, with the reason.
var also = map[string]map[string]string{
	DefAckOldestPSN: {"C9-116": "the ACK answering AckReq on p+k carries p, earlier than the request that asked for it: no response is scheduled at that request's PSN or later"},
	DefDupMovesEPSN: {
		"C9-105": "with the expected PSN moved to the duplicate's PSN + 1, the duplicate is answered with an ACK carrying its own PSN instead of the most recently completed request's",
		"C9-148": "with the expected PSN moved back to the duplicate's PSN + 1, a later duplicate arrives at the moved expected PSN and is executed as a new request: the MSN rises for a duplicate, which it never does (C9-148, §9.7.7.1)",
		"C9-116": "the request at the true expected PSN, valid and carrying AckReq, lies beyond the moved expected PSN: the device drops it and never schedules a response for it (C9-116, §9.7.5.1.6; C9-103 is visible on the wire only so)",
	},
	DefDupSendReexecuted: {"C9-148": "executing the duplicate again completes a message: the MSN rises for a duplicate"},
	DefGBNNewPSN:         {"§9.7.5.1.2": "the READ re-issued after an implied NAK also takes a fresh PSN instead of its first unreceived PSN"},
	DefReadReplayMiddle:  {"C9-97": "a replay that opens with Response Middle has no AETH in its first packet, which every READ answer's First (or Only) carries (docs/interpretations.md, \"Opcodes of a partial READ replay\")"},
	DefNAKInReadResponse: {
		"C9-100": "the refused response packet must go out as an Acknowledge (0x11) carrying the NAK; sending it as a READ Response opcode breaks that part of the rule (C9-100, §9.7.5.1.3: rule and wire form; docs/interpretations.md, \"A READ that fails mid-stream\")",
		"C9-112": "shares C9-100's one meaning (C9-112, §9.7.5.1.3: one meaning with C9-100): the refused packet must be an Acknowledge",
	},
	DefUnsolicitedNAKRepeat: {
		"C9-114": "the repeated sequence NAK is a further sequence NAK while the responder is latched",
		"C9-122": "the repeated sequence NAK is a second one outstanding before the expected PSN arrived",
	},
}

// Defect names.
const (
	DefAckOldestPSN         = "ack-oldest-psn"
	DefAckPSNAhead          = "ack-psn-ahead"
	DefReadRespPSNSkew      = "read-resp-psn-skew"
	DefAtomicAckPSNSkew     = "atomic-ack-psn-skew"
	DefReadFirstNoAETH      = "read-first-no-aeth"
	DefReadLastNoAETH       = "read-last-no-aeth"
	DefReadFailRequestPSN   = "read-fail-request-psn"
	DefAckOvertakesRead     = "ack-overtakes-read"
	DefDupMovesEPSN         = "dup-moves-epsn"
	DefDupNewestFirst       = "dup-newest-first"
	DefReadNoPreempt        = "read-no-preempt"
	DefDupSendReexecuted    = "dup-send-reexecuted"
	DefDupAckRegister       = "dup-ack-register"
	DefDupErrorNAK          = "dup-error-nak"
	DefDupReadDropped       = "dup-read-dropped"
	DefReadReplayMiddle     = "read-replay-middle"
	DefDupAtomicReexecuted  = "dup-atomic-reexecuted"
	DefDupAtomicUnknownNAK  = "dup-atomic-unknown-nak"
	DefNAKSeqReceivedPSN    = "nak-seq-received-psn"
	DefNAKInvReqReceivedPSN = "nak-invreq-received-psn"
	DefRNRNAKWrongPSN       = "rnr-nak-wrong-psn"
	DefNAKInReadResponse    = "nak-in-read-response"
	DefNAKLatchOff          = "nak-latch-off"
	DefAckReqIgnored        = "ackreq-ignored"
	DefAccessNAKExpectedPSN = "access-nak-expected-psn"
	DefMSNReadSkipped       = "msn-read-skipped"
	DefMSNDupBump           = "msn-dup-bump"
	DefNAKMSNZero           = "nak-msn-zero"
	DefCreditsInvalidNoSRQ  = "credits-invalid-no-srq"
	DefSRQCredits           = "srq-credits"
	DefSyndromeReservedBit  = "syndrome-reserved-bit"
	DefNAKCodeReserved      = "nak-code-reserved"
	DefUnsolicitedNAKRepeat = "unsolicited-nak-repeat"
	DefRetryBeforeTimeout   = "retry-before-timeout"
	DefRetryTimeoutZero     = "retry-timeout-zero"
	DefTimerOneTickEarly    = "timer-one-tick-early"
	DefRetryCountPlusOne    = "retry-count-plus-one"
	DefRetry7Unlimited      = "retry-7-unlimited"
	DefRNRCostsRetry        = "rnr-costs-retry"
	DefRNRResendEarly       = "rnr-resend-early"
	DefRNRStaleTimer        = "rnr-stale-timer"
	DefRNRRetry7Finite      = "rnr-retry-7-finite"
	DefGBNNewPSN            = "gbn-new-psn"
	DefGBNSkipOne           = "gbn-skip-one"
	DefImpliedNAKIgnored    = "implied-nak-ignored"
	DefRetryAfterFatalNAK   = "retry-after-fatal-nak"
	DefTooManyReadsRNR      = "too-many-reads-rnr"
	DefTooManyReadsServed   = "too-many-reads-served"
	DefAckInvalidRequest    = "ack-invalid-request"
	DefDropInvalidRequest   = "drop-invalid-request"
)

var defects = []Defect{
	{DefAckOldestPSN, []string{"C9-95"},
		"a coalesced ACK carries the PSN of the oldest request it covers: the ACK answering AckReq on p+k carries p, the first request not yet acknowledged", nil},
	{DefAckPSNAhead, []string{"C9-95"},
		"an ACK carries the PSN after the newest request it covers (newest + 1)", nil},
	{DefReadRespPSNSkew, []string{"C9-96"},
		"READ response packets are numbered from the request PSN + 1", nil},
	{DefAtomicAckPSNSkew, []string{"o9-58"},
		"the ATOMIC Acknowledge carries the request PSN + 1", nil},
	{DefReadFirstNoAETH, []string{"C9-97"},
		"a multi-packet READ response starts with a Middle opcode, so its first packet carries no AETH", nil},
	{DefReadLastNoAETH, []string{"C9-98"},
		"the last packet of a multi-packet READ response goes out as a Middle, without an AETH", nil},
	{DefReadFailRequestPSN, []string{"C9-100", "C9-112"},
		"a READ failing mid-stream is NAKed with the READ request's PSN instead of the refused response packet's PSN (as rxe does)", nil},
	{DefAckOvertakesRead, []string{"C9-101"},
		"an ACK for a SEND/WRITE that followed a READ leaves before the READ's response stream has finished", nil},
	{DefDupMovesEPSN, []string{"C9-103"},
		"a duplicate request moves the expected PSN to the duplicate's PSN + 1", nil},
	{DefDupNewestFirst, []string{"C9-104", "C9-110"},
		"duplicates waiting for an answer are answered newest first, and an older duplicate never preempts the answer being streamed", nil},
	{DefReadNoPreempt, []string{"C9-110"},
		"a READ answer being streamed always runs to its end before an older duplicate is answered (waiting duplicates still go oldest first), as rxe does", nil},
	{DefDupSendReexecuted, []string{"C9-105"},
		"a duplicate SEND is executed again: it consumes a receive WQE, bumps the MSN and is ACKed with its own PSN", nil},
	{DefDupAckRegister, []string{"C9-105"},
		"a duplicate SEND or WRITE is acknowledged with the PSN before a register that only SENDs, WRITEs and ATOMICs move and that starts at 0 (as rxe does): PSN 0xFFFFFF on a fresh QP, the last SEND's after READs", nil},
	{DefDupErrorNAK, []string{"C9-106", "C9-115"},
		"an error while answering a duplicate READ (invalid R_Key, RETH outside the original) is NAKed remote access instead of being dropped", nil},
	{DefDupReadDropped, []string{"C9-107"},
		"duplicate READs are silently dropped instead of being executed again", nil},
	{DefReadReplayMiddle, []string{"C9-107"},
		"a partial duplicate READ's replay starts with a Middle (or Last) opcode, as rxe's responder is suspected to do", nil},
	{DefDupAtomicReexecuted, []string{"o9-66"},
		"a duplicate ATOMIC is executed again and returns the new original value", nil},
	{DefDupAtomicUnknownNAK, []string{"o9-67"},
		"a duplicate ATOMIC with no saved result is answered with a NAK invalid request instead of being dropped", nil},
	{DefNAKSeqReceivedPSN, []string{"C9-111", "C9-121"},
		"a PSN sequence error NAK carries the received packet's PSN instead of the expected PSN", nil},
	{DefNAKInvReqReceivedPSN, []string{"C9-111", "C9-125"},
		"the opcode sequence is checked before the PSN, and an invalid-request NAK carries the received packet's PSN: an invalid Middle/Last arriving ahead of the expected PSN after a valid First is NAKed invalid request with its own PSN", nil},
	{DefRNRNAKWrongPSN, []string{"C9-113"},
		"an RNR NAK carries the refused request's PSN + 1", nil},
	{DefNAKInReadResponse, []string{"C9-113.a1"},
		"a READ failing mid-stream is NAKed in a READ Response opcode (First/Last/Only) carrying the NAK syndrome, not an Acknowledge", nil},
	{DefNAKLatchOff, []string{"C9-114", "C9-122"},
		"no NAK latch: every out-of-sequence packet gets its own sequence NAK", nil},
	{DefAckReqIgnored, []string{"C9-116"},
		"AckReq on a SEND/WRITE gets no response unless something else forces one", nil},
	{DefAccessNAKExpectedPSN, []string{"C9-124"},
		"a remote access NAK carries the PSN of the message's first packet, not the offending packet's PSN", nil},
	{DefMSNReadSkipped, []string{"C9-148"},
		"the MSN is not incremented for READs", nil},
	{DefMSNDupBump, []string{"C9-148"},
		"duplicates bump the MSN", nil},
	{DefNAKMSNZero, []string{"C9-149"},
		"NAKs and RNR NAKs carry MSN 0", nil},
	{DefCreditsInvalidNoSRQ, []string{"C9-150.2.1"},
		"a QP without an SRQ sends credit code 0x1F (no valid credits), as rxe does", nil},
	{DefSRQCredits, []string{"o9-95.2.2"},
		"a QP on an SRQ advertises credit counts from the SRQ's depth instead of 0x1F", nil},
	{DefSyndromeReservedBit, []string{"§9.7.5.2"},
		"ACK syndromes have the reserved bit 7 set", nil},
	{DefNAKCodeReserved, []string{"§9.7.5.2"},
		"a remote operational error is sent with the reserved NAK code 5", nil},
	{DefUnsolicitedNAKRepeat, []string{"§9.7.7.2"},
		"the responder re-sends its last NAK unsolicited a while later", nil},
	{DefRetryBeforeTimeout, []string{"C9-140"},
		"the requester retransmits after half the ACK timeout", nil},
	{DefRetryTimeoutZero, []string{"C9-140"},
		"the requester retransmits even with timeout 0 (no timer), after a 1 ms default", nil},
	{DefTimerOneTickEarly, []string{"C9-140"},
		"the transport timer fires one tick of its clock before the interval ends (TimerTick; 4 ms, a jiffy at HZ=250, when unset; half an interval shorter than two ticks), as a timer converted to whole jiffies by rounding down may", nil},
	{DefRetryCountPlusOne, []string{"retry-counter"},
		"the requester retries once more than RetryCnt allows", nil},
	{DefRetry7Unlimited, []string{"retry-counter"},
		"a transport retry count of 7 is treated as unlimited, as for the RNR retry count (as rxe does): the WQE never ends with retry-exceeded", nil},
	{DefRNRCostsRetry, []string{"retry-counter", "rnr-retry"},
		"one counter for loss and RNR: RNR NAKs spend the transport retry counter", nil},
	{DefRNRResendEarly, []string{"rnr-retry"},
		"after an RNR NAK the requester resends after half the advertised delay", nil},
	{DefRNRStaleTimer, []string{"C9-140"},
		"an RNR NAK neither stops nor restarts the transport timer, and a resend does not restart it (as rxe does): armed by the first transmission, it fires one interval after it, right after the RNR-timer resend (going back again) or inside the RNR wait (spending a transport retry)", nil},
	{DefRNRRetry7Finite, []string{"rnr-retry"},
		"RNR retry count 7 is treated as seven retries instead of infinite", nil},
	{DefGBNNewPSN, []string{"go-back-n"},
		"go-back-N resends with fresh PSNs instead of the original ones", nil},
	{DefGBNSkipOne, []string{"go-back-n"},
		"go-back-N resumes one PSN after the oldest unacknowledged (or NAKed) PSN", nil},
	{DefImpliedNAKIgnored, []string{"§9.7.5.1.2"},
		"an ACK whose PSN passes an outstanding READ completes the READ as if it had been answered", nil},
	{DefRetryAfterFatalNAK, []string{"§9.9.2.2"},
		"a remote access, invalid request or remote operational NAK is retried like a sequence NAK", nil},
	{DefTooManyReadsRNR, []string{"Table-58"},
		"more outstanding READ/ATOMIC requests than the responder resources get an RNR NAK instead of NAK invalid request", nil},
	{DefTooManyReadsServed, []string{"Table-58"},
		"more outstanding READ/ATOMIC requests than the responder resources are served (as rxe does)", nil},
	{DefAckInvalidRequest, []string{"§9.7.5.1.5"},
		"a request it cannot execute is acknowledged positively: a single-packet SEND or WRITE longer than the path MTU is executed (as rxe 6.1 does), a SEND with Invalidate whose R_Key cannot be invalidated completes in error and is ACKed all the same (as rxe does)", nil},
	{DefDropInvalidRequest, []string{"§9.7.5.1.5"},
		"a request it cannot execute is dropped without a NAK, its expected PSN left where it was: a reserved opcode (as rxe does), a SEND or WRITE packet longer than the path MTU", nil},
}

func init() {
	sort.Slice(defects, func(i, j int) bool { return defects[i].Name < defects[j].Name })
	for i := range defects {
		if a := also[defects[i].Name]; a != nil {
			defects[i].Also = a
			var ids []string
			for id := range a {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			defects[i].Clauses = append(defects[i].Clauses, ids...)
		}
	}
}

// Defects returns the catalogue of defects, sorted by name.
func Defects() []Defect {
	out := make([]Defect, len(defects))
	for i, d := range defects {
		out[i] = d
		out[i].Clauses = append([]string(nil), d.Clauses...)
		if d.Also != nil {
			out[i].Also = map[string]string{}
			for k, v := range d.Also {
				out[i].Also[k] = v
			}
		}
	}
	return out
}

// LookupDefect returns the defect with that name.
func LookupDefect(name string) (Defect, bool) {
	i := sort.Search(len(defects), func(i int) bool { return defects[i].Name >= name })
	if i < len(defects) && defects[i].Name == name {
		return defects[i], true
	}
	return Defect{}, false
}

// DefectNames lists the defect names, sorted.
func DefectNames() []string {
	n := make([]string, len(defects))
	for i, d := range defects {
		n[i] = d.Name
	}
	return n
}
