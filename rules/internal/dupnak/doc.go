// Package dupnak holds what the "duplicates and NAKs" group of rules
// shares beyond the reconstruction (harness/receive, the responder's
// receive side):
//
//   - the passive monitors that groups of clauses with one shared meaning
//     register once per clause ID (C9-104/C9-110, C9-106/C9-115,
//     C9-111/C9-121/C9-125, C9-114/C9-122), on the Checker that feeds
//     each judge the receive model's events;
//   - helpers for the group's active scenarios and for the monitors'
//     plain Go tests (hand-built traces).
package dupnak
