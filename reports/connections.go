package reports

import "fmt"

// Connection is one RC connection an audit found (the "connections" list of
// the audit's JSON): its two QPs, the first PSN each sends, the settings
// the audit used for it and where each came from, and whether the capture
// holds it from its start. Unknown values are null.
type Connection struct {
	Capture string `json:"capture"`
	// ID numbers the audited connections of a capture in the order the
	// capture first showed them (as findings' ladders and shards count
	// them); 0 for a handshake no RC packet of the capture used.
	ID int `json:"id,omitempty"`
	// FirstFrame is the frame of the capture where the connection's
	// first packet is (as Wireshark numbers frames; 0 for a handshake no
	// RC packet used): `audit --annotate` puts the connection's settings
	// on it.
	FirstFrame int      `json:"first_frame,omitempty"`
	Requester  Endpoint `json:"requester"`
	Responder  Endpoint `json:"responder"`
	// FirstPSN gives the first PSN each QP sends: the requester's first
	// request PSN, and the responder QP's own starting PSN (the PSN its
	// requests in the other direction start at), as the CM handshake
	// announced them, else (requester only) the first request seen.
	FirstPSN FirstPSN     `json:"first_psn"`
	Settings ConnSettings `json:"settings"`
	// Source says where each known setting came from: SourceCM,
	// SourceFlag or SourceObserved, keyed by the settings' JSON names.
	Source map[string]string `json:"source"`
	// Complete says the capture holds the connection from its start: its
	// CM handshake and its first request at the PSN the handshake
	// announced are in it, and the file reports no packet it dropped (or
	// the user said so with --complete).
	Complete bool `json:"complete"`
	// Handshake lists the CM messages seen for the connection, in the
	// order first seen ("REQ REP RTU DREQ DREP"; "REQ REJ (reason 28)"
	// for a refused one, with the REJ's reason code); empty when the
	// capture holds none.
	Handshake string `json:"handshake,omitempty"`
	// Follows is the ID of the connection this one took over from: the
	// same addresses and responder QP, whose requests jumped where no
	// requester of one QP sends (the QPs were made anew with the same
	// numbers; the capture's notes say where and why). 0: none.
	Follows int `json:"follows,omitempty"`
}

// Endpoint is one side of a connection: its address (an IP address or
// GID, or "LID n" on native InfiniBand) and QP number.
type Endpoint struct {
	Addr string  `json:"addr"`
	QPN  *uint32 `json:"qpn"`
}

// FirstPSN is the first PSN of each side of a connection.
type FirstPSN struct {
	Requester *uint32 `json:"requester"`
	Responder *uint32 `json:"responder"`
}

// ConnSettings are a connection's settings. SRQ says whether the
// responder QP uses a shared receive queue; AckTimeout, RetryCnt and
// RNRRetry are the requester's; ResponderResources is how many RDMA READ
// and ATOMIC requests the responder accepts outstanding.
type ConnSettings struct {
	MTU                *int  `json:"mtu"`
	SRQ                *bool `json:"srq"`
	AckTimeout         *int  `json:"ack_timeout"`
	RetryCnt           *int  `json:"retry_cnt"`
	RNRRetry           *int  `json:"rnr_retry"`
	ResponderResources *int  `json:"responder_resources"`
}

// Where a connection's setting came from (Connection.Source).
const (
	SourceCM       = "cm"       // the connection manager's handshake in the capture
	SourceFlag     = "flag"     // given by the user
	SourceObserved = "observed" // inferred from the traffic (the MTU from the largest First/Middle payload)
)

// ConnectionFields are a connection's endpoints and settings as people
// read them: an unknown value is "?", and a known setting says where it
// came from ("1024 (cm)").
type ConnectionFields struct {
	Requester, Responder string // "10.0.0.2 QP 0x000011"
	FirstPSN             string // requester's/responder's: "10/?"
	MTU, SRQ             string
	AckTimeout           string
	RetryCnt, RNRRetry   string
	ResponderResources   string
	Complete             string // "yes" or "no"
	Handshake            string // "-" when the capture holds none
}

// Fields returns c as people read it (the audit's connections table,
// the comments of an annotated capture).
func (c Connection) Fields() ConnectionFields {
	src := func(key, v string) string {
		if s := c.Source[key]; s != "" && v != "?" {
			return v + " (" + s + ")"
		}
		return v
	}
	st := c.Settings
	srq := "?"
	if st.SRQ != nil {
		srq = map[bool]string{true: "yes", false: "no"}[*st.SRQ]
	}
	complete := "no"
	if c.Complete {
		complete = "yes"
	}
	cm := c.Handshake
	if cm == "" {
		cm = "-"
	}
	return ConnectionFields{
		Requester: endpointText(c.Requester), Responder: endpointText(c.Responder),
		FirstPSN: optText(c.FirstPSN.Requester) + "/" + optText(c.FirstPSN.Responder),
		MTU:      src("mtu", optText(st.MTU)), SRQ: src("srq", srq), AckTimeout: src("ack_timeout", optText(st.AckTimeout)),
		RetryCnt: src("retry_cnt", optText(st.RetryCnt)), RNRRetry: src("rnr_retry", optText(st.RNRRetry)),
		ResponderResources: src("responder_resources", optText(st.ResponderResources)),
		Complete:           complete, Handshake: cm,
	}
}

func endpointText(e Endpoint) string {
	if e.QPN == nil {
		return e.Addr + " QP ?"
	}
	return fmt.Sprintf("%s QP 0x%06x", e.Addr, *e.QPN)
}

// optText is *v in decimal, or "?" when v is nil.
func optText[T int | uint32](v *T) string {
	if v == nil {
		return "?"
	}
	return fmt.Sprint(*v)
}
