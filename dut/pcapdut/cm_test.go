package pcapdut

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/google/gopacket/layers"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
	"github.com/rcconform/rcconform/wire/capture"
)

// The CM exchanges below: the requester side of build_test.go (10.0.0.2,
// QP 0x22) is the active side, the responder side (10.0.0.1, QP 0x11) the
// passive one. The REQ announces that the active side expects PSN 500
// first, path MTU 1024, retry count 6, RNR retry 5 (for the passive
// side), local ACK timeout 14, an SRQ on the active side; the REP that the
// passive side expects PSN 100, RNR retry 3 (for the active side), no
// SRQ.
const (
	activeComm  = 0xA0000001
	passiveComm = 0xB0000002
)

func cmREQ() wire.CMMsg {
	return wire.CMMsg{MAD: wire.MADHeader{BaseVersion: 1, ClassVersion: 2, Method: 3, TID: 7}, Kind: wire.CMAttrREQ,
		LocalCommID: activeComm, LocalQPN: 0x22, StartingPSN: 500, ResponderResources: 4, InitiatorDepth: 4,
		RetryCount: 6, RNRRetryCount: 5, PathMTUCode: 3, LocalACKTimeout: 14, SRQ: true, PKey: 0xFFFF}
}

func cmREP() wire.CMMsg {
	return wire.CMMsg{MAD: wire.MADHeader{BaseVersion: 1, ClassVersion: 2, Method: 3, TID: 7}, Kind: wire.CMAttrREP,
		LocalCommID: passiveComm, RemoteCommID: activeComm, LocalQPN: 0x11, StartingPSN: 100,
		ResponderResources: 2, InitiatorDepth: 2, RNRRetryCount: 3}
}

func cmMsg(kind uint16, local, remote uint32) wire.CMMsg {
	return wire.CMMsg{MAD: wire.MADHeader{BaseVersion: 1, ClassVersion: 2, Method: 3}, Kind: kind,
		LocalCommID: local, RemoteCommID: remote, RemoteQPN: 0x11}
}

// madPacket is a UD SEND Only to QP 1 carrying m.
func madPacket(m wire.CMMsg) wire.Packet {
	pl := binary.BigEndian.AppendUint32(nil, 0x80010000)
	pl = binary.BigEndian.AppendUint32(pl, 1)
	pl = wire.AppendCM(pl, &m)
	return wire.Packet{BTH: wire.BTH{Opcode: wire.UDSendOnly, PKey: 0xFFFF, DestQP: wire.GSIQP, PSN: 1}, Payload: pl}
}

// fromActive says a packet goes from the active (requester) side.
type step struct {
	p          wire.Packet
	fromActive bool
}

// roceFrames encodes the steps as RoCEv2 frames (opts may change the
// encapsulation).
func roceFrames(steps []step, opts ...frameOpt) []capFrame {
	var out []capFrame
	for i, s := range steps {
		f := frame(s.p, uint16(i+1))
		if s.fromActive {
			f.SrcMAC, f.DstMAC, f.Src, f.Dst = reqMAC, rspMAC, reqAddr, rspAddr
		} else {
			f.SrcMAC, f.DstMAC, f.Src, f.Dst = rspMAC, reqMAC, rspAddr, reqAddr
		}
		for _, o := range opts {
			o(f)
		}
		out = append(out, capFrame{data: f.AppendEthernet(nil)})
	}
	return out
}

// ibFrames encodes the steps as native InfiniBand packets, the active side
// LID 18 and the passive LID 12.
func ibFrames(steps []step) []capFrame {
	var out []capFrame
	for _, s := range steps {
		f := wire.Frame{Packet: s.p, LRH: wire.LRH{SLID: 12, DLID: 18}}
		if s.fromActive {
			f.LRH.SLID, f.LRH.DLID = 18, 12
		}
		out = append(out, capFrame{data: f.AppendIB(nil)})
	}
	return out
}

// handshake is REQ, REP, RTU, one SEND from the active side at PSN psn
// and its ACK, then DREQ and DREP.
func handshake(psn wire.PSN) []step {
	send := sendOnly(psn, 16, true)
	a := ack(psn, 1)
	return []step{
		{madPacket(cmREQ()), true},
		{madPacket(cmREP()), false},
		{madPacket(cmMsg(wire.CMAttrRTU, activeComm, passiveComm)), true},
		{send, true},
		{a, false},
		{madPacket(cmMsg(wire.CMAttrDREQ, activeComm, passiveComm)), true},
		{madPacket(cmMsg(wire.CMAttrDREP, passiveComm, activeComm)), false},
	}
}

// auditCM audits a capture with an auditor of the given settings.
func auditCM(t *testing.T, lt layers.LinkType, frames []capFrame, s harness.Settings) (reports.CaptureInfo, *harness.Auditor) {
	t.Helper()
	rd, err := capture.NewReader(bytes.NewReader(writePcap(t, lt, frames)), "cm.pcap")
	if err != nil {
		t.Fatal(err)
	}
	a := harness.NewAuditor(s, harness.NewSink("cm.pcap"))
	info, err := AuditReader(rd, a, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return info, a
}

func TestCMHandshake(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lt     layers.LinkType
		frames []capFrame
		req    string // the requester's address as listed
		rsp    string
	}{
		{"RoCEv2", layers.LinkTypeEthernet, roceFrames(handshake(100)), "10.0.0.2", "10.0.0.1"},
		{"RoCEv1", layers.LinkTypeEthernet, roceFrames(handshake(100), withRoCEv1()), "10.0.0.2", "10.0.0.1"},
		{"RoCEv2 over IPv6", layers.LinkTypeEthernet, roceFrames(handshake(100), withIPv6()), "fe80::2", "fe80::1"},
		{"native InfiniBand", layers.LinkType(capture.LinkTypeInfiniBand), ibFrames(handshake(100)), "LID 18", "LID 12"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, a := auditCM(t, tc.lt, tc.frames, harness.UnknownSettings())
			if info.RoCEFrames != 7 || info.Skipped != 0 || info.BadICRC != 0 || len(info.Errors) != 0 || len(info.Notes) != 0 {
				t.Fatalf("info %+v", info)
			}
			conns := a.Conns()
			if len(conns) != 1 {
				t.Fatalf("%d audited connections, want 1", len(conns))
			}
			s := conns[0].Settings
			// The active side is the requester: MTU from the REQ, the
			// passive responder's SRQ (none) and the RNR retry count the
			// REP gave the active side; its ACK timeout and retry count
			// are not announced.
			if s.MTU != 1024 || s.SRQ != harness.SRQNone || s.RNRRetry != 3 || s.AckTimeout != -1 || s.RetryCnt != -1 || !s.FromStart || s.Complete {
				t.Errorf("settings %+v", s)
			}
			if len(info.Connections) != 2 {
				t.Fatalf("connections %+v", info.Connections)
			}
			c := info.Connections[0]
			if c.Requester.Addr != tc.req || *c.Requester.QPN != 0x22 || c.Responder.Addr != tc.rsp || *c.Responder.QPN != 0x11 ||
				*c.FirstPSN.Requester != 100 || *c.FirstPSN.Responder != 500 || !c.Complete ||
				c.Handshake != "REQ REP RTU DREQ DREP" || *c.Settings.MTU != 1024 || *c.Settings.SRQ ||
				*c.Settings.RNRRetry != 3 || c.Settings.AckTimeout != nil || c.Settings.RetryCnt != nil || *c.Settings.ResponderResources != 2 {
				t.Errorf("audited connection %+v", c)
			}
			for _, k := range []string{"mtu", "srq", "rnr_retry", "responder_resources"} {
				if c.Source[k] != reports.SourceCM {
					t.Errorf("source of %s %q", k, c.Source[k])
				}
			}
			// The passive side's direction carried no request: listed
			// from the handshake alone.
			r := info.Connections[1]
			if r.Requester.Addr != tc.rsp || *r.Requester.QPN != 0x11 || *r.Responder.QPN != 0x22 || r.Complete ||
				*r.FirstPSN.Requester != 500 || *r.Settings.AckTimeout != 14 || *r.Settings.RetryCnt != 6 ||
				*r.Settings.RNRRetry != 5 || !*r.Settings.SRQ || *r.Settings.ResponderResources != 4 {
				t.Errorf("reverse connection %+v", r)
			}
		})
	}
}

func TestCMFirstRequestElsewhere(t *testing.T) {
	// The first request is not at the announced PSN: the capture lacks
	// the connection's start, so it is not FromStart, though it still
	// takes the handshake's settings.
	_, a := auditCM(t, layers.LinkTypeEthernet, roceFrames(handshake(105)), harness.UnknownSettings())
	s := a.Conns()[0].Settings
	if s.FromStart || s.MTU != 1024 {
		t.Errorf("settings %+v", s)
	}
	// A connection whose first packet is a response is not from its start.
	steps := handshake(100)
	steps[3], steps[4] = steps[4], steps[3]
	info, a := auditCM(t, layers.LinkTypeEthernet, roceFrames(steps), harness.UnknownSettings())
	for _, c := range a.Conns() {
		if c.Settings.FromStart {
			t.Errorf("connection %d from its start, first packet a response", c.ID)
		}
	}
	for _, c := range info.Connections {
		if c.Complete {
			t.Errorf("listed complete: %+v", c)
		}
	}
}

func TestCMFlags(t *testing.T) {
	// Flags win; the ones that contradict the handshake are noted, the
	// others not.
	s := harness.UnknownSettings()
	s.MTU, s.SRQ, s.RNRRetry, s.RetryCnt = 4096, harness.SRQAll, 3, 2
	info, a := auditCM(t, layers.LinkTypeEthernet, roceFrames(handshake(100)), s)
	got := a.Conns()[0].Settings
	if got.MTU != 4096 || got.SRQ != harness.SRQAll || got.RNRRetry != 3 || got.RetryCnt != 2 {
		t.Errorf("settings %+v", got)
	}
	if len(info.Notes) != 2 || !strings.Contains(info.Notes[0], "--mtu 4096 contradicts the CM handshake of 10.0.0.2 QP 0x000022 → 10.0.0.1 QP 0x000011 (REQ, frame 1: path MTU says 1024)") ||
		!strings.Contains(info.Notes[1], "--srq all contradicts") || !strings.Contains(info.Notes[1], "REP, frame 2") {
		t.Errorf("notes %q", info.Notes)
	}
	c := info.Connections[0]
	if c.Source["mtu"] != reports.SourceFlag || c.Source["srq"] != reports.SourceFlag || c.Source["rnr_retry"] != reports.SourceFlag ||
		c.Source["retry_cnt"] != reports.SourceFlag || c.Source["responder_resources"] != reports.SourceCM {
		t.Errorf("sources %v", c.Source)
	}
}

func TestCMRejected(t *testing.T) {
	// A refused connection gives no settings, even to traffic between the
	// same QPs that somehow follows.
	steps := []step{
		{madPacket(cmREQ()), true},
		{madPacket(func() wire.CMMsg { m := cmMsg(wire.CMAttrREJ, passiveComm, activeComm); m.RejReason = 28; return m }()), false},
		{sendOnly(100, 16, true), true},
	}
	info, a := auditCM(t, layers.LinkTypeEthernet, roceFrames(steps), harness.UnknownSettings())
	if s := a.Conns()[0].Settings; s.MTU != 0 || s.FromStart || s.SRQ != harness.SRQUnknown {
		t.Errorf("settings %+v", s)
	}
	if len(info.Connections) != 2 || info.Connections[0].Handshake != "" || info.Connections[1].Handshake != "REQ REJ (reason 28)" ||
		info.Connections[1].Responder.QPN != nil || *info.Connections[1].Requester.QPN != 0x22 {
		t.Errorf("connections %+v", info.Connections)
	}
}

func TestCMEnded(t *testing.T) {
	// RC packets after the DREQ/DREP are not the ended connection's: a new
	// connection between the same QPs takes nothing from its handshake.
	steps := handshake(100)
	steps = append(steps[:3], steps[5:]...) // REQ REP RTU DREQ DREP
	steps = append(steps, step{sendOnly(100, 16, true), true})
	info, a := auditCM(t, layers.LinkTypeEthernet, roceFrames(steps), harness.UnknownSettings())
	if s := a.Conns()[0].Settings; s.MTU != 0 || s.FromStart || s.SRQ != harness.SRQUnknown {
		t.Errorf("settings %+v", s)
	}
	if len(info.Connections) != 3 || info.Connections[1].Handshake != "REQ REP RTU DREQ DREP" {
		t.Errorf("connections %+v", info.Connections)
	}
	// A second handshake between the same QPs, after the first ended,
	// sets up the traffic that follows it.
	second := handshake(100)
	req2 := cmREQ()
	req2.LocalCommID, req2.PathMTUCode = activeComm+1, 5
	second[0] = step{madPacket(req2), true}
	rep2 := cmREP()
	rep2.RemoteCommID = activeComm + 1
	second[1] = step{madPacket(rep2), false}
	second[2] = step{madPacket(cmMsg(wire.CMAttrRTU, activeComm+1, passiveComm)), true}
	steps = append(append(handshake(100)[:3], handshake(100)[5:]...), second[:5]...)
	_, a = auditCM(t, layers.LinkTypeEthernet, roceFrames(steps), harness.UnknownSettings())
	if s := a.Conns()[0].Settings; s.MTU != 4096 || !s.FromStart {
		t.Errorf("after a second handshake: settings %+v", s)
	}
}

func TestCMNotRC(t *testing.T) {
	// A UC connection's handshake gives RC connections nothing.
	steps := handshake(100)
	uc := cmREQ()
	uc.TransportService = 1
	steps[0] = step{madPacket(uc), true}
	_, a := auditCM(t, layers.LinkTypeEthernet, roceFrames(steps), harness.UnknownSettings())
	if s := a.Conns()[0].Settings; s.MTU != 0 || s.FromStart {
		t.Errorf("settings %+v", s)
	}
}

func TestCMNoHandshake(t *testing.T) {
	// Without CM the settings stay the flags', the MTU may be observed.
	steps := []step{{sendOnly(100, 16, true), true}, {ack(100, 1), false}}
	info, a := auditCM(t, layers.LinkTypeEthernet, roceFrames(steps), harness.UnknownSettings())
	if s := a.Conns()[0].Settings; s != harness.UnknownSettings() {
		t.Errorf("settings %+v", s)
	}
	if len(info.Connections) != 1 || info.Connections[0].Settings.MTU != nil || len(info.Connections[0].Source) != 0 ||
		info.Connections[0].Complete || *info.Connections[0].Requester.QPN != 0x22 || *info.Connections[0].FirstPSN.Requester != 100 {
		t.Errorf("connections %+v", info.Connections)
	}
}

func TestCMBadMAD(t *testing.T) {
	// A CM MAD cut short is counted in a note; a MAD of another class is
	// ignored.
	p := madPacket(cmREQ())
	p.Payload = p.Payload[:wire.DETHLen+40]
	sa := madPacket(cmREQ())
	sa.Payload[wire.DETHLen+1] = 0x03
	info, a := auditCM(t, layers.LinkTypeEthernet, roceFrames([]step{{p, true}, {sa, true}, {sendOnly(100, 16, true), true}}), harness.UnknownSettings())
	if len(info.Notes) != 1 || !strings.Contains(info.Notes[0], "1 CM MADs could not be decoded (the first in frame 1)") {
		t.Errorf("notes %q", info.Notes)
	}
	if s := a.Conns()[0].Settings; s.MTU != 0 {
		t.Errorf("settings %+v", s)
	}
}

func TestNativeIBVCRC(t *testing.T) {
	// A bad VCRC is a dropped packet: counted, listed, not analysed. A
	// VCRC the capture lacks is noted as unverifiable.
	frames := ibFrames(handshake(100))
	bad := append([]byte(nil), frames[3].data...)
	bad[len(bad)-1] ^= 1
	cut := frames[4].data[:len(frames[4].data)-2]
	info, a := auditCM(t, layers.LinkType(capture.LinkTypeInfiniBand), []capFrame{frames[0], frames[1], {data: bad}, {data: cut}}, harness.UnknownSettings())
	if info.BadICRC != 1 || len(info.Errors) != 1 || !strings.Contains(info.Errors[0], "frame 3: bad VCRC") {
		t.Errorf("info %+v", info)
	}
	if len(info.Notes) != 1 || !strings.Contains(info.Notes[0], "1 native InfiniBand frames end without their VCRC") {
		t.Errorf("notes %q", info.Notes)
	}
	if len(a.Conns()) != 1 || a.Conns()[0].Packets != 1 {
		t.Errorf("connections %d", len(a.Conns()))
	}
}

// FuzzAuditCM audits a handshake whose every frame the fuzzer may change,
// as RoCEv2 (ib false) or native InfiniBand: no panic, no error (every
// frame is whole in the file), and every frame counted.
func FuzzAuditCM(f *testing.F) {
	for i, fr := range roceFrames(handshake(100)) {
		f.Add(false, i, fr.data)
	}
	for i, fr := range ibFrames(handshake(100)) {
		f.Add(true, i, fr.data)
	}
	f.Fuzz(func(t *testing.T, ib bool, at int, data []byte) {
		frames, lt := roceFrames(handshake(100)), layers.LinkTypeEthernet
		if ib {
			frames, lt = ibFrames(handshake(100)), layers.LinkType(capture.LinkTypeInfiniBand)
		}
		if at < 0 {
			at = -at
		}
		frames[at%len(frames)] = capFrame{data: data}
		info, a := auditCM(t, lt, frames, harness.UnknownSettings())
		if info.Frames != len(frames) || info.RoCEFrames+info.Skipped != info.Frames {
			t.Fatalf("info %+v", info)
		}
		if len(info.Connections) < len(a.Conns()) {
			t.Fatalf("%d connections listed for %d audited", len(info.Connections), len(a.Conns()))
		}
	})
}
