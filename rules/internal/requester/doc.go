// Package requester holds what the requester-side rules' active
// scenarios share: the harness as the responder of a device requester
// (Responder: posting work requests, answering, failing rounds by a
// timeout, a NAK or an RNR NAK, expecting resends and completions), with
// the helpers to build such rounds. The passive model of a requester's
// retries, which the monitors judge, is harness/retries.
package requester
