/*
 * fuzz/fuzz_shm.c - libFuzzer harness: a hostile producer's segment under
 * xtcd's own attach, drain and close code (xtcd/session.c, with the
 * checks of xtcd/shm_check.c), over a real memfd mapping.
 *
 * The input is a small program for the producer side:
 *   byte 0    geometry: rings 1 + (b & 3), capacity 64 << ((b >> 2) & 3),
 *             bit 4 TSC ticks (else CLOCK_MONOTONIC ns), bit 5 drop-new
 *   byte 1    bits 0-1 header patches before attach (each: u16 offset,
 *             u8 width, u64 value); bits 2-7 operations before attach
 *   then      the patches, the operations before attach, session_attach(),
 *             the operations after it, and the daemon's shutdown
 * An operation is one byte, opcode in bits 0-3 and ring in bits 4-7,
 * then its arguments (missing input bytes read as zero):
 *   0 emit records as libxtctail would (a well-behaved producer)
 *   1 set head          2 add an int16 to head
 *   3 set dropped       4 add a u16 to dropped
 *   5 set tail (the consumer's field)    6 set the ring descriptor
 *   7 write a u64 anywhere in the segment
 *   8 rewrite a header field while attached
 *   9 bump or set the no-free-ring counter
 *  10 a drain (session_drain_all)
 *  11 refuse the store's next N (bits 0-2) buffers; bit 3 turns the
 *     uid's quota block on or off        12 fail the next writes
 *  13 goodbye   14 the producer dies (EOF)   15 a garbage message
 *
 * xtcd_stubs.c fences the daemon's mapping (an out-of-segment read is an
 * ASan report) and checks every block session.c writes, including the
 * accounting identity at SESSION_END; here, after the shutdown, exactly
 * one SESSION_END must have come for an accepted segment, none for a
 * refused one, and no session may remain.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/common/clock.h"
#include "proto/xtc_attach.h"
#include "xtcd/xtcd.h"
#include "xtcd_stubs.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input, read front to back; zeros past its end. */
struct input {
	const uint8_t *p;
	size_t left;
};

static uint64_t take(struct input *in, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes; i++) {
		uint64_t b = 0;

		if (in->left) {
			b = *in->p++;
			in->left--;
		}
		v |= b << (8 * i);
	}
	return v;
}

/* The producer's side of one session. */
struct producer {
	uint8_t *map;
	uint64_t size;
	uint32_t rings, cap;
	int      drop_new;
	int      conn;          /* our end of the connection, -1 once closed */
	uint64_t ts;
	uint32_t rnd;
};

static struct xtc_shm_ring *ring(struct producer *pr, uint32_t i)
{
	return (struct xtc_shm_ring *)(void *)(pr->map + XTC_SHM_HDR_SIZE +
	                                       (uint64_t)i * xtc_shm_ring_stride(pr->cap));
}

static uint32_t next_rnd(struct producer *pr)
{
	pr->rnd = pr->rnd * 1103515245u + 12345u;
	return pr->rnd >> 8;
}

/* Emit records into ring i the way lib/tail.c does, contents varied. */
static void emit(struct producer *pr, uint32_t i, struct input *in)
{
	struct xtc_shm_ring *r = ring(pr, i);
	unsigned n = 1 + (unsigned)take(in, 1) % 128;

	pr->rnd ^= (uint32_t)take(in, 4);
	for (unsigned k = 0; k < n; k++) {
		uint32_t x = next_rnd(pr);
		struct xtc_shm_rec *rec;

		if (pr->drop_new && r->head - r->tail >= pr->cap) {
			r->dropped++;
			continue;
		}
		r->claim = r->head + 1;
		rec = &r->recs[r->head & (pr->cap - 1)];
		pr->ts += (x & 1) ? x % 5000 : (uint64_t)next_rnd(pr) << (x % 40);
		rec->ts = pr->ts;
		rec->source = (x & 2) ? 1u << (x % 7) : next_rnd(pr);
		rec->kind = (x & 4) ? x % 16 : next_rnd(pr);
		rec->loop_id = (x & 8) ? r->loop_id : next_rnd(pr);
		rec->local_id = (x & 16) ? x % 4 : next_rnd(pr);
		rec->gen = (x & 32) ? k : (uint64_t)next_rnd(pr) << 32 | next_rnd(pr);
		rec->detail = (x & 64) ? 0 : (x & 128) ? k * 3 : (uint64_t)next_rnd(pr) << (x % 33);
		r->head++;
	}
}

/* Write `width` bytes of v at offset off of the segment. */
static void poke(struct producer *pr, uint64_t off, unsigned width, uint64_t v)
{
	if (off + width > pr->size)
		return;
	memcpy(pr->map + off, &v, width);
}

static void conn_send(struct producer *pr, const void *m, size_t n)
{
	if (pr->conn >= 0 && send(pr->conn, m, n, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0)
		ev_run(xtcd_loop, EVRUN_NOWAIT);
}

/* Run one operation. */
static void op(struct producer *pr, struct input *in)
{
	uint8_t b = (uint8_t)take(in, 1);
	uint32_t i = (b >> 4) % pr->rings;
	struct xtc_shm_ring *r = ring(pr, i);
	struct xtc_msg_hdr h;
	uint8_t junk[24];

	switch (b & 15) {
	case 0:  emit(pr, i, in); break;
	case 1:  r->head = take(in, 8); break;
	case 2:  r->head += (uint64_t)(int64_t)(int16_t)take(in, 2); break;
	case 3:  r->dropped = take(in, 8); break;
	case 4:  r->dropped += take(in, 2); break;
	case 5:  r->tail = take(in, 8); break;
	case 6:
		r->loop_id = (uint32_t)take(in, 4);
		r->state = (uint32_t)take(in, 1);
		break;
	case 7:  poke(pr, take(in, 4) % pr->size, 8, take(in, 8)); break;
	case 8:  poke(pr, take(in, 2) % XTC_SHM_HDR_SIZE, 8, take(in, 8)); break;
	case 9: {
		struct xtc_shm_hdr *hdr = (struct xtc_shm_hdr *)(void *)pr->map;

		if (take(in, 1) & 1)
			hdr->no_ring_count = take(in, 8);
		else
			hdr->no_ring_count += take(in, 2);
		break;
	}
	case 10: session_drain_all(); break;
	case 11: {
		unsigned v = (unsigned)take(in, 1);

		fake.starve = v & 7;
		if (v & 8)
			fake.quota_blocked = !fake.quota_blocked;
		break;
	}
	case 12: fake.fail_next_flush = 1; break;
	case 13:
		xtc_msg_init(&h, XTC_MSG_GOODBYE, sizeof h);
		conn_send(pr, &h, sizeof h);
		break;
	case 14:
		if (pr->conn >= 0) {
			close(pr->conn);
			pr->conn = -1;
			ev_run(xtcd_loop, EVRUN_NOWAIT);
		}
		break;
	default:
		for (size_t k = 0; k < sizeof junk; k++)
			junk[k] = (uint8_t)take(in, 1);
		conn_send(pr, junk, 1 + junk[0] % sizeof junk);
		break;
	}
}

/* The segment header lib/tail.c writes, for this geometry. */
static void write_header(struct producer *pr, uint8_t geo)
{
	struct xtc_shm_hdr *h = (struct xtc_shm_hdr *)(void *)pr->map;

	h->magic = XTC_SHM_MAGIC;
	h->abi_major = XTC_SHM_MAJOR;
	h->abi_minor = XTC_SHM_MINOR;
	h->hdr_size = XTC_SHM_HDR_SIZE;
	h->rec_size = XTC_SHM_REC_SIZE;
	h->ring_count = pr->rings;
	h->ring_capacity = pr->cap;
	h->ring_hdr_size = XTC_SHM_RING_HDR_SIZE;
	h->ring_offset = XTC_SHM_HDR_SIZE;
	h->ring_stride = xtc_shm_ring_stride(pr->cap);
	h->segment_size = pr->size;
	h->producer_pid = 4242;
	h->mode = pr->drop_new ? XTC_SHM_MODE_DROP_NEW : XTC_SHM_MODE_OVERWRITE;
	memcpy(h->comm, "fuzz-producer", 14);
	h->ts_unit = (geo & 0x10) ? XTC_SHM_TS_TSC : XTC_SHM_TS_MONO_NS;
	h->ts_hz = (geo & 0x10) ? 2000000000u : 1000000000u;
	h->anchor_ts = 1000;
	h->anchor_mono_ns = mono_ns();
	h->anchor_real_ns = real_ns();
	h->producer_state = XTC_SHM_PRODUCER_ACTIVE;
	for (uint32_t i = 0; i < pr->rings; i++)
		ring(pr, i)->loop_id = i;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc; (void)argv;
	xtcd_loop = ev_default_loop(EVFLAG_AUTO | EVFLAG_NOSIGMASK);
	if (!xtcd_loop)
		abort();
	session_init_clock();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	struct producer pr;
	struct xtc_msg_hello hello;
	char why[160];
	uint8_t geo = (uint8_t)take(&in, 1), b1 = (uint8_t)take(&in, 1);
	int sv[2], memfd, attached;

	memset(&pr, 0, sizeof pr);
	pr.rings = 1 + (geo & 3);
	pr.cap = 64u << ((geo >> 2) & 3);
	pr.drop_new = (geo & 0x20) != 0;
	pr.size = xtc_shm_segment_size(pr.rings, pr.cap);
	pr.ts = 1000000;
	pr.rnd = 1;
	pr.conn = -1;
	memfd = memfd_create("xtc-fuzz-shm", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, (off_t)pr.size) < 0)
		abort();
	pr.map = mmap(NULL, pr.size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (pr.map == MAP_FAILED)
		abort();
	write_header(&pr, geo);
	for (unsigned k = 0; k < (b1 & 3u); k++) {
		uint64_t off = take(&in, 2) % XTC_SHM_HDR_SIZE;
		unsigned width = 1u << (take(&in, 1) & 3);

		poke(&pr, off, width, take(&in, 8));
	}
	for (unsigned k = 0; k < (b1 >> 2); k++)
		op(&pr, &in);

	fake.starve = 0;
	fake_store_reset();
	fake.map = pr.map;
	memcpy(&fake.geo, pr.map, sizeof fake.geo);
	fake.geo.ring_count = pr.rings;
	fake.geo.ring_capacity = pr.cap;
	fake.geo.ring_offset = XTC_SHM_HDR_SIZE;
	fake.geo.ring_stride = xtc_shm_ring_stride(pr.cap);
	/* what xtcd will read at attach: the patches may have changed it */
	fake.ts_is_ns = ((const struct xtc_shm_hdr *)pr.map)->ts_unit == XTC_SHM_TS_MONO_NS;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
		abort();
	pr.conn = sv[1];
	memset(&hello, 0, sizeof hello);
	xtc_msg_init(&hello.hdr, XTC_MSG_HELLO, sizeof hello);
	hello.segment_size = pr.size;
	hello.shm_major = XTC_SHM_MAJOR;
	fence_fd = memfd;
	attached = session_attach(sv[0], memfd, 4242, 0, 0, &hello, why, sizeof why) == 0;
	fence_fd = -1;
	if (!attached)
		close(sv[0]); /* server.c closes a refused connection */
	if (attached && session_count() != 1)
		abort();
	while (in.left)
		op(&pr, &in);

	fake.no_starve = 1;
	session_shutdown_all();
	if (session_count() != 0 || fake.ended != (attached ? 1 : 0))
		abort();
	if (pr.conn >= 0)
		close(pr.conn);
	munmap(pr.map, pr.size);
	close(memfd);
	return 0;
}
