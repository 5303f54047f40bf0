package c9_112

import (
	"github.com/rcconform/rcconform/rules/internal/responses"
	"github.com/rcconform/rcconform/rules/rulekit"
)

// C9-112, in our words (one meaning shared with C9-100, which the
// specification's Response Generation text does not split): when an RDMA READ
// fails after part of its response has gone out, none of the faulty data is
// sent; the packet that would have carried it goes out as an Acknowledge with
// a NAK syndrome and that packet's PSN, and nothing more of the response
// follows. The scenarios (shared with C9-100) stream long READs at several
// MTUs, across the 2^24 wrap, and invalidate the device's region after 0, 1,
// a few and nearly all of the response packets.

var _ = rulekit.Rule(ID, func(r *rulekit.R) { responses.MidStreamScenarios(r) })
