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
	DefDupSendReexecuted    = "dup-send-reexecuted"
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
	DefRetryCountPlusOne    = "retry-count-plus-one"
	DefRNRCostsRetry        = "rnr-costs-retry"
	DefRNRResendEarly       = "rnr-resend-early"
	DefRNRRetry7Finite      = "rnr-retry-7-finite"
	DefGBNNewPSN            = "gbn-new-psn"
	DefGBNSkipOne           = "gbn-skip-one"
	DefImpliedNAKIgnored    = "implied-nak-ignored"
	DefRetryAfterFatalNAK   = "retry-after-fatal-nak"
	DefTooManyReadsRNR      = "too-many-reads-rnr"
	DefTooManyReadsServed   = "too-many-reads-served"
)

var defects = []Defect{
	{DefAckOldestPSN, []string{"C9-95"},
		"a coalesced ACK carries the PSN of the oldest request it covers: the ACK answering AckReq on p+k carries p, the first request not yet acknowledged"},
	{DefAckPSNAhead, []string{"C9-95"},
		"an ACK carries the PSN after the newest request it covers (newest + 1)"},
	{DefReadRespPSNSkew, []string{"C9-96"},
		"READ response packets are numbered from the request PSN + 1"},
	{DefAtomicAckPSNSkew, []string{"o9-58"},
		"the ATOMIC Acknowledge carries the request PSN + 1"},
	{DefReadFirstNoAETH, []string{"C9-97"},
		"a multi-packet READ response starts with a Middle opcode, so its first packet carries no AETH"},
	{DefReadLastNoAETH, []string{"C9-98"},
		"the last packet of a multi-packet READ response goes out as a Middle, without an AETH"},
	{DefReadFailRequestPSN, []string{"C9-100", "C9-112"},
		"a READ failing mid-stream is NAKed with the READ request's PSN instead of the refused response packet's PSN (as rxe does)"},
	{DefAckOvertakesRead, []string{"C9-101"},
		"an ACK for a SEND/WRITE that followed a READ leaves before the READ's response stream has finished"},
	{DefDupMovesEPSN, []string{"C9-103"},
		"a duplicate request moves the expected PSN to the duplicate's PSN + 1"},
	{DefDupNewestFirst, []string{"C9-104", "C9-110"},
		"duplicates waiting for an answer are answered newest first, and an older duplicate never preempts the answer being streamed"},
	{DefDupSendReexecuted, []string{"C9-105"},
		"a duplicate SEND is executed again: it consumes a receive WQE, bumps the MSN and is ACKed with its own PSN"},
	{DefDupErrorNAK, []string{"C9-106", "C9-115"},
		"an error while answering a duplicate READ (invalid R_Key, RETH outside the original) is NAKed remote access instead of being dropped"},
	{DefDupReadDropped, []string{"C9-107"},
		"duplicate READs are silently dropped instead of being executed again"},
	{DefReadReplayMiddle, []string{"C9-107"},
		"a partial duplicate READ's replay starts with a Middle (or Last) opcode, as rxe's responder is suspected to do"},
	{DefDupAtomicReexecuted, []string{"o9-66"},
		"a duplicate ATOMIC is executed again and returns the new original value"},
	{DefDupAtomicUnknownNAK, []string{"o9-67"},
		"a duplicate ATOMIC with no saved result is answered with a NAK invalid request instead of being dropped"},
	{DefNAKSeqReceivedPSN, []string{"C9-111", "C9-121"},
		"a PSN sequence error NAK carries the received packet's PSN instead of the expected PSN"},
	{DefNAKInvReqReceivedPSN, []string{"C9-111", "C9-125"},
		"the opcode sequence is checked before the PSN, and an invalid-request NAK carries the received packet's PSN: an invalid Middle/Last arriving ahead of the expected PSN after a valid First is NAKed invalid request with its own PSN"},
	{DefRNRNAKWrongPSN, []string{"C9-113"},
		"an RNR NAK carries the refused request's PSN + 1"},
	{DefNAKInReadResponse, []string{"C9-113.a1"},
		"a READ failing mid-stream is NAKed in a READ Response opcode (First/Last/Only) carrying the NAK syndrome, not an Acknowledge"},
	{DefNAKLatchOff, []string{"C9-114", "C9-122"},
		"no NAK latch: every out-of-sequence packet gets its own sequence NAK"},
	{DefAckReqIgnored, []string{"C9-116"},
		"AckReq on a SEND/WRITE gets no response unless something else forces one"},
	{DefAccessNAKExpectedPSN, []string{"C9-124"},
		"a remote access NAK carries the PSN of the message's first packet, not the offending packet's PSN"},
	{DefMSNReadSkipped, []string{"C9-148"},
		"the MSN is not incremented for READs"},
	{DefMSNDupBump, []string{"C9-148"},
		"duplicates bump the MSN"},
	{DefNAKMSNZero, []string{"C9-149"},
		"NAKs and RNR NAKs carry MSN 0"},
	{DefCreditsInvalidNoSRQ, []string{"C9-150.2.1"},
		"a QP without an SRQ sends credit code 0x1F (no valid credits), as rxe does"},
	{DefSRQCredits, []string{"o9-95.2.2"},
		"a QP on an SRQ advertises credit counts from the SRQ's depth instead of 0x1F"},
	{DefSyndromeReservedBit, []string{"§9.7.5.2"},
		"ACK syndromes have the reserved bit 7 set"},
	{DefNAKCodeReserved, []string{"§9.7.5.2"},
		"a remote operational error is sent with the reserved NAK code 5"},
	{DefUnsolicitedNAKRepeat, []string{"§9.7.7.2"},
		"the responder re-sends its last NAK unsolicited a while later"},
	{DefRetryBeforeTimeout, []string{"C9-140"},
		"the requester retransmits after half the ACK timeout"},
	{DefRetryTimeoutZero, []string{"C9-140"},
		"the requester retransmits even with timeout 0 (no timer), after a 1 ms default"},
	{DefRetryCountPlusOne, []string{"retry-counter"},
		"the requester retries once more than RetryCnt allows"},
	{DefRNRCostsRetry, []string{"retry-counter", "rnr-retry"},
		"one counter for loss and RNR: RNR NAKs spend the transport retry counter"},
	{DefRNRResendEarly, []string{"rnr-retry"},
		"after an RNR NAK the requester resends after half the advertised delay"},
	{DefRNRRetry7Finite, []string{"rnr-retry"},
		"RNR retry count 7 is treated as seven retries instead of infinite"},
	{DefGBNNewPSN, []string{"go-back-n"},
		"go-back-N resends with fresh PSNs instead of the original ones"},
	{DefGBNSkipOne, []string{"go-back-n"},
		"go-back-N resumes one PSN after the oldest unacknowledged (or NAKed) PSN"},
	{DefImpliedNAKIgnored, []string{"§9.7.5.1.2"},
		"an ACK whose PSN passes an outstanding READ completes the READ as if it had been answered"},
	{DefRetryAfterFatalNAK, []string{"§9.9.2.2"},
		"a remote access, invalid request or remote operational NAK is retried like a sequence NAK"},
	{DefTooManyReadsRNR, []string{"Table-58"},
		"more outstanding READ/ATOMIC requests than the responder resources get an RNR NAK instead of NAK invalid request"},
	{DefTooManyReadsServed, []string{"Table-58"},
		"more outstanding READ/ATOMIC requests than the responder resources are served (as rxe does)"},
}

func init() {
	sort.Slice(defects, func(i, j int) bool { return defects[i].Name < defects[j].Name })
}

// Defects returns the catalogue of defects, sorted by name.
func Defects() []Defect {
	out := make([]Defect, len(defects))
	for i, d := range defects {
		out[i] = d
		out[i].Clauses = append([]string(nil), d.Clauses...)
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
