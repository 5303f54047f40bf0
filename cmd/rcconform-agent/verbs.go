//go:build verbs && linux && cgo

package main

/*
#cgo LDFLAGS: -libverbs
#include <infiniband/verbs.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

static void *rcc_alloc(size_t n) {
	void *p = NULL;
	if (n == 0) n = 1;
	if (posix_memalign(&p, 4096, n) != 0) return NULL;
	memset(p, 0, n);
	return p;
}

static struct ibv_mr *rcc_reg_mr(struct ibv_pd *pd, void *addr, size_t n, int access) {
	return ibv_reg_mr(pd, addr, n, access);
}

static int rcc_modify_init(struct ibv_qp *qp, uint8_t port, int access) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = port;
	a.qp_access_flags = access;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int rcc_modify_rtr(struct ibv_qp *qp, uint8_t port, int gid_index, const uint8_t *dgid, int mtu,
                          uint32_t dqpn, uint32_t rq_psn, uint8_t max_dest_rd, uint8_t min_rnr) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)mtu;
	a.dest_qp_num = dqpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = max_dest_rd;
	a.min_rnr_timer = min_rnr;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = port;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 64;
	memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
	                                 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

static int rcc_modify_rts(struct ibv_qp *qp, uint32_t sq_psn, uint8_t timeout, uint8_t retry, uint8_t rnr, uint8_t max_rd) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = timeout;
	a.retry_cnt = retry;
	a.rnr_retry = rnr;
	a.max_rd_atomic = max_rd;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
	                                 IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static struct ibv_qp *rcc_create_qp(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_srq *srq, uint32_t max_send, uint32_t max_recv) {
	struct ibv_qp_init_attr ia;
	memset(&ia, 0, sizeof ia);
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.srq = srq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = max_send;
	ia.cap.max_recv_wr = srq ? 0 : max_recv;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	return ibv_create_qp(pd, &ia);
}

static struct ibv_srq *rcc_create_srq(struct ibv_pd *pd, uint32_t max_wr) {
	struct ibv_srq_init_attr ia;
	memset(&ia, 0, sizeof ia);
	ia.attr.max_wr = max_wr;
	ia.attr.max_sge = 1;
	return ibv_create_srq(pd, &ia);
}

static int rcc_post_send(struct ibv_qp *qp, uint64_t wr_id, int opcode, uint64_t laddr, uint32_t len, uint32_t lkey,
                         uint64_t raddr, uint32_t rkey, uint32_t imm, uint64_t compare_add, uint64_t swap) {
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof wr);
	sge.addr = laddr;
	sge.length = len;
	sge.lkey = lkey;
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = len ? 1 : 0;
	wr.opcode = (enum ibv_wr_opcode)opcode;
	wr.send_flags = IBV_SEND_SIGNALED;
	switch (opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = compare_add;
		wr.wr.atomic.swap = swap;
		break;
	case IBV_WR_SEND_WITH_INV:
		wr.invalidate_rkey = rkey;
		break;
	}
	if (opcode == IBV_WR_SEND_WITH_IMM || opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
		wr.imm_data = htonl(imm);
	return ibv_post_send(qp, &wr, &bad);
}

static int rcc_post_recv(struct ibv_qp *qp, struct ibv_srq *srq, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey) {
	struct ibv_sge sge;
	struct ibv_recv_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof wr);
	sge.addr = addr;
	sge.length = len;
	sge.lkey = lkey;
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = len ? 1 : 0;
	if (srq)
		return ibv_post_srq_recv(srq, &wr, &bad);
	return ibv_post_recv(qp, &wr, &bad);
}

typedef struct {
	uint64_t wr_id;
	int status;
	int opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm;
	int flags;
} rcc_wc;

static int rcc_poll(struct ibv_cq *cq, rcc_wc *out, int n) {
	struct ibv_wc wc[64];
	if (n > 64) n = 64;
	int k = ibv_poll_cq(cq, n, wc);
	for (int i = 0; i < k; i++) {
		out[i].wr_id = wc[i].wr_id;
		out[i].status = wc[i].status;
		out[i].opcode = wc[i].opcode;
		out[i].vendor_err = wc[i].vendor_err;
		out[i].byte_len = wc[i].byte_len;
		out[i].flags = wc[i].wc_flags;
		out[i].imm = (wc[i].wc_flags & IBV_WC_WITH_INV) ? wc[i].invalidated_rkey : ntohl(wc[i].imm_data);
	}
	return k;
}

static int rcc_qp_state(struct ibv_qp *qp) {
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia)) return -1;
	return a.qp_state;
}

static int rcc_gid(struct ibv_context *ctx, uint8_t port, int index, uint8_t *gid, int *type) {
	struct ibv_gid_entry e;
	if (ibv_query_gid_ex(ctx, port, index, &e, 0)) return -1;
	memcpy(gid, e.gid.raw, 16);
	*type = e.gid_type;
	return 0;
}

static int rcc_port(struct ibv_context *ctx, uint8_t port, int *state, int *active_mtu, int *gid_tbl_len) {
	struct ibv_port_attr pa;
	memset(&pa, 0, sizeof pa);
	int rc = ibv_query_port(ctx, port, &pa);
	*state = pa.state;
	*active_mtu = pa.active_mtu;
	*gid_tbl_len = pa.gid_tbl_len;
	return rc;
}

static int rcc_pkey(struct ibv_context *ctx, uint8_t port) {
	__be16 p;
	if (ibv_query_pkey(ctx, port, 0, &p)) return -1;
	return ntohs(p);
}
*/
import "C"

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/rcconform/rcconform/dut/live/agentproto"
)

// verbsDevice is an RDMA device opened through libibverbs.
type verbsDevice struct {
	ctx      *C.struct_ibv_context
	name     string
	port     int
	gidIndex int
	info     agentproto.DeviceInfo
	gids     map[netip.Addr]int // RoCEv2 GIDs by address
}

func errnoErr(what string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	return agentproto.Errorf(agentproto.CodeDevice, "%s: %v", what, syscallErr(int(rc)))
}

func syscallErr(rc int) error {
	if rc < 0 {
		rc = -rc
	}
	return fmt.Errorf("errno %d (%s)", rc, C.GoString(C.strerror(C.int(rc))))
}

func mtuBytes(m C.enum_ibv_mtu) int { return 128 << int(m) }

func mtuEnum(n int) (C.int, bool) {
	for e := 1; e <= 5; e++ {
		if 128<<e == n {
			return C.int(e), true
		}
	}
	return 0, false
}

func openDevice(o Options) (device, error) {
	var n C.int
	list := C.ibv_get_device_list(&n)
	if list == nil || n == 0 {
		if list != nil {
			C.ibv_free_device_list(list)
		}
		return nil, fmt.Errorf("no RDMA device on this host (for soft-RoCE: rdma link add rxe0 type rxe netdev ETH)")
	}
	defer C.ibv_free_device_list(list)
	devs := unsafe.Slice(list, int(n))
	var names []string
	var pick *C.struct_ibv_device
	for _, d := range devs {
		name := C.GoString(C.ibv_get_device_name(d))
		names = append(names, name)
		if pick == nil && (o.Device == "" || o.Device == name) {
			pick = d
		}
	}
	if pick == nil {
		return nil, fmt.Errorf("no RDMA device %q (this host has %s)", o.Device, strings.Join(names, ", "))
	}
	ctx := C.ibv_open_device(pick)
	if ctx == nil {
		return nil, fmt.Errorf("opening %s failed", C.GoString(C.ibv_get_device_name(pick)))
	}
	v := &verbsDevice{ctx: ctx, name: C.GoString(C.ibv_get_device_name(pick)), port: o.Port, gids: map[netip.Addr]int{}}
	if err := v.query(o); err != nil {
		C.ibv_close_device(ctx)
		return nil, err
	}
	return v, nil
}

func (v *verbsDevice) query(o Options) error {
	var da C.struct_ibv_device_attr
	if rc := C.ibv_query_device(v.ctx, &da); rc != 0 {
		return fmt.Errorf("querying %s: %v", v.name, syscallErr(int(rc)))
	}
	var state, activeMTU, gidLen C.int
	if rc := C.rcc_port(v.ctx, C.uint8_t(v.port), &state, &activeMTU, &gidLen); rc != 0 {
		return fmt.Errorf("querying %s port %d: %v", v.name, v.port, syscallErr(int(rc)))
	}
	if state != C.IBV_PORT_ACTIVE {
		return fmt.Errorf("%s port %d is not active (state %d)", v.name, v.port, int(state))
	}
	var gids []agentproto.GID
	first := -1
	for i := 0; i < int(gidLen); i++ {
		var raw [16]byte
		var typ C.int
		if C.rcc_gid(v.ctx, C.uint8_t(v.port), C.int(i), (*C.uint8_t)(unsafe.Pointer(&raw[0])), &typ) != 0 {
			continue
		}
		if typ != C.IBV_GID_TYPE_ROCE_V2 || raw == [16]byte{} {
			continue
		}
		a := netip.AddrFrom16(raw).Unmap()
		if _, seen := v.gids[a]; !seen {
			v.gids[a] = i
		}
		gids = append(gids, agentproto.GID{Index: i, GID: netip.AddrFrom16(raw).String(), Address: a.String()})
		if first < 0 && a.Is4() {
			first = i
		}
	}
	v.gidIndex = first
	switch {
	case o.GIDIndex >= 0:
		v.gidIndex = o.GIDIndex
	case o.Address != "":
		a, err := netip.ParseAddr(o.Address)
		if err != nil {
			return fmt.Errorf("--address %q is not an IP address", o.Address)
		}
		i, ok := v.gids[a.Unmap()]
		if !ok {
			return fmt.Errorf("%s port %d has no RoCEv2 GID for %s (its RoCEv2 GIDs: %v)", v.name, v.port, a, gids)
		}
		v.gidIndex = i
	}
	if v.gidIndex < 0 && len(gids) > 0 {
		v.gidIndex = gids[0].Index
	}
	if v.gidIndex < 0 {
		return fmt.Errorf("%s port %d has no RoCEv2 GID: is an IP address configured on its network device?", v.name, v.port)
	}
	addr := ""
	for _, g := range gids {
		if g.Index == v.gidIndex {
			addr = g.Address
		}
	}
	pkey := C.rcc_pkey(v.ctx, C.uint8_t(v.port))
	v.info = agentproto.DeviceInfo{Agent: "rcconform-agent (libibverbs)", Name: v.name, Port: v.port, Address: addr, GIDs: gids,
		UDPPort: 4791, MTU: mtuBytes(C.enum_ibv_mtu(activeMTU)), PKey: uint16(pkey), Atomics: da.atomic_cap != C.IBV_ATOMIC_NONE,
		SRQ: da.max_srq > 0, MaxRd: int(da.max_qp_rd_atom), MaxInit: int(da.max_qp_init_rd_atom),
		VendorID: uint32(da.vendor_id), VendorPartID: uint32(da.vendor_part_id), HWVersion: uint32(da.hw_ver),
		Firmware: C.GoString(&da.fw_ver[0]), Driver: driverOf(v.name), Kernel: kernelRelease()}
	return nil
}

// Info implements agentproto.Device.
func (v *verbsDevice) Info() agentproto.DeviceInfo { return v.info }

// Close closes the device.
func (v *verbsDevice) Close() error {
	C.ibv_close_device(v.ctx)
	return nil
}

// NewSession implements agentproto.Device: a protection domain of its own.
func (v *verbsDevice) NewSession() (agentproto.Session, error) {
	pd := C.ibv_alloc_pd(v.ctx)
	if pd == nil {
		return nil, agentproto.Errorf(agentproto.CodeDevice, "allocating a protection domain on %s failed", v.name)
	}
	return &verbsSession{v: v, pd: pd, qps: map[uint32]*vqp{}, mrs: map[uint32]*vmr{}}, nil
}

type verbsSession struct {
	v    *verbsDevice
	pd   *C.struct_ibv_pd
	mu   sync.Mutex
	qps  map[uint32]*vqp
	mrs  map[uint32]*vmr
	next uint32
}

// buffer is memory the agent allocated and registered.
type buffer struct {
	p  unsafe.Pointer
	n  int
	mr *C.struct_ibv_mr
}

func (s *verbsSession) alloc(n int, access C.int) (*buffer, error) {
	p := C.rcc_alloc(C.size_t(n))
	if p == nil {
		return nil, agentproto.Errorf(agentproto.CodeDevice, "allocating %d bytes failed", n)
	}
	mr := C.rcc_reg_mr(s.pd, p, C.size_t(max(n, 1)), access)
	if mr == nil {
		C.free(p)
		return nil, agentproto.Errorf(agentproto.CodeDevice, "registering %d bytes with %s failed", n, s.v.name)
	}
	return &buffer{p: p, n: n, mr: mr}, nil
}

func (b *buffer) free() {
	if b.mr != nil {
		C.ibv_dereg_mr(b.mr)
		b.mr = nil
	}
	if b.p != nil {
		C.free(b.p)
		b.p = nil
	}
}

func (b *buffer) bytes() []byte { return unsafe.Slice((*byte)(b.p), b.n) }

type vqp struct {
	qp  *C.struct_ibv_qp
	cq  *C.struct_ibv_cq
	srq *C.struct_ibv_srq
	// Internal WR IDs: send WRs map to the harness's ID, op and the
	// buffer they use; receives count from 1 with the top bit set.
	nextWR  uint64
	sends   map[uint64]sendWR
	recvID  uint64
	recvBuf []*buffer
	mrs     []uint32
}

type sendWR struct {
	id  uint64
	op  string
	buf *buffer
}

const recvBit = 1 << 63

type vmr struct {
	q   *vqp
	buf *buffer
}

func (s *verbsSession) qp(h uint32) (*vqp, error) {
	q, ok := s.qps[h]
	if !ok {
		return nil, agentproto.Errorf(agentproto.CodeNotFound, "no QP with handle %d in this session", h)
	}
	return q, nil
}

func (s *verbsSession) mr(h uint32) (*vmr, error) {
	m, ok := s.mrs[h]
	if !ok {
		return nil, agentproto.Errorf(agentproto.CodeNotFound, "no memory region with handle %d in this session", h)
	}
	return m, nil
}

// CreateQP implements agentproto.Session.
func (s *verbsSession) CreateQP(a agentproto.QPAttr) (agentproto.QPInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var info agentproto.QPInfo
	v := s.v
	if len(s.qps) >= agentproto.MaxQPs {
		return info, agentproto.Errorf(agentproto.CodeDevice, "this session already has %d QPs", len(s.qps))
	}
	remote, err := netip.ParseAddr(a.RemoteAddress)
	if err != nil {
		return info, agentproto.Errorf(agentproto.CodeBadRequest, "remote_address %q is not an IP address", a.RemoteAddress)
	}
	if a.RemotePort != 0 && a.RemotePort != 4791 {
		return info, agentproto.Errorf(agentproto.CodeUnsupported, "a RoCEv2 device sends to UDP port 4791 only, not %d", a.RemotePort)
	}
	gidIndex := v.gidIndex
	if a.LocalAddress != "" {
		la, err := netip.ParseAddr(a.LocalAddress)
		i, ok := v.gids[la.Unmap()]
		if err != nil || !ok {
			return info, agentproto.Errorf(agentproto.CodeBadRequest, "%s port %d has no RoCEv2 GID for local_address %q (its GIDs: %v)", v.name, v.port, a.LocalAddress, v.info.GIDs)
		}
		gidIndex = i
	}
	mtu := a.MTU
	if mtu == 0 {
		mtu = min(1024, v.info.MTU)
	}
	me, ok := mtuEnum(mtu)
	if !ok {
		return info, agentproto.Errorf(agentproto.CodeBadRequest, "path MTU %d is not 256, 512, 1024, 2048 or 4096", mtu)
	}
	if mtu > v.info.MTU {
		return info, agentproto.Errorf(agentproto.CodeUnsupported, "path MTU %d exceeds %s port %d's active MTU %d", mtu, v.name, v.port, v.info.MTU)
	}
	if a.SRQ && !v.info.SRQ {
		return info, agentproto.Errorf(agentproto.CodeUnsupported, "%s has no SRQs", v.name)
	}
	if a.MaxDestRdAtomic > v.info.MaxRd || a.MaxRdAtomic > v.info.MaxInit {
		return info, agentproto.Errorf(agentproto.CodeUnsupported, "READ/ATOMIC depths %d/%d exceed %s's %d/%d", a.MaxDestRdAtomic, a.MaxRdAtomic, v.name, v.info.MaxRd, v.info.MaxInit)
	}
	maxSend, maxRecv := a.MaxSendWR, a.MaxRecvWR
	if maxSend <= 0 {
		maxSend = 256
	}
	if maxRecv <= 0 {
		maxRecv = 1024
	}
	q := &vqp{sends: map[uint64]sendWR{}}
	q.cq = C.ibv_create_cq(v.ctx, C.int(maxSend+maxRecv), nil, nil, 0)
	if q.cq == nil {
		return info, agentproto.Errorf(agentproto.CodeDevice, "creating a CQ of %d entries on %s failed", maxSend+maxRecv, v.name)
	}
	if a.SRQ {
		if q.srq = C.rcc_create_srq(s.pd, C.uint32_t(maxRecv)); q.srq == nil {
			q.destroy()
			return info, agentproto.Errorf(agentproto.CodeDevice, "creating an SRQ on %s failed", v.name)
		}
	}
	if q.qp = C.rcc_create_qp(s.pd, q.cq, q.srq, C.uint32_t(maxSend), C.uint32_t(maxRecv)); q.qp == nil {
		q.destroy()
		return info, agentproto.Errorf(agentproto.CodeDevice, "creating an RC QP on %s failed", v.name)
	}
	access := C.int(C.IBV_ACCESS_LOCAL_WRITE | C.IBV_ACCESS_REMOTE_READ | C.IBV_ACCESS_REMOTE_WRITE)
	if a.RemoteAtomic {
		if !v.info.Atomics {
			q.destroy()
			return info, agentproto.Errorf(agentproto.CodeUnsupported, "%s has no remote atomics", v.name)
		}
		access |= C.IBV_ACCESS_REMOTE_ATOMIC
	}
	dgid := netip.AddrFrom16(remote.As16())
	if remote.Is4() {
		dgid = netip.AddrFrom16(remote.As16()) // As16 of an IPv4 address is its IPv4-mapped form
	}
	raw := dgid.As16()
	steps := []struct {
		what string
		rc   func() C.int
	}{
		{"moving the QP to INIT", func() C.int { return C.rcc_modify_init(q.qp, C.uint8_t(v.port), access) }},
		{"moving the QP to RTR", func() C.int {
			return C.rcc_modify_rtr(q.qp, C.uint8_t(v.port), C.int(gidIndex), (*C.uint8_t)(unsafe.Pointer(&raw[0])), me,
				C.uint32_t(a.RemoteQPN), C.uint32_t(a.RQPSN&0xFFFFFF), C.uint8_t(a.MaxDestRdAtomic), C.uint8_t(a.MinRNRTimer))
		}},
		{"moving the QP to RTS", func() C.int {
			return C.rcc_modify_rts(q.qp, C.uint32_t(a.SQPSN&0xFFFFFF), C.uint8_t(a.Timeout), C.uint8_t(a.RetryCnt),
				C.uint8_t(a.RNRRetry), C.uint8_t(a.MaxRdAtomic))
		}},
	}
	for _, st := range steps {
		if err := errnoErr(st.what, st.rc()); err != nil {
			q.destroy()
			return info, err
		}
	}
	s.next++
	s.qps[s.next] = q
	eff := a
	eff.MTU, eff.RemotePort = mtu, 4791
	addr := ""
	for _, g := range v.info.GIDs {
		if g.Index == gidIndex {
			addr = g.Address
		}
	}
	eff.LocalAddress = addr
	return agentproto.QPInfo{Handle: s.next, QPN: uint32(q.qp.qp_num), State: stateName(C.rcc_qp_state(q.qp)), Attr: eff,
		GIDIndex: gidIndex, Address: addr, PKey: v.info.PKey}, nil
}

func (q *vqp) destroy() {
	if q.qp != nil {
		C.ibv_destroy_qp(q.qp)
		q.qp = nil
	}
	if q.srq != nil {
		C.ibv_destroy_srq(q.srq)
		q.srq = nil
	}
	if q.cq != nil {
		C.ibv_destroy_cq(q.cq)
		q.cq = nil
	}
	for _, w := range q.sends {
		if w.buf != nil {
			w.buf.free()
		}
	}
	q.sends = nil
	for _, b := range q.recvBuf {
		b.free()
	}
	q.recvBuf = nil
}

func stateName(st C.int) string {
	switch st {
	case C.IBV_QPS_RESET:
		return "RESET"
	case C.IBV_QPS_INIT:
		return "INIT"
	case C.IBV_QPS_RTR:
		return "RTR"
	case C.IBV_QPS_RTS:
		return "RTS"
	case C.IBV_QPS_SQD:
		return "SQD"
	case C.IBV_QPS_SQE:
		return "SQE"
	case C.IBV_QPS_ERR:
		return "ERROR"
	}
	return "UNKNOWN"
}

// RegMR implements agentproto.Session.
func (s *verbsSession) RegMR(qh uint32, length int, access []string) (agentproto.MRInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.qp(qh)
	if err != nil {
		return agentproto.MRInfo{}, err
	}
	var acc C.int
	for _, a := range access {
		switch a {
		case agentproto.AccessLocalWrite:
			acc |= C.IBV_ACCESS_LOCAL_WRITE
		case agentproto.AccessRemoteRead:
			acc |= C.IBV_ACCESS_REMOTE_READ
		case agentproto.AccessRemoteWrite:
			acc |= C.IBV_ACCESS_REMOTE_WRITE
		case agentproto.AccessRemoteAtomic:
			if !s.v.info.Atomics {
				return agentproto.MRInfo{}, agentproto.Errorf(agentproto.CodeUnsupported, "%s has no remote atomics", s.v.name)
			}
			acc |= C.IBV_ACCESS_REMOTE_ATOMIC
		}
	}
	if acc&(C.IBV_ACCESS_REMOTE_WRITE|C.IBV_ACCESS_REMOTE_ATOMIC) != 0 {
		acc |= C.IBV_ACCESS_LOCAL_WRITE // verbs requires it
	}
	b, err := s.alloc(length, acc)
	if err != nil {
		return agentproto.MRInfo{}, err
	}
	s.next++
	s.mrs[s.next] = &vmr{q: q, buf: b}
	q.mrs = append(q.mrs, s.next)
	return agentproto.MRInfo{Handle: s.next, RKey: uint32(b.mr.rkey), LKey: uint32(b.mr.lkey), Addr: uint64(uintptr(b.p)), Length: length}, nil
}

func bounds(what string, off, n, size int) error {
	if off < 0 || n < 0 || off+n > size {
		return agentproto.Errorf(agentproto.CodeBadRequest, "%s %d bytes at offset %d of a %d-byte region: out of bounds", what, n, off, size)
	}
	return nil
}

// ReadMem implements agentproto.Session.
func (s *verbsSession) ReadMem(h uint32, off, n int) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.mr(h)
	if err != nil {
		return nil, err
	}
	if err := bounds("reading", off, n, m.buf.n); err != nil {
		return nil, err
	}
	return append([]byte{}, m.buf.bytes()[off:off+n]...), nil
}

// WriteMem implements agentproto.Session.
func (s *verbsSession) WriteMem(h uint32, off int, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.mr(h)
	if err != nil {
		return err
	}
	if err := bounds("writing", off, len(data), m.buf.n); err != nil {
		return err
	}
	copy(m.buf.bytes()[off:], data)
	return nil
}

// InvalidateMR implements agentproto.Session: the region is deregistered,
// so its R_Key is invalid; the memory stays readable through the agent.
func (s *verbsSession) InvalidateMR(h uint32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.mr(h)
	if err != nil {
		return err
	}
	if m.buf.mr != nil {
		if rc := C.ibv_dereg_mr(m.buf.mr); rc != 0 {
			return errnoErr("deregistering the memory region", rc)
		}
		m.buf.mr = nil
	}
	return nil
}

// PostRecv implements agentproto.Session.
func (s *verbsSession) PostRecv(qh uint32, count, size int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.qp(qh)
	if err != nil {
		return err
	}
	if count == 0 {
		return nil
	}
	b, err := s.alloc(count*max(size, 1), C.IBV_ACCESS_LOCAL_WRITE)
	if err != nil {
		return err
	}
	q.recvBuf = append(q.recvBuf, b)
	for i := 0; i < count; i++ {
		q.recvID++
		addr := uint64(uintptr(b.p)) + uint64(i*max(size, 1))
		if rc := C.rcc_post_recv(q.qp, q.srq, C.uint64_t(recvBit|q.recvID), C.uint64_t(addr), C.uint32_t(size), b.mr.lkey); rc != 0 {
			return errnoErr(fmt.Sprintf("posting receive WQE %d", i+1), rc)
		}
	}
	return nil
}

// PostSend implements agentproto.Session.
func (s *verbsSession) PostSend(qh uint32, w agentproto.WR) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.qp(qh)
	if err != nil {
		return err
	}
	var opcode C.int
	n := len(w.Data)
	switch w.Op {
	case agentproto.WRSend:
		opcode = C.IBV_WR_SEND
	case agentproto.WRSendImm:
		opcode = C.IBV_WR_SEND_WITH_IMM
	case agentproto.WRSendInv:
		opcode = C.IBV_WR_SEND_WITH_INV
	case agentproto.WRWrite:
		opcode = C.IBV_WR_RDMA_WRITE
	case agentproto.WRWriteImm:
		opcode = C.IBV_WR_RDMA_WRITE_WITH_IMM
	case agentproto.WRRead:
		opcode, n = C.IBV_WR_RDMA_READ, w.Length
	case agentproto.WRCmpSwap:
		opcode, n = C.IBV_WR_ATOMIC_CMP_AND_SWP, 8
	case agentproto.WRFetchAdd:
		opcode, n = C.IBV_WR_ATOMIC_FETCH_AND_ADD, 8
	default:
		return agentproto.Errorf(agentproto.CodeBadRequest, "unknown work request op %q", w.Op)
	}
	b, err := s.alloc(n, C.IBV_ACCESS_LOCAL_WRITE)
	if err != nil {
		return err
	}
	copy(b.bytes(), w.Data)
	q.nextWR++
	id := q.nextWR
	rc := C.rcc_post_send(q.qp, C.uint64_t(id), opcode, C.uint64_t(uintptr(b.p)), C.uint32_t(n), b.mr.lkey,
		C.uint64_t(w.RemoteAddr), C.uint32_t(w.RKey), C.uint32_t(w.Imm), C.uint64_t(w.CompareAdd), C.uint64_t(w.Swap))
	if rc != 0 {
		b.free()
		return errnoErr("posting "+w.Op, rc)
	}
	q.sends[id] = sendWR{id: w.ID, op: w.Op, buf: b}
	return nil
}

var wcStatus = map[C.int]string{
	C.IBV_WC_SUCCESS:            agentproto.StatusSuccess,
	C.IBV_WC_RETRY_EXC_ERR:      agentproto.StatusRetryExceeded,
	C.IBV_WC_RNR_RETRY_EXC_ERR:  agentproto.StatusRNRRetryExc,
	C.IBV_WC_REM_ACCESS_ERR:     agentproto.StatusRemAccessErr,
	C.IBV_WC_REM_INV_REQ_ERR:    agentproto.StatusRemInvReqErr,
	C.IBV_WC_REM_OP_ERR:         agentproto.StatusRemOpErr,
	C.IBV_WC_WR_FLUSH_ERR:       agentproto.StatusFlushed,
	C.IBV_WC_LOC_LEN_ERR:        agentproto.StatusLocalErr,
	C.IBV_WC_LOC_QP_OP_ERR:      agentproto.StatusLocalErr,
	C.IBV_WC_LOC_PROT_ERR:       agentproto.StatusLocalErr,
	C.IBV_WC_LOC_ACCESS_ERR:     agentproto.StatusLocalErr,
	C.IBV_WC_LOC_EEC_OP_ERR:     agentproto.StatusLocalErr,
	C.IBV_WC_LOC_RDD_VIOL_ERR:   agentproto.StatusLocalErr,
	C.IBV_WC_MW_BIND_ERR:        agentproto.StatusLocalErr,
	C.IBV_WC_BAD_RESP_ERR:       agentproto.StatusOtherErrPrefix + "bad_resp_err",
	C.IBV_WC_REM_ABORT_ERR:      agentproto.StatusOtherErrPrefix + "rem_abort_err",
	C.IBV_WC_INV_EECN_ERR:       agentproto.StatusOtherErrPrefix + "inv_eecn_err",
	C.IBV_WC_INV_EEC_STATE_ERR:  agentproto.StatusOtherErrPrefix + "inv_eec_state_err",
	C.IBV_WC_FATAL_ERR:          agentproto.StatusOtherErrPrefix + "fatal_err",
	C.IBV_WC_RESP_TIMEOUT_ERR:   agentproto.StatusOtherErrPrefix + "resp_timeout_err",
	C.IBV_WC_GENERAL_ERR:        agentproto.StatusOtherErrPrefix + "general_err",
	C.IBV_WC_REM_INV_RD_REQ_ERR: agentproto.StatusOtherErrPrefix + "rem_inv_rd_req_err",
}

// PollCQ implements agentproto.Session.
func (s *verbsSession) PollCQ(qh uint32) ([]agentproto.Completion, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.qp(qh)
	if err != nil {
		return nil, err
	}
	var out []agentproto.Completion
	var wcs [64]C.rcc_wc
	for {
		k := int(C.rcc_poll(q.cq, &wcs[0], 64))
		if k < 0 {
			return out, agentproto.Errorf(agentproto.CodeDevice, "polling the CQ failed")
		}
		for _, wc := range wcs[:k] {
			st, ok := wcStatus[C.int(wc.status)]
			if !ok {
				st = fmt.Sprintf("%sstatus_%d", agentproto.StatusOtherErrPrefix, int(wc.status))
			}
			c := agentproto.Completion{Status: st, VendorErr: uint32(wc.vendor_err), Bytes: int(wc.byte_len)}
			id := uint64(wc.wr_id)
			if id&recvBit != 0 {
				c.WRID, c.Recv, c.Op = id&^recvBit, true, agentproto.WRRecv
				if wc.status == C.IBV_WC_SUCCESS {
					c.Op = agentproto.WRSend
					switch {
					case C.int(wc.opcode) == C.IBV_WC_RECV_RDMA_WITH_IMM:
						c.Op, c.Imm, c.HasImm = agentproto.WRWriteImm, uint32(wc.imm), true
					case C.int(wc.flags)&C.IBV_WC_WITH_INV != 0:
						c.Op, c.Imm, c.HasImm = agentproto.WRSendInv, uint32(wc.imm), true
					case C.int(wc.flags)&C.IBV_WC_WITH_IMM != 0:
						c.Op, c.Imm, c.HasImm = agentproto.WRSendImm, uint32(wc.imm), true
					}
				}
			} else if w, ok := q.sends[id]; ok {
				c.WRID, c.Op = w.id, w.op
				if w.buf != nil {
					w.buf.free()
				}
				delete(q.sends, id)
			} else {
				c.WRID, c.Op = id, agentproto.WRSend
			}
			out = append(out, c)
		}
		if k < 64 {
			return out, nil
		}
	}
}

// QueryQP implements agentproto.Session.
func (s *verbsSession) QueryQP(qh uint32) (agentproto.QPStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.qp(qh)
	if err != nil {
		return agentproto.QPStatus{}, err
	}
	st := C.rcc_qp_state(q.qp)
	if st < 0 {
		return agentproto.QPStatus{}, agentproto.Errorf(agentproto.CodeDevice, "querying the QP failed")
	}
	return agentproto.QPStatus{State: stateName(st)}, nil
}

func (s *verbsSession) destroy(h uint32, q *vqp) {
	q.destroy()
	for _, mh := range q.mrs {
		if m := s.mrs[mh]; m != nil {
			m.buf.free()
			delete(s.mrs, mh)
		}
	}
	delete(s.qps, h)
}

// DestroyQP implements agentproto.Session.
func (s *verbsSession) DestroyQP(qh uint32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.qp(qh)
	if err != nil {
		return err
	}
	s.destroy(qh, q)
	return nil
}

// Counters implements agentproto.Session: the port's counters and the
// driver's hw_counters from sysfs (soft-RoCE and most NICs have them).
func (s *verbsSession) Counters() (map[string]int64, error) {
	out := map[string]int64{}
	base := filepath.Join("/sys/class/infiniband", s.v.name, "ports", strconv.Itoa(s.v.port))
	for _, sub := range []string{"counters", "hw_counters"} {
		ents, err := os.ReadDir(filepath.Join(base, sub))
		if err != nil {
			continue
		}
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(base, sub, e.Name()))
			if err != nil {
				continue
			}
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				out[sub+"/"+e.Name()] = n
			}
		}
	}
	return out, nil
}

// Close implements agentproto.Session.
func (s *verbsSession) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for h, q := range s.qps {
		s.destroy(h, q)
	}
	for h, m := range s.mrs {
		m.buf.free()
		delete(s.mrs, h)
	}
	if s.pd != nil {
		C.ibv_dealloc_pd(s.pd)
		s.pd = nil
	}
	return nil
}
