// Package reports holds the one result model that every rcconform run
// produces, suite runs against a DUT and audits of captures alike, and the
// renderers that present it.
//
// A [Result] lists the clauses that were considered, each with a [Verdict]
// (pass, fail, not exercised, indeterminate, unsupported, text unavailable),
// and the [Finding]s behind every failure. A finding says what the clause
// asks in our words, every outcome that would have been acceptable, what was
// seen instead, and the exchange around it as a ladder of [Rung]s, one per
// packet.
//
// A result also carries the run's certificate ([Run]: the suite's version
// and commit, the date, what the DUT declared, the settings; each
// capture's SHA-256) and, for every clause result but a pass, its
// evidence in one line ([Result.EvidenceOf]); [Result.Certificate] puts
// them on one page, which every renderer shows first.
//
// JSON is the source of truth: [Result.WriteJSON] and [ReadJSON] follow the
// contract users' tools rely on, which TestJSONContract pins (captures,
// clauses and findings are always present, as empty lists when there are
// none). The other formats render
// from the same Result:
//
//   - [WriteJUnit]: JUnit XML keyed to clause numbers (testcase classname =
//     clause ID, section, side, level, verdict, checked, violations and
//     undecided as properties), for CI.
//   - [WriteHTML]: one self-contained page with a verdict table, filters and
//     the violations grouped by kind, each kind a collapsible block with its
//     first instances drawn as SVG sequence diagrams, for people; it stays
//     within about [HTMLLimit] bytes.
//   - [WriteMarkdown]: a summary for pull-request comments that always fits
//     one ([MarkdownLimit] characters).
//
// Every renderer groups findings the same way, by clause result and kind
// ([GroupFindings], [KindOf]): a device that breaks a rule on every packet
// shows one kind with its count, first and last instance and the first few
// instances in full, not hundreds of copies. The grouping depends only on
// the set of findings, so reports are the same from run to run.
//   - [LadderText]: the fixed-width text ladder used in failure messages.
package reports
