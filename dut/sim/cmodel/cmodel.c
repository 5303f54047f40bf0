/*
 * cmodel: how a cycle-based device model is wrapped for rcconform's sim
 * adapter (dut/sim/PROTOCOL.md). It is two parts in one file:
 *
 *  - the model: a RoCEv2 RC responder clocked at 250 MHz (4 ns a cycle)
 *    with a 64-bit bus in and out, called once per cycle (model_cycle),
 *    as a Verilator model's eval() or an HLS top function would be. It
 *    implements SEND, RDMA WRITE and RDMA READ as a responder, sequence
 *    NAKs with a NAK latch, RNR NAKs, remote access NAKs, and answers
 *    duplicates (an ACK of the latest PSN; a duplicate READ is executed
 *    again). It has no requester, no completion queue and no atomics, so
 *    its hello declares only "memory": the suite reports the requester
 *    rules, the atomics and the clauses needing completions unsupported.
 *    It checks nothing else an RC responder must (the opcode sequence
 *    within a message, lengths against the MTU, responder resources):
 *    the suite's verdicts on it are its own.
 *
 *  - the wrapper: reset, the protocol's JSON lines on standard input and
 *    output, frames split into bus words on the way in and joined on the
 *    way out, and the clock in nanoseconds. It skips cycles in which the
 *    model is idle (nothing on the bus, nothing due), which an RTL model's
 *    wrapper cannot do: there every cycle costs.
 *
 * Build: cc -O2 -o cmodel cmodel.c
 * Check: rcconform sim-check --sim=./cmodel
 * Run:   go tool ginkgo run ./rules -- --dut=sim --sim=$PWD/cmodel
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CYCLE_NS 4     /* 250 MHz */
#define BUS_BYTES 8    /* one 64-bit bus word per cycle */
#define TURNAROUND 25  /* cycles from a request's last word to its answer */
#define MAXFRAME 9216
#define MAXQP 16
#define TXQ 4096       /* frames waiting to leave */
#define RXWORDS 65536  /* bus words waiting to enter */

/* ------------------------------------------------------------------ */
/* The model.                                                          */

struct word { uint8_t b[BUS_BYTES]; int keep, last; };

struct qp {
	int used;
	uint32_t qpn, remote_qpn, epsn, msn;
	int mtu, rq, min_rnr, latched;
	uint8_t *mem; uint64_t va; uint32_t rkey, len; int mr, mr_valid;
	uint64_t wva; /* where the WRITE in progress goes next */
	int inmsg;    /* the message in progress: 0 none, 1 SEND, 2 WRITE */
};

struct txframe { uint8_t *b; int n; uint64_t ready; };

static struct qp qps[MAXQP];
static uint64_t cycle;              /* the model's cycle count since reset */
static uint8_t rxbuf[MAXFRAME]; static int rxlen;
static struct txframe txq[TXQ]; static int txhead, txcount, txoff;
static uint16_t ipid;

static uint32_t crc32(uint32_t c, const uint8_t *p, int n) {
	c = ~c;
	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
	}
	return ~c;
}

/* The ICRC of an IPv4 RoCEv2 frame of n bytes (ICRC included): CRC-32
 * over eight 0xFF bytes, the IP, UDP and BTH headers with their variant
 * fields set to ones, and the rest up to the ICRC. */
static uint32_t icrc(const uint8_t *f, int n) {
	static const uint8_t ff[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
	uint8_t h[40];
	memcpy(h, f + 14, 40);
	h[1] = 0xFF; h[8] = 0xFF; h[10] = h[11] = 0xFF;  /* TOS, TTL, checksum */
	h[26] = h[27] = 0xFF;                              /* UDP checksum */
	h[32] = 0xFF;                                      /* FECN, BECN, resv6 */
	uint32_t c = crc32(0, ff, 8);
	c = crc32(c, h, 40);
	return crc32(c, f + 54, n - 54 - 4);
}

static uint32_t be24(const uint8_t *p) { return (uint32_t)p[0] << 16 | p[1] << 8 | p[2]; }
static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | be24(p + 1); }
static void put24(uint8_t *p, uint32_t v) { p[0] = v >> 16; p[1] = v >> 8; p[2] = v; }

/* credit code for n receive WQEs: the largest table entry not above n */
static int credits(int n) {
	static const int table[31] = {0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384,
		512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768};
	int code = 0;
	for (int i = 0; i < 31; i++) if (table[i] <= n) code = i;
	return code;
}

/* respond queues an answer to the request frame req: opcode op, PSN psn,
 * an AETH with syndrome syn when syn >= 0, and n payload bytes. */
static void respond(const uint8_t *req, struct qp *q, int op, uint32_t psn, int syn, const uint8_t *pl, int n) {
	if (txcount == TXQ) return; /* the transmit queue overflowed: dropped */
	int pad = (4 - n % 4) % 4, len = 14 + 20 + 8 + 12 + (syn >= 0 ? 4 : 0) + n + pad + 4;
	uint8_t *f = calloc(1, len);
	memcpy(f, req + 6, 6); memcpy(f + 6, req, 6); f[12] = 0x08;
	uint8_t *ip = f + 14;
	ip[0] = 0x45; ip[2] = (len - 14) >> 8; ip[3] = len - 14;
	ipid++; ip[4] = ipid >> 8; ip[5] = ipid; ip[6] = 0x40; ip[8] = 64; ip[9] = 17;
	memcpy(ip + 12, req + 30, 4); memcpy(ip + 16, req + 26, 4);
	uint32_t sum = 0;
	for (int i = 0; i < 20; i += 2) sum += ip[i] << 8 | ip[i + 1];
	while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
	ip[10] = ~sum >> 8; ip[11] = ~sum;
	uint8_t *udp = f + 34;
	udp[0] = 0xC0 | (q->qpn >> 8 & 0x3F); udp[1] = q->qpn; udp[2] = 4791 >> 8; udp[3] = 4791 & 0xFF;
	udp[4] = (len - 34) >> 8; udp[5] = len - 34;
	uint8_t *bth = f + 42;
	bth[0] = op; bth[1] = pad << 4; bth[2] = bth[3] = 0xFF;
	put24(bth + 5, q->remote_qpn); put24(bth + 9, psn & 0xFFFFFF);
	int off = 54;
	if (syn >= 0) { f[off] = syn; put24(f + off + 1, q->msn & 0xFFFFFF); off += 4; }
	if (n) memcpy(f + off, pl, n);
	uint32_t c = icrc(f, len);
	f[len - 4] = c; f[len - 3] = c >> 8; f[len - 2] = c >> 16; f[len - 1] = c >> 24;
	struct txframe *t = &txq[(txhead + txcount++) % TXQ];
	t->b = f; t->n = len; t->ready = cycle + TURNAROUND;
}

static void ack(const uint8_t *req, struct qp *q, uint32_t psn, int syn) {
	respond(req, q, 0x11, psn, syn, NULL, 0);
}

/* read_response answers a READ of len bytes at va starting at PSN psn. */
static void read_response(const uint8_t *req, struct qp *q, uint32_t psn, uint64_t va, uint32_t len) {
	int npkts = len ? (len + q->mtu - 1) / q->mtu : 1;
	for (int i = 0; i < npkts; i++) {
		int n = (int)len - i * q->mtu < q->mtu ? (int)len - i * q->mtu : q->mtu;
		int op = npkts == 1 ? 0x10 : i == 0 ? 0x0D : i == npkts - 1 ? 0x0F : 0x0E;
		int syn = op == 0x0E ? -1 : credits(q->rq);
		respond(req, q, op, psn + i, syn, q->mem + (va - q->va) + (uint64_t)i * q->mtu, n);
	}
}

static int access_ok(struct qp *q, uint32_t rkey, uint64_t va, uint32_t len) {
	return q->mem && q->mr_valid && rkey == q->rkey && va >= q->va && va + len <= q->va + q->len;
}

/* request handles a whole frame from the bus. */
static void request(const uint8_t *f, int n) {
	if (n < 58 || f[12] != 0x08 || f[13] != 0 || f[14] != 0x45 || f[23] != 17 || (f[36] << 8 | f[37]) != 4791) return;
	if (icrc(f, n) != (uint32_t)(f[n - 4] | f[n - 3] << 8 | f[n - 2] << 16 | (uint32_t)f[n - 1] << 24)) return;
	const uint8_t *bth = f + 42;
	int op = bth[0], pad = bth[1] >> 4 & 3, ackreq = bth[8] & 0x80;
	uint32_t qpn = be24(bth + 5), psn = be24(bth + 9);
	struct qp *q = NULL;
	for (int i = 0; i < MAXQP; i++) if (qps[i].used && qps[i].qpn == qpn) q = &qps[i];
	if (!q || (bth[2] << 8 | bth[3]) != 0xFFFF) return;
	int reth = op == 0x06 || op == 0x0A || op == 0x0B || op == 0x0C;
	const uint8_t *pl = bth + 12 + (reth ? 16 : 0) + (op == 0x03 || op == 0x05 || op == 0x09 || op == 0x0B ? 4 : 0);
	int plen = (int)(f + n - 4 - pad - pl);
	uint64_t va = reth ? (uint64_t)be32(bth + 12) << 32 | be32(bth + 16) : 0;
	uint32_t rkey = reth ? be32(bth + 20) : 0, dlen = reth ? be32(bth + 24) : 0;
	int32_t diff = (int32_t)((psn - q->epsn) << 8) >> 8; /* signed 24-bit distance */
	if (plen < 0 || op > 0x0C) { /* not a request this model knows */
		if (diff == 0) ack(f, q, psn, 0x61);       /* NAK invalid request */
		return;
	}
	if (diff > 0) {                                /* ahead: sequence NAK, once */
		if (!q->latched) ack(f, q, q->epsn, 0x60);
		q->latched = 1;
		return;
	}
	if (diff < 0) {                                /* a duplicate */
		if (op == 0x0C) {
			if (access_ok(q, rkey, va, dlen)) read_response(f, q, psn, va, dlen);
		} else if (ackreq) {
			ack(f, q, q->epsn - 1, credits(q->rq));
		}
		return;
	}
	/* the opcode sequence: a Middle or Last continues the message in
	 * progress, anything else needs none in progress */
	int cont = op == 0x01 || op == 0x02 || op == 0x03 || op == 0x07 || op == 0x08 || op == 0x09;
	int kind = op <= 0x05 ? 1 : op <= 0x0B ? 2 : 0;
	if (cont ? q->inmsg != kind : q->inmsg != 0) { ack(f, q, q->epsn, 0x61); return; } /* NAK invalid request */
	if (op <= 0x0B && plen > q->mtu) { ack(f, q, q->epsn, 0x61); return; }         /* longer than the MTU: likewise */
	q->inmsg = op == 0x00 || op == 0x01 || op == 0x06 || op == 0x07 ? kind : 0;
	q->latched = 0;
	if (op <= 0x05) {                              /* SEND */
		if (op == 0x00 || op == 0x04 || op == 0x05) {
			if (q->rq == 0) { ack(f, q, psn, 0x20 | q->min_rnr); return; } /* RNR NAK */
			q->rq--;
		}
	} else if (op <= 0x0B) {                       /* RDMA WRITE */
		if (reth) {
			if (!access_ok(q, rkey, va, dlen)) { ack(f, q, psn, 0x62); return; } /* remote access */
			q->wva = va;
		}
		if (!q->mem || q->wva + plen > q->va + q->len) { ack(f, q, psn, 0x62); return; }
		memcpy(q->mem + (q->wva - q->va), pl, plen);
		q->wva += plen;
	} else {                                       /* RDMA READ */
		if (!access_ok(q, rkey, va, dlen)) { ack(f, q, psn, 0x62); return; }
		q->msn++;
		read_response(f, q, psn, va, dlen);
		q->epsn = (psn + (dlen ? (dlen + q->mtu - 1) / q->mtu : 1)) & 0xFFFFFF;
		return;
	}
	q->epsn = (psn + 1) & 0xFFFFFF;
	if (op == 0x02 || op == 0x03 || op == 0x04 || op == 0x05 || op == 0x08 || op == 0x09 || op == 0x0A || op == 0x0B) q->msn++;
	if (ackreq) ack(f, q, psn, credits(q->rq));
}

/* model_cycle is one clock cycle: in is the bus word arriving (NULL:
 * none); a word leaving goes to *out, and the call returns 1 then. */
static int model_cycle(const struct word *in, struct word *out) {
	cycle++;
	if (in) {
		if (rxlen + in->keep <= MAXFRAME) memcpy(rxbuf + rxlen, in->b, in->keep);
		rxlen += in->keep;
		if (in->last) { if (rxlen <= MAXFRAME) request(rxbuf, rxlen); rxlen = 0; }
	}
	if (txcount == 0 || txq[txhead].ready > cycle) return 0;
	struct txframe *t = &txq[txhead];
	out->keep = t->n - txoff < BUS_BYTES ? t->n - txoff : BUS_BYTES;
	memcpy(out->b, t->b + txoff, out->keep);
	txoff += out->keep;
	out->last = txoff == t->n;
	if (out->last) { free(t->b); txhead = (txhead + 1) % TXQ; txcount--; txoff = 0; }
	return 1;
}

static int model_idle(void) { return txcount == 0 && rxlen == 0; }

static void model_reset(void) {
	for (int i = 0; i < MAXQP; i++) free(qps[i].mem);
	memset(qps, 0, sizeof qps);
	cycle = 0; rxlen = 0; txhead = txcount = txoff = 0;
}

/* ------------------------------------------------------------------ */
/* The wrapper.                                                        */

static struct word rxq[RXWORDS]; static int rxhead, rxcount; /* words on their way in */
static uint8_t outbuf[MAXFRAME]; static int outlen;           /* a frame on its way out */
static uint64_t now_ns;                                       /* the time as last reported */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void put_b64(const uint8_t *p, int n) {
	for (int i = 0; i < n; i += 3) {
		uint32_t v = p[i] << 16 | (i + 1 < n ? p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
		putchar(b64[v >> 18 & 63]); putchar(b64[v >> 12 & 63]);
		putchar(i + 1 < n ? b64[v >> 6 & 63] : '='); putchar(i + 2 < n ? b64[v & 63] : '=');
	}
}

static int get_b64(const char *s, uint8_t *out, int cap) {
	int n = 0, bits = 0; uint32_t v = 0;
	for (; *s && *s != '"'; s++) {
		const char *c = strchr(b64, *s);
		if (*s == '=' || !c) continue;
		v = v << 6 | (uint32_t)(c - b64); bits += 6;
		if (bits >= 8) { bits -= 8; if (n < cap) out[n] = v >> bits; n++; }
	}
	return n;
}

/* The few JSON fields the requests carry, found by their key: the keys
 * of the protocol's requests are unique within a line. */
static const char *field(const char *line, const char *key) {
	char pat[40];
	snprintf(pat, sizeof pat, "\"%s\":", key);
	const char *p = strstr(line, pat);
	if (!p) return NULL;
	for (p += strlen(pat); *p == ' '; p++) {}
	return p;
}
static long long num(const char *line, const char *key, long long def) {
	const char *p = field(line, key);
	return p ? strtoll(p, NULL, 10) : def;
}
static int yes(const char *line, const char *key) { const char *p = field(line, key); return p && *p == 't'; }

static void reply(long long id, const char *fmt, const char *extra) {
	printf("{\"id\":%lld,\"ok\":true,\"time\":%" PRIu64 "%s%s}\n", id, now_ns, fmt, extra ? extra : "");
	fflush(stdout);
}
static void refuse(long long id, const char *code, const char *msg) {
	printf("{\"id\":%lld,\"ok\":false,\"code\":\"%s\",\"error\":\"%s\"}\n", id, code, msg);
	fflush(stdout);
}

static struct qp *handle(const char *line, const char *key) {
	long long h = num(line, key, 0);
	return h >= 1 && h <= MAXQP && qps[h - 1].used ? &qps[h - 1] : NULL;
}

/* advance runs cycles up to until, stopping at the cycle in which a
 * frame's last word left. */
static void advance(long long id, uint64_t until) {
	for (;;) {
		uint64_t next = (now_ns / CYCLE_NS + 1) * CYCLE_NS;
		if (next > until) break;
		if (rxcount == 0 && model_idle()) { /* nothing can happen: skip */
			cycle = until / CYCLE_NS;
			break;
		}
		struct word in, out;
		int have = rxcount > 0;
		if (have) { in = rxq[rxhead]; rxhead = (rxhead + 1) % RXWORDS; rxcount--; }
		now_ns = next;
		if (model_cycle(have ? &in : NULL, &out)) {
			memcpy(outbuf + outlen, out.b, out.keep);
			outlen += out.keep;
			if (out.last) {
				printf("{\"id\":%lld,\"ok\":true,\"time\":%" PRIu64 ",\"frame\":\"", id, now_ns);
				put_b64(outbuf, outlen);
				printf("\"}\n");
				fflush(stdout);
				outlen = 0;
				return;
			}
		}
	}
	now_ns = until;
	reply(id, "", NULL);
}

int main(void) {
	static char line[1 << 25];
	static uint8_t buf[1 << 24];
	char extra[512];
	model_reset();
	while (fgets(line, sizeof line, stdin)) {
		long long id = num(line, "id", 0);
		const char *op = field(line, "op");
		struct qp *q;
		if (!op) { refuse(id, "bad-request", "no op"); continue; }
		if (!strncmp(op, "\"hello\"", 7)) {
			reply(id, ",\"sim\":{\"caps\":[\"memory\"]},\"hello\":{\"version\":1,\"device\":{\"agent\":\"cmodel (a C cycle model, 250 MHz, 64-bit bus)\","
				"\"name\":\"cmodel\",\"address\":\"10.0.0.1\",\"udp_port\":4791,\"active_mtu\":4096,\"pkey\":65535,"
				"\"atomics\":false,\"srq\":false,\"max_qp_rd_atom\":16,\"max_qp_init_rd_atom\":16}}", NULL);
		} else if (!strncmp(op, "\"advance\"", 9)) {
			long long until = num(line, "until", -1);
			if (until < 0 || (uint64_t)until < now_ns) refuse(id, "bad-request", "advance needs until, not before now");
			else advance(id, until);
		} else if (!strncmp(op, "\"frame\"", 7)) {
			const char *p = field(line, "frame");
			int n = p ? get_b64(p + 1, buf, MAXFRAME) : 0;
			if (n <= 0 || n > MAXFRAME || rxcount + (n + BUS_BYTES - 1) / BUS_BYTES > RXWORDS) { refuse(id, "bad-request", "frame needs a frame"); continue; }
			for (int off = 0; off < n; off += BUS_BYTES) { /* split into bus words */
				struct word *w = &rxq[(rxhead + rxcount++) % RXWORDS];
				w->keep = n - off < BUS_BYTES ? n - off : BUS_BYTES;
				memcpy(w->b, buf + off, w->keep);
				w->last = off + BUS_BYTES >= n;
			}
			reply(id, "", NULL);
		} else if (!strncmp(op, "\"create_qp\"", 11)) {
			int i = 0;
			while (i < MAXQP && qps[i].used) i++;
			if (i == MAXQP) { refuse(id, "device", "no free QP"); continue; }
			if (yes(line, "srq")) { refuse(id, "unsupported", "cmodel has no shared receive queue"); continue; }
			q = &qps[i];
			memset(q, 0, sizeof *q);
			q->used = 1; q->qpn = 0x100 + i; q->remote_qpn = num(line, "remote_qpn", 0);
			q->epsn = num(line, "rq_psn", 0) & 0xFFFFFF; q->mtu = num(line, "mtu", 1024);
			q->min_rnr = num(line, "min_rnr_timer", 0) & 0x1F;
			snprintf(extra, sizeof extra, ",\"qp_info\":{\"qp\":%d,\"qpn\":%u,\"state\":\"RTS\",\"address\":\"10.0.0.1\",\"pkey\":65535,"
				"\"attr\":{\"mtu\":%d,\"sq_psn\":%lld,\"rq_psn\":%u}}", i + 1, q->qpn, q->mtu, num(line, "sq_psn", 0), q->epsn);
			reply(id, extra, NULL);
		} else if (!strncmp(op, "\"reg_mr\"", 8)) {
			long long len = num(line, "length", 0);
			if (!(q = handle(line, "qp"))) { refuse(id, "not-found", "no such QP"); continue; }
			if (q->mem || len <= 0 || len > (64 << 20)) { refuse(id, "unsupported", "cmodel registers one region of at most 64 MiB per QP"); continue; }
			q->mem = calloc(1, len); q->len = len; q->va = 0x40000000ull * (q - qps + 1);
			q->rkey = 0x1000 + (q - qps); q->mr = q - qps + 1; q->mr_valid = 1;
			snprintf(extra, sizeof extra, ",\"mr_info\":{\"mr\":%d,\"rkey\":%u,\"lkey\":%u,\"addr\":%" PRIu64 ",\"length\":%u}",
				q->mr, q->rkey, q->rkey, q->va, q->len);
			reply(id, extra, NULL);
		} else if (!strncmp(op, "\"read_mem\"", 10) || !strncmp(op, "\"write_mem\"", 11) || !strncmp(op, "\"invalidate_mr\"", 15)) {
			long long off = num(line, "offset", 0), len = num(line, "length", 0);
			if (!(q = handle(line, "mr")) || !q->mem) { refuse(id, "not-found", "no such memory region"); continue; }
			if (op[1] == 'i') { q->mr_valid = 0; reply(id, "", NULL); continue; }
			if (op[1] == 'w') {
				const char *p = field(line, "data");
				len = p ? get_b64(p + 1, buf, sizeof buf) : 0;
			}
			if (off < 0 || len < 0 || off + len > q->len) { refuse(id, "bad-request", "outside the region"); continue; }
			if (op[1] == 'w') { memcpy(q->mem + off, buf, len); reply(id, "", NULL); continue; }
			printf("{\"id\":%lld,\"ok\":true,\"time\":%" PRIu64 ",\"data\":\"", id, now_ns);
			put_b64(q->mem + off, len);
			printf("\"}\n");
			fflush(stdout);
		} else if (!strncmp(op, "\"post_recv\"", 11)) {
			if (!(q = handle(line, "qp"))) { refuse(id, "not-found", "no such QP"); continue; }
			q->rq += num(line, "count", 0);
			reply(id, "", NULL);
		} else if (!strncmp(op, "\"destroy_qp\"", 12)) {
			if (!(q = handle(line, "qp"))) { refuse(id, "not-found", "no such QP"); continue; }
			free(q->mem);
			memset(q, 0, sizeof *q);
			reply(id, "", NULL);
		} else if (!strncmp(op, "\"post_send\"", 11) || !strncmp(op, "\"poll_cq\"", 9) || !strncmp(op, "\"query_qp\"", 10)) {
			refuse(id, "unsupported", "cmodel is a responder without a completion queue");
		} else {
			refuse(id, "bad-request", "unknown op");
		}
	}
	return 0;
}
