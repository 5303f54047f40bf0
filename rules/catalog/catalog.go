// Package catalog is rcconform's catalogue of every rule it knows: the
// Reliable Connection transport clauses of IBTA Volume 1 Release 1.2.1
// (carried over to RoCEv2 by Annex A17) that the suite checks, plus the
// behaviours that have no public clause number and are therefore keyed by
// section, table or topic.
//
// The catalogue is the project's own paraphrase of those clauses; where
// the text is not public or leaves a choice open, docs/interpretations.md
// says what the suite reads into it. Entries appear in catalogue order:
// first the clauses of §9.7.5 and §9.7.7 in the order they stand in
// their sections (C9-95 … o9-95.2.2), then the section-keyed rules and
// the requester's retry machinery (including C9-140, the only public
// clause number in that area).
//
// Two rules govern the data:
//
//   - A clause whose text is not public has Status TextUnavailable, an empty
//     Text and no Needs. Its Summary names only the topic suggested by the
//     numbering. No check may ever be attributed to it.
//   - A behaviour without a public clause number is keyed by its section or
//     table (e.g. "§9.9.2.2", "Table-58") or by a topic key
//     ("retry-counter"), never by an invented clause number.
//
// All text in this package is rcconform's own wording; the IBTA
// specification remains the authority.
package catalog

import (
	"slices"
	"strings"
)

// Side says which end of the connection a rule constrains.
type Side string

// Sides.
const (
	Responder Side = "responder"
	Requester Side = "requester"
	// Unknown is used for clauses whose text is not public and whose side
	// not even their section's topic suggests.
	Unknown Side = "unknown"
)

// Level says whether a rule binds every device or only devices that
// implement the feature concerned.
type Level string

// Levels.
const (
	Mandatory Level = "mandatory" // a C9-nn compliance statement, or a section-keyed rule
	Optional  Level = "optional"  // an o9-nn statement: binds only if the feature is implemented
)

// Status says how much of a rule's meaning the project actually has.
type Status string

// Statuses.
const (
	// Paraphrased: the clause's meaning is known and stated in our words.
	Paraphrased Status = "paraphrased"
	// SharedMeaning: the source gives one meaning for a group of clause
	// numbers without saying which number states which part; see
	// Entry.SharedWith.
	SharedMeaning Status = "shared-meaning"
	// TextUnavailable: the clause's text is not public. Report it as
	// "text unavailable"; never invent its content or attribute a check.
	TextUnavailable Status = "text-unavailable"
	// SectionKeyed: a behaviour with no public clause number, keyed by its
	// section, table or topic instead.
	SectionKeyed Status = "section-keyed"
)

// Capabilities named in Entry.Needs.
const (
	NeedAtomics = "atomics" // the DUT must support ATOMIC operations
	NeedSRQ     = "srq"     // the DUT must support shared receive queues
)

// Entry is one rule of the catalogue.
type Entry struct {
	// ID is the clause number ("C9-95", "o9-66", "C9-113.a1",
	// "C9-150.2.1", "o9-95.2.2") or, for rules without a public number,
	// a section, table or topic key ("§9.9.2.2", "Table-58",
	// "retry-counter").
	ID string
	// Section is where the rule sits, e.g. "§9.7.5.1.1". An inferred
	// section says so; "unknown" (possibly with a note) where not known.
	Section string
	// Side is the end of the connection the rule constrains.
	Side Side
	// Level is mandatory or optional.
	Level Level
	// Status says how much of the rule's meaning is known.
	Status Status
	// Summary is a one-line statement of the rule in our own words. For a
	// text-unavailable clause it names only the topic inferred from the
	// numbering.
	Summary string
	// Text is the rule in our own words, one to four sentences, for use in
	// failure messages. It is empty for text-unavailable clauses.
	Text string
	// SharedWith lists the other IDs of a shared-meaning group.
	SharedWith []string
	// Needs lists the capabilities a DUT must have for the rule to be
	// exercised (NeedAtomics, NeedSRQ); empty if none.
	Needs []string
}

// tuPrefix starts the Summary of every text-unavailable clause.
const tuPrefix = "text not public; topic inferred from numbering: "

// unavailable builds the entry of a clause whose text is not public.
func unavailable(id, section string, side Side, topic string) Entry {
	return Entry{
		ID:      id,
		Section: section,
		Side:    side,
		Level:   Mandatory,
		Status:  TextUnavailable,
		Summary: tuPrefix + topic,
	}
}

// entries is the catalogue, in catalogue order. Never hand it out directly.
var entries = []Entry{
	// ---- Clauses of §9.7.5 and §9.7.7, in the order of their sections ----

	// §9.7.5.1.1 response PSNs
	{
		ID: "C9-95", Section: "§9.7.5.1.1", Side: Responder, Level: Mandatory, Status: Paraphrased,
		Summary: "An ACK for SEND/WRITE requests carries the PSN of the newest new request it covers; coalesced ACK PSNs may skip values.",
		Text: "When the responder acknowledges SEND or RDMA WRITE requests, the BTH PSN of the Acknowledge packet must be the PSN of the most recent new request that the ACK covers. " +
			"Because one ACK may cover several requests, successive ACK PSNs need not be consecutive.",
	},
	{
		ID: "C9-96", Section: "§9.7.5.1.1", Side: Responder, Level: Mandatory, Status: Paraphrased,
		Summary: "RDMA READ response packets are numbered from the READ request's own PSN, one PSN per packet, modulo 2^24.",
		Text: "The response packets of an RDMA READ must use consecutive PSNs, the first equal to the READ request's PSN and each later one greater by one, modulo 2^24. " +
			"These are exactly the PSNs the requester set aside for the response when it issued the READ.",
	},
	{
		ID: "o9-58", Section: "§9.7.5.1.1", Side: Responder, Level: Optional, Status: Paraphrased,
		Summary: "An Atomic Acknowledge carries the PSN of the ATOMIC request it answers; an ATOMIC occupies a single PSN.",
		Text: "On a device that supports atomics, the Atomic Acknowledge that answers a Compare & Swap or Fetch & Add must carry that request's PSN in its BTH. " +
			"An ATOMIC request consumes exactly one PSN.",
		Needs: []string{NeedAtomics},
	},

	// §9.7.5.1.3 READ responses
	{
		ID: "C9-97", Section: "§9.7.5.1.3", Side: Responder, Level: Mandatory, Status: SharedMeaning,
		Summary: "The first (or only) READ response packet carries an AETH, which also implicitly acknowledges earlier SENDs/WRITEs.",
		Text: "The first packet of an RDMA READ response, or its only packet, must include an AETH. " +
			"That AETH also serves as an implicit acknowledgment of every earlier SEND or WRITE still outstanding. " +
			"Given jointly with C9-98; assigning the first-packet half to C9-97 is inferred from word order.",
		SharedWith: []string{"C9-98"},
	},
	{
		ID: "C9-98", Section: "§9.7.5.1.3", Side: Responder, Level: Mandatory, Status: SharedMeaning,
		Summary: "The last READ response packet also carries an AETH, acknowledging the READ itself; Middle packets carry none.",
		Text: "The last packet of a multi-packet RDMA READ response must include an AETH as well, and that AETH acknowledges the READ itself; Middle packets carry no AETH. " +
			"Given jointly with C9-97; assigning the last-packet half to C9-98 is inferred from word order.",
		SharedWith: []string{"C9-97"},
	},
	unavailable("C9-99", "§9.7.5.1.3", Responder, "READ responses (§9.7.5.1.3)"),
	{
		ID: "C9-100", Section: "§9.7.5.1.3", Side: Responder, Level: Mandatory, Status: SharedMeaning,
		Summary: "A READ that fails after part of its response was sent ends with an Acknowledge-opcode NAK replacing the refused response packet, at that packet's PSN.",
		Text: "If the responder detects an error after some packets of an RDMA READ response have been sent, it must send none of the faulty data. " +
			"The packet that would have carried that data goes out instead as an Acknowledge (opcode 0x11) with a NAK syndrome, and its PSN is the PSN of the response packet it replaces. " +
			"Given jointly with C9-112; which clause states which part is not known.",
		SharedWith: []string{"C9-112"},
	},
	{
		ID: "C9-101", Section: "§9.7.5.1.3", Side: Responder, Level: Mandatory, Status: Paraphrased,
		Summary: "Requests that follow a READ may be executed early but must not be acknowledged before that READ's response has been sent.",
		Text: "A responder may start executing SEND or WRITE requests that arrived after an RDMA READ, but it must not send an acknowledgment covering them until the READ's response has been transmitted. " +
			"An ACK whose PSN lies beyond an outstanding READ tells the requester that the READ was implicitly NAKed.",
	},

	// §9.7.5.1.4 duplicates
	unavailable("C9-102", "§9.7.5.1.4", Responder, "duplicate requests (§9.7.5.1.4)"),
	{
		ID: "C9-103", Section: "§9.7.5.1.4", Side: Responder, Level: Mandatory, Status: Paraphrased,
		Summary: "Handling a duplicate request never changes the responder's expected PSN.",
		Text:    "Answering a duplicate request, one whose PSN is behind the responder's expected PSN, must leave the expected PSN exactly where it was.",
	},
	{
		ID: "C9-104", Section: "§9.7.5.1.4", Side: Responder, Level: Mandatory, Status: SharedMeaning,
		Summary: "Duplicate requests are answered in PSN order, oldest first.",
		Text: "The responder must answer duplicate requests in PSN order, beginning with the oldest. " +
			"Given jointly with C9-110; which half of the rule each clause states is not known.",
		SharedWith: []string{"C9-110"},
	},
	{
		ID: "C9-105", Section: "§9.7.5.1.4", Side: Responder, Level: Mandatory, Status: Paraphrased,
		Summary: "A duplicate SEND or WRITE is not executed again; it is answered by an ACK carrying the PSN of the most recently completed new request.",
		Text: "A duplicate SEND or RDMA WRITE must not be executed a second time. " +
			"The responder answers it with an ACK whose PSN is that of the most recently completed new request, which tells the requester that everything up to that PSN is done.",
	},
	{
		ID: "C9-106", Section: "§9.7.5.1.4", Side: Responder, Level: Mandatory, Status: SharedMeaning,
		Summary: "An error met while answering a duplicate is never reported with a NAK; the duplicate is dropped silently.",
		Text: "If the responder hits an error while answering a duplicate request, it must not send a NAK; it drops the duplicate silently instead, because a NAK about an old request could be taken for one about a new request. " +
			"Given jointly with C9-115; which clause states which part is not known.",
		SharedWith: []string{"C9-115"},
	},
	{
		ID: "C9-107", Section: "§9.7.5.1.4", Side: Responder, Level: Mandatory, Status: Paraphrased,
		Summary: "A duplicate READ is executed again: memory is re-read and the response restarts at the duplicate's PSN.",
		Text: "A duplicate RDMA READ must be carried out again: the data is fetched from memory anew and the response stream starts at the duplicate request's PSN. " +
			"This is possible only while the responder still holds the original READ's PSN range in its READ resources.",
	},
	unavailable("C9-108", "§9.7.5.1.4", Responder, "duplicate requests (§9.7.5.1.4)"),
	unavailable("C9-109", "§9.7.5.1.4", Responder, "duplicate requests (§9.7.5.1.4)"),
	{
		ID: "C9-110", Section: "§9.7.5.1.4", Side: Responder, Level: Mandatory, Status: SharedMeaning,
		Summary: "Requests are answered logically earliest first; a logically earlier duplicate that arrives mid-answer preempts the current response.",
		Text: "The responder answers requests strictly in PSN order, logically earliest first. " +
			"If a duplicate with a logically earlier PSN arrives while it is still answering another request, new or duplicate, it abandons that answer and starts answering the earlier request. " +
			"Given jointly with C9-104; which half of the rule each clause states is not known.",
		SharedWith: []string{"C9-104"},
	},
	{
		ID: "o9-66", Section: "§9.7.5.1.4", Side: Responder, Level: Optional, Status: Paraphrased,
		Summary: "A duplicate ATOMIC that matches a saved result gets the saved original value back and is not executed again.",
		Text: "On a device that supports atomics, a duplicate ATOMIC request must never be executed a second time. " +
			"When its PSN matches a saved ATOMIC result, the responder returns the original value it saved the first time.",
		Needs: []string{NeedAtomics},
	},
	{
		ID: "o9-67", Section: "§9.7.5.1.4", Side: Responder, Level: Optional, Status: Paraphrased,
		Summary: "A duplicate ATOMIC whose PSN matches no saved result is dropped with neither an Atomic Acknowledge nor a NAK.",
		Text: "On a device that supports atomics, a duplicate ATOMIC whose PSN is not among the saved results (for example because its resource has been reused) must be dropped. " +
			"The responder neither executes it nor answers it, with an Atomic Acknowledge or with a NAK.",
		Needs: []string{NeedAtomics},
	},

	// §9.7.5.1.5 NAKs
	{
		ID: "C9-111", Section: "§9.7.5.1.5", Side: Responder, Level: Mandatory, Status: SharedMeaning,
		Summary: "A NAK for a PSN sequence error or an invalid request carries the responder's expected PSN.",
		Text: "A NAK that reports a PSN sequence error (code 0) or an invalid request (code 1) must carry the responder's expected PSN in its BTH, so the requester knows where to resume. " +
			"Given jointly with C9-121 and C9-125; taking C9-111 as the general rule and the other two as its cases is inferred.",
		SharedWith: []string{"C9-121", "C9-125"},
	},
	{
		ID: "C9-112", Section: "§9.7.5.1.5", Side: Responder, Level: Mandatory, Status: SharedMeaning,
		Summary: "Same meaning as C9-100: a READ failing mid-response is NAKed by an Acknowledge packet at the refused response packet's PSN.",
		Text: "Shares its meaning with C9-100: when an RDMA READ fails part-way through its response, no faulty data is sent, and the refused response packet is replaced by an Acknowledge-opcode NAK that carries the refused packet's PSN. " +
			"Which clause states which part is not known.",
		SharedWith: []string{"C9-100"},
	},
	{
		ID: "C9-113", Section: "§9.7.5.1.5", Side: Responder, Level: Mandatory, Status: Paraphrased,
		Summary: "An RNR NAK carries the PSN of the request it refuses.",
		Text:    "When the responder refuses a request with an RNR NAK, for instance a SEND that finds no receive WQE, the NAK's BTH PSN must be the PSN of the refused request.",
	},
	{
		ID: "C9-113.a1", Section: "§9.7.5.1.5 or §9.7.5.1.7 (inferred)", Side: Responder, Level: Mandatory, Status: Paraphrased,
		Summary: "Every NAK is an Acknowledge packet (opcode 0x11) with a NAK syndrome, never a READ response or Atomic Acknowledge.",
		Text: "A NAK is not a response format of its own: it is always sent as an Acknowledge packet (opcode 0x11) whose AETH syndrome is of a NAK kind. " +
			"This holds even where the NAK takes the place of an RDMA READ response packet, so READ response and Atomic Acknowledge packets carry only ACK-kind syndromes.",
	},
	{
		ID: "C9-114", Section: "§9.7.5.1.5", Side: Responder, Level: Mandatory, Status: SharedMeaning,
		Summary: "After a sequence-error NAK the responder uses no receive WQE and ignores new requests, with no further sequence NAK, until the expected PSN arrives; duplicates are still answered.",
		Text: "After sending a PSN-sequence-error NAK, the responder must consume no receive WQE for the out-of-sequence request and must disregard every new request until one arrives with exactly the expected PSN. " +
			"Meanwhile it sends no further sequence-error NAK, yet it goes on answering duplicates. " +
			"Given jointly with C9-122; which clause states which part is not known.",
		SharedWith: []string{"C9-122"},
	},
	{
		ID: "C9-115", Section: "§9.7.5.1.5", Side: Responder, Level: Mandatory, Status: SharedMeaning,
		Summary: "Same meaning as C9-106: an error while answering a duplicate is never NAKed; the duplicate is dropped.",
		Text: "Shares its meaning with C9-106: a responder that meets an error while servicing a duplicate request drops the duplicate silently and never reports the error with a NAK. " +
			"Which clause states which part is not known.",
		SharedWith: []string{"C9-106"},
	},

	// §9.7.5.1.6 AckReq scheduling
	{
		ID: "C9-116", Section: "§9.7.5.1.6", Side: Responder, Level: Mandatory, Status: Paraphrased,
		Summary: "A valid request with AckReq set must get a response scheduled at its PSN or later; without AckReq the response may be deferred.",
		Text: "For a valid request whose BTH AckReq bit is set, the responder must schedule a response carrying that request's PSN or a later one. " +
			"Without AckReq it may defer acknowledging for as long as it likes, which is what makes coalescing possible. " +
			"AckReq has no bearing on READ and ATOMIC requests, which always receive an explicit response.",
	},
	unavailable("C9-117", "§9.7.5.1.6 or §9.7.5.1.7 (inferred)", Unknown, "AckReq scheduling and response formats (§9.7.5.1.6–§9.7.5.1.7)"),
	unavailable("C9-118", "§9.7.5.1.6 or §9.7.5.1.7 (inferred)", Unknown, "AckReq scheduling and response formats (§9.7.5.1.6–§9.7.5.1.7)"),

	// §9.7.5.2 AETH
	unavailable("C9-119", "§9.7.5.2", Unknown, "AETH syndrome and MSN encoding (§9.7.5.2, Tables 43 and 44)"),
	unavailable("C9-120", "§9.7.5.2", Unknown, "AETH syndrome and MSN encoding (§9.7.5.2, Tables 43 and 44)"),
	{
		ID: "C9-121", Section: "§9.7.5.2", Side: Responder, Level: Mandatory, Status: SharedMeaning,
		Summary: "A PSN-sequence-error NAK carries the responder's expected PSN.",
		Text: "A NAK with code 0 (PSN sequence error) must carry the responder's expected PSN in its BTH. " +
			"Given jointly with C9-111 and C9-125; taking C9-121 as the sequence-error case is inferred.",
		SharedWith: []string{"C9-111", "C9-125"},
	},
	{
		ID: "C9-122", Section: "§9.7.5.2", Side: Responder, Level: Mandatory, Status: SharedMeaning,
		Summary: "Only one sequence-error NAK may be outstanding: after one, none until a request with the expected PSN arrives.",
		Text: "At most one PSN-sequence-error NAK may be outstanding: once the responder has sent one, it sends no other sequence-error NAK until a request carrying the expected PSN arrives. " +
			"Given jointly with C9-114; which clause states which part is not known.",
		SharedWith: []string{"C9-114"},
	},
	unavailable("C9-123", "§9.7.5.2", Unknown, "AETH NAK codes (§9.7.5.2)"),
	{
		ID: "C9-124", Section: "§9.7.5.2", Side: Responder, Level: Mandatory, Status: Paraphrased,
		Summary: "A remote-access-error NAK carries the PSN of the offending request packet, not the expected PSN.",
		Text:    "A NAK with code 2 (remote access error) must carry in its BTH the PSN of the request packet that caused the error, rather than the responder's expected PSN.",
	},
	{
		ID: "C9-125", Section: "§9.7.5.2", Side: Responder, Level: Mandatory, Status: SharedMeaning,
		Summary: "An invalid-request NAK carries the responder's expected PSN.",
		Text: "A NAK with code 1 (invalid request) must carry the responder's expected PSN in its BTH. " +
			"Given jointly with C9-111 and C9-121; taking C9-125 as the invalid-request case is inferred.",
		SharedWith: []string{"C9-111", "C9-121"},
	},
	unavailable("C9-126", "§9.7.5.2", Unknown, "the AETH (§9.7.5.2)"),

	// §9.7.7.1 MSN generation
	{
		ID: "C9-148", Section: "§9.7.7.1", Side: Responder, Level: Mandatory, Status: Paraphrased,
		Summary: "The MSN rises by one per completed new request and never for a duplicate; for a READ the responder picks validation time or after the data is sent.",
		Text: "The responder increments the MSN once for every new request message it completes, and never for a duplicate. " +
			"For an RDMA READ it may choose the moment: as soon as the request is validated, so the first response packet already shows the new MSN, or once all the data has been sent, so only the last packet does.",
	},
	{
		ID: "C9-149", Section: "§9.7.7.1", Side: Responder, Level: Mandatory, Status: Paraphrased,
		Summary: "The MSN field is valid in every AETH, NAKs and RNR NAKs included.",
		Text:    "Every AETH the responder sends must carry a valid MSN, whatever its syndrome: ACK, RNR NAK or NAK.",
	},

	// §9.7.7.2 end-to-end credits
	{
		ID: "C9-150.2.1", Section: "§9.7.7.2", Side: Responder, Level: Mandatory, Status: Paraphrased,
		Summary: "An HCA must generate end-to-end credits in the ACK syndrome of every QP that is not attached to an SRQ.",
		Text: "On every QP that does not take its receive WQEs from a shared receive queue, an HCA must put end-to-end credits in the low five bits of its ACK syndromes instead of the 0x1F \"no valid count\" code. " +
			"The credits tell the requester how many more request messages the receive queue can accept, counted in posted receive WQEs.",
	},
	{
		ID: "o9-95.2.2", Section: "§9.7.7.2", Side: Responder, Level: Optional, Status: Paraphrased,
		Summary: "A QP attached to an SRQ sends credit code 0x1F (\"not valid\") in its ACKs.",
		Text: "A QP whose receive WQEs come from a shared receive queue cannot know how much of the shared pool is its own share. " +
			"Every ACK it sends must therefore carry credit code 0x1F, meaning that no valid credit count is given.",
		Needs: []string{NeedSRQ},
	},

	// ---- Section-keyed rules and the requester's retry machinery ----
	{
		ID: "§9.7.5.1.5", Section: "§9.7.5.1.5", Side: Responder, Level: Mandatory, Status: SectionKeyed,
		Summary: "A request the responder cannot execute (longer than the path MTU, a reserved opcode, a SEND with Invalidate of a key it cannot invalidate) gets a NAK invalid request, never a positive ACK or silence.",
		Text: "A request that arrives at the expected PSN but cannot be executed, such as a SEND or RDMA WRITE packet carrying more than the path MTU, an RC opcode that is reserved, or a SEND with Invalidate naming an R_Key the responder cannot invalidate, must be answered with a NAK invalid request (NAK code 1). " +
			"It is never acknowledged positively, as if it had been executed, nor dropped without an answer. " +
			"The section states this, with the responder error summary of Table 58, without a public clause number; the PSN the NAK carries is C9-125's matter.",
	},
	{
		ID: "§9.7.5.2", Section: "§9.7.5.2", Side: Responder, Level: Mandatory, Status: SectionKeyed,
		Summary: "AETH format: syndrome bit 7 is reserved zero, syndrome kind 10 is reserved, NAK codes 4–31 are reserved on RC.",
		Text: "In every AETH, bit 7 of the syndrome is reserved and must be zero, and bits 6:5 must not hold the reserved kind 10. " +
			"On an RC QP a NAK syndrome may carry only NAK codes 0–3, since codes 4–31 are reserved there. " +
			"These format facts are stated by the section and tied to no clause number.",
	},
	{
		ID: "§9.7.7.2", Section: "§9.7.7.2", Side: Responder, Level: Mandatory, Status: SectionKeyed,
		Summary: "Unsolicited ACK: a responder may re-send its latest positive ACK with updated credits, but never re-send a NAK.",
		Text: "With nothing new to acknowledge, a responder may repeat its most recent positive acknowledgment with a refreshed credit field (an unsolicited acknowledgment). " +
			"It must never do so from a NAK, because a duplicate NAK is not allowed. " +
			"A repeated ACK with the same PSN and a different credit code is therefore legal.",
	},
	{
		ID: "C9-140", Section: "§9.7.6 (sub-section not confirmed)", Side: Requester, Level: Mandatory, Status: Paraphrased,
		Summary: "The transport (local ACK) timer interval is 4.096 µs × 2^timeout for a 5-bit timeout; a timeout of 0 disables the timer.",
		Text: "The requester's transport timer, armed when a request is sent, expires after 4.096 µs × 2^timeout, where timeout is the 5-bit local ACK timeout (0..31). " +
			"A timeout of 0 disables the timer, so no timer-driven retransmission may happen.",
	},
	{
		ID: "retry-counter", Section: "unknown (the Retry and RNR Timeout State Machines text)", Side: Requester, Level: Mandatory, Status: SectionKeyed,
		Summary: "One 3-bit transport retry counter pays for both timeouts and sequence-error NAKs; exhaustion gives retry-exceeded and QP ERROR; RNR NAKs never touch it.",
		Text: "The requester keeps a single 3-bit transport retry counter, and each local ACK timeout and each PSN-sequence-error NAK costs one retry from it. " +
			"When no retries remain, the WQE completes with a transport-retry-counter-exceeded error and the QP moves to ERROR. " +
			"RNR NAKs are charged to a different counter and never decrement this one. " +
			"The count has no special value: retries go on while it is above zero, so 7 allows seven retries (only the RNR retry count's 7 means unlimited).",
	},
	{
		ID: "rnr-retry", Section: "unknown (the Retry and RNR Timeout State Machines text)", Side: Requester, Level: Mandatory, Status: SectionKeyed,
		Summary: "A separate 3-bit RNR retry counter (7 = unlimited) pays for each RNR NAK; resends wait at least the advertised delay; exhaustion gives RNR-retry-exceeded and ERROR.",
		Text: "Each RNR NAK costs one retry from a separate 3-bit RNR retry counter, in which 7 means unlimited; timeouts and sequence-error NAKs never decrement it. " +
			"After an RNR NAK the requester waits at least the delay encoded in the NAK's timer field before resending. " +
			"When no RNR retries remain, the WQE completes with an RNR-retry-counter-exceeded error and the QP moves to ERROR.",
	},
	{
		ID: "go-back-n", Section: "unknown (Go-Back-N Retransmission)", Side: Requester, Level: Mandatory, Status: SectionKeyed,
		Summary: "After a timeout or sequence NAK the requester resends in order from the oldest unacknowledged PSN (or the NAK's PSN) with the same PSNs; a READ may be re-requested as an exact subset.",
		Text: "After a transport timeout the requester resends from its oldest unacknowledged PSN, and after a sequence-error NAK from the PSN the NAK names, continuing in order and giving every packet the PSN it had originally. " +
			"An RDMA READ may be re-requested for just its missing part, starting at the first missing response PSN with the RETH address and length adjusted to match, so that the retry is an exact subset of the original.",
	},
	{
		ID: "§9.7.5.1.2", Section: "§9.7.5.1.2", Side: Requester, Level: Mandatory, Status: SectionKeyed,
		Summary: "Implied NAK: an acknowledgment whose PSN is past an outstanding READ means that READ was NAKed; re-issue it from its first unreceived PSN.",
		Text: "When the requester receives an acknowledgment whose PSN lies beyond an outstanding RDMA READ, that READ has been implicitly NAKed. " +
			"The requester must re-issue the READ, starting from its first response PSN not yet received.",
	},
	{
		ID: "§9.9.2.2", Section: "§9.9.2.2", Side: Requester, Level: Mandatory, Status: SectionKeyed,
		Summary: "Only sequence-error and RNR NAKs are retried; invalid-request, remote-access and remote-operational NAKs are reported at once, the QP goes to ERROR and no counter is used.",
		Text: "Of the NAK kinds, only the PSN sequence error and the RNR NAK are retried automatically. " +
			"A NAK for an invalid request, a remote access error or a remote operational error must be reported to the client on its first occurrence, with no retry; the QP moves to ERROR and neither the transport nor the RNR retry counter is consumed.",
	},
	{
		ID: "Table-58", Section: "§9.9.x (Table 58; exact sub-section not known)", Side: Responder, Level: Mandatory, Status: SectionKeyed,
		Summary: "More outstanding READ/ATOMIC requests than the negotiated responder resources get NAK Invalid Request, not an RNR NAK.",
		Text: "A responder that receives an RDMA READ or ATOMIC request while all of its negotiated responder resources for outstanding READ/ATOMIC requests are in use must answer with a NAK Invalid Request (code 1). " +
			"This is not a receiver-not-ready condition and must not be answered with an RNR NAK.",
	},
}

// byID indexes entries by ID.
var byID = func() map[string]int {
	m := make(map[string]int, len(entries))
	for i, e := range entries {
		m[e.ID] = i
	}
	return m
}()

// clone returns a deep copy of e, so callers cannot modify the catalogue.
func clone(e Entry) Entry {
	e.SharedWith = slices.Clone(e.SharedWith)
	e.Needs = slices.Clone(e.Needs)
	return e
}

// All returns a copy of the whole catalogue, in catalogue order.
func All() []Entry {
	out := make([]Entry, len(entries))
	for i, e := range entries {
		out[i] = clone(e)
	}
	return out
}

// DeviceClauses returns the IDs of the clauses a device playing the
// requester (requester true) or the responder is judged by: those of the
// requester's side, or every other one. An audit of a scenario's trace
// compares only these (the harness plays the other side and breaks its
// rules on purpose).
func DeviceClauses(requester bool) map[string]bool {
	m := map[string]bool{}
	for _, e := range All() {
		if (e.Side == Requester) == requester {
			m[e.ID] = true
		}
	}
	return m
}

// Lookup returns a copy of the entry with exactly the given ID.
func Lookup(id string) (Entry, bool) {
	i, ok := byID[id]
	if !ok {
		return Entry{}, false
	}
	return clone(entries[i]), true
}

// Folder returns the name of the rules/ sub-folder for a rule ID: the ID in
// lower case with every run of non-alphanumeric characters replaced by a
// single "_". A leading "§" is dropped and replaced by the prefix "s".
//
//	"C9-95" -> "c9_95"     "C9-113.a1" -> "c9_113_a1"   "o9-95.2.2" -> "o9_95_2_2"
//	"§9.7.5.2" -> "s9_7_5_2"   "Table-58" -> "table_58"  "retry-counter" -> "retry_counter"
func Folder(id string) string {
	var b strings.Builder
	if rest, ok := strings.CutPrefix(id, "§"); ok {
		b.WriteByte('s')
		id = rest
	}
	inRun := false
	for _, r := range strings.ToLower(id) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			b.WriteRune(r)
			inRun = false
			continue
		}
		if !inRun {
			b.WriteByte('_')
			inRun = true
		}
	}
	return b.String()
}

// Label returns the Ginkgo label that marks specs checking the rule:
// "rule:" followed by the ID.
func Label(id string) string {
	return "rule:" + id
}
