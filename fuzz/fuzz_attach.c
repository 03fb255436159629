/*
 * fuzz/fuzz_attach.c - libFuzzer harness: the attach message parser and
 * the memfd check (xtcd/attach_check.c), then the segment header check
 * (xtcd/shm_check.c) over the mapping a passing memfd gives.
 *
 * Input:
 *   byte 0    bits 0-1  what the receive returned: 0 the message's length,
 *                       1 -EMSGSIZE, 2 -ETOOMANYREFS, 3 -EMFILE
 *             bits 2-5  descriptors that came with it (0..15)
 *   byte 1    the descriptor: 0-3 a memfd, 4 a pipe, 5 a directory,
 *             6 a socket, 7 a memfd that cannot be sealed
 *   byte 2    seals for a memfd (F_SEAL_* bits)
 *   byte 3    bit 0: the memfd is the size the hello announces, else
 *             bytes 4-7 give it (at most 1 MiB)
 *   bytes 4-7 a memfd size
 *   bytes 8-9 the message's length L
 *   then      the message, L bytes (more than XTC_ATTACH_MAX_MSG is
 *             -EMSGSIZE, as recvmsg's MSG_TRUNC would make it)
 *   then      the memfd's first bytes (its segment header); zeros follow
 * A memfd larger than 1 MiB is never made.
 *
 * Besides the sanitizers, it aborts when a hello passes without every
 * property xtcd relies on (magic, versions, size, exactly one fd), when
 * a refusal carries an errno class other than the four xtcd uses, when a
 * passing memfd is not sealed or not its announced size, or when a
 * passing segment header describes a geometry that overruns the mapping.
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

#include "proto/xtc_attach.h"
#include "proto/xtc_shm.h"
#include "xtcd/attach_check.h"
#include "xtcd/shm_check.h"

#define MAX_MEMFD (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A memfd of n bytes starting with pat, sealed with seals. */
static int make_memfd(uint64_t n, const uint8_t *pat, size_t plen, unsigned seals, int sealable)
{
	int fd = memfd_create("xtc-fuzz", MFD_CLOEXEC | (sealable ? MFD_ALLOW_SEALING : 0));

	if (fd < 0)
		abort();
	if (ftruncate(fd, (off_t)n) < 0)
		abort();
	if (plen > n)
		plen = (size_t)n;
	if (plen && pwrite(fd, pat, plen, 0) != (ssize_t)plen)
		abort();
	if (sealable)
		fcntl(fd, F_ADD_SEALS, seals & (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE));
	return fd;
}

/* Whatever descriptor byte 1 asks for; -1 when it cannot be made. */
static int make_fd(uint8_t kind, uint64_t n, const uint8_t *pat, size_t plen, unsigned seals,
                   int *extra)
{
	int p[2];

	*extra = -1;
	switch (kind & 7) {
	case 4:
		if (pipe2(p, O_CLOEXEC) < 0)
			abort();
		*extra = p[1];
		return p[0];
	case 5:
		return open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	case 6:
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p) < 0)
			abort();
		*extra = p[1];
		return p[0];
	case 7:
		return make_memfd(n, pat, plen, seals, 0);
	default:
		return make_memfd(n, pat, plen, seals, 1);
	}
}

/* A passing hello has every property the daemon relies on. */
static void check_passed_hello(const struct xtc_msg_hello *h, ssize_t n, int nfds)
{
	if (n != (ssize_t)sizeof *h || h->hdr.magic != XTC_ATTACH_MAGIC ||
	    h->hdr.major != XTC_ATTACH_MAJOR || h->hdr.type != XTC_MSG_HELLO ||
	    h->hdr.size != sizeof *h || h->shm_major != XTC_SHM_MAJOR || nfds != 1)
		abort();
}

/* A passing memfd: map it as session_attach does, check the header copy,
 * and walk the geometry a passing header describes. */
static void check_passed_memfd(int fd, uint64_t want)
{
	struct xtc_shm_hdr copy;
	const volatile uint8_t *map;
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW) ||
	    lseek(fd, 0, SEEK_END) != (off_t)want)
		abort();
	map = mmap(NULL, want, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		abort();
	memcpy(&copy, (const void *)map, sizeof copy);
	if (shm_check_header(&copy, want) == NULL) {
		uint64_t end = copy.ring_offset + (uint64_t)copy.ring_count * copy.ring_stride;
		uint8_t sum = 0;

		if (end != want || copy.ring_stride < XTC_SHM_RING_HDR_SIZE +
		    (uint64_t)copy.ring_capacity * XTC_SHM_REC_SIZE)
			abort();
		for (uint32_t i = 0; i < copy.ring_count; i++)
			sum ^= map[copy.ring_offset + (uint64_t)i * copy.ring_stride +
			           copy.ring_stride - 1];
		(void)sum;
	}
	munmap((void *)map, want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xtc_msg_hello h;
	const uint8_t *msg, *content;
	const char *problem;
	size_t mlen, clen;
	uint16_t len16;
	ssize_t n;
	uint64_t fdsize;
	uint32_t sz32;
	int nfds, err, fd, extra;

	if (size < 10)
		return 0;
	memcpy(&len16, data + 8, 2);
	msg = data + 10;
	mlen = len16 < size - 10 ? len16 : size - 10;
	content = msg + mlen;
	clen = size - 10 - mlen;
	switch (data[0] & 3) {
	case 0:  n = mlen > XTC_ATTACH_MAX_MSG ? -EMSGSIZE : (ssize_t)mlen; break;
	case 1:  n = -EMSGSIZE; break;
	case 2:  n = -ETOOMANYREFS; break;
	default: n = -EMFILE; break;
	}
	nfds = (data[0] >> 2) & 15;
	problem = attach_check_hello(msg, n, nfds, &h, &err);
	if (problem != NULL) {
		if (err != EPROTO && err != EPROTONOSUPPORT && err != EBADF && err != EMFILE)
			abort();
		if (!memchr(problem, '\0', 200))
			abort();
		return 0;
	}
	check_passed_hello(&h, n, nfds);
	memcpy(&sz32, data + 4, 4);
	fdsize = (data[3] & 1) ? h.segment_size : sz32;
	if (fdsize > MAX_MEMFD)
		return 0;
	fd = make_fd(data[1], fdsize, content, clen, data[2], &extra);
	if (fd < 0)
		return 0;
	if (attach_check_memfd(fd, h.segment_size) == NULL)
		check_passed_memfd(fd, h.segment_size);
	close(fd);
	if (extra >= 0)
		close(extra);
	return 0;
}
