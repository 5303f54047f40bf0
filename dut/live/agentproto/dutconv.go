package agentproto

import (
	"fmt"
	"strings"

	"github.com/rcconform/rcconform/dut"
)

var wrOps = []struct {
	name string
	op   dut.Op
}{
	{WRSend, dut.OpSend}, {WRSendImm, dut.OpSendImm}, {WRSendInv, dut.OpSendInv},
	{WRWrite, dut.OpWrite}, {WRWriteImm, dut.OpWriteImm}, {WRRead, dut.OpRead},
	{WRCmpSwap, dut.OpCmpSwap}, {WRFetchAdd, dut.OpFetchAdd},
}

// OpName returns the protocol name of a work request operation.
func OpName(op dut.Op) string {
	for _, o := range wrOps {
		if o.op == op {
			return o.name
		}
	}
	return fmt.Sprintf("op-%d", op)
}

// ParseOp returns the operation a protocol name stands for.
func ParseOp(name string) (dut.Op, bool) {
	for _, o := range wrOps {
		if o.name == name {
			return o.op, true
		}
	}
	return 0, false
}

var statuses = []struct {
	name string
	st   dut.Status
}{
	{StatusSuccess, dut.StatusSuccess}, {StatusRetryExceeded, dut.StatusRetryExceeded},
	{StatusRNRRetryExc, dut.StatusRNRRetryExceeded}, {StatusRemAccessErr, dut.StatusRemoteAccessError},
	{StatusRemInvReqErr, dut.StatusRemoteInvalidRequest}, {StatusRemOpErr, dut.StatusRemoteOperationalError},
	{StatusFlushed, dut.StatusFlushed}, {StatusLocalErr, dut.StatusLocalError},
}

// StatusName returns the protocol name of a completion status.
func StatusName(s dut.Status) string {
	for _, x := range statuses {
		if x.st == s {
			return x.name
		}
	}
	return fmt.Sprintf("%sstatus-%d", StatusOtherErrPrefix, s)
}

// ParseStatus returns the completion status a protocol name stands for;
// statuses the harness has no name for (the "err:" ones) are local errors.
func ParseStatus(name string) (dut.Status, bool) {
	for _, x := range statuses {
		if x.name == name {
			return x.st, true
		}
	}
	if strings.HasPrefix(name, StatusOtherErrPrefix) {
		return dut.StatusLocalError, true
	}
	return 0, false
}

// FromDUTWR converts a harness work request to the protocol's.
func FromDUTWR(w dut.WR) WR {
	return WR{ID: w.ID, Op: OpName(w.Op), Data: w.Data, Length: w.Length, RemoteAddr: w.RemoteVA, RKey: w.RKey,
		Imm: w.Imm, CompareAdd: w.CompareAdd, Swap: w.Swap}
}

// ToDUTWR converts a protocol work request to the harness's.
func ToDUTWR(w WR) (dut.WR, error) {
	op, ok := ParseOp(w.Op)
	if !ok {
		return dut.WR{}, Errorf(CodeBadRequest, "unknown work request op %q", w.Op)
	}
	return dut.WR{ID: w.ID, Op: op, Data: w.Data, Length: w.Length, RemoteVA: w.RemoteAddr, RKey: w.RKey, Imm: w.Imm,
		CompareAdd: w.CompareAdd, Swap: w.Swap}, nil
}

// FromDUTCompletion converts a harness completion to the protocol's.
func FromDUTCompletion(c dut.Completion) Completion {
	pc := Completion{WRID: c.ID, Op: OpName(c.Op), Recv: c.Recv, Status: StatusName(c.Status), Bytes: c.Bytes, Imm: c.Imm}
	pc.HasImm = c.Op == dut.OpSendImm || c.Op == dut.OpWriteImm || c.Op == dut.OpSendInv
	if c.Recv && c.Status == dut.StatusFlushed && c.Op == dut.OpSend {
		pc.Op = WRRecv
	}
	return pc
}

// ToDUTCompletion converts a protocol completion to the harness's.
func ToDUTCompletion(c Completion) (dut.Completion, error) {
	st, ok := ParseStatus(c.Status)
	if !ok {
		return dut.Completion{}, fmt.Errorf("completion of WR %d: unknown status %q", c.WRID, c.Status)
	}
	op := dut.OpSend
	if c.Op != WRRecv {
		if op, ok = ParseOp(c.Op); !ok {
			return dut.Completion{}, fmt.Errorf("completion of WR %d: unknown op %q", c.WRID, c.Op)
		}
	}
	return dut.Completion{ID: c.WRID, Op: op, Recv: c.Recv, Status: st, Bytes: c.Bytes, Imm: c.Imm}, nil
}
