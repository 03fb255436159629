/*
 * xtcd/attach_check.c - check a HELLO and its memfd (see attach_check.h).
 *
 * Trust: everything here comes from a client that may be hostile.  The
 * message is copied into an aligned, zeroed struct before any field is
 * read, and nothing in it is believed until every check has passed.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "proto/xtc_shm.h"
#include "xtcd/attach_check.h"

/* What is wrong with a hello message of n bytes (or -errno), or NULL. */
static const char *hello_problem(const struct xtc_msg_hello *h, ssize_t n, int nfds, int *err)
{
	*err = EPROTO;
	if (n == -EMSGSIZE)
		return "the hello is larger than any valid message";
	if (n == -ETOOMANYREFS) {
		*err = EBADF;
		return "the hello carries more than one file descriptor";
	}
	if (n == -EMFILE) {
		*err = EMFILE;
		return "xtcd has no file descriptor free for the memfd; try again later";
	}
	if (n < (ssize_t)sizeof h->hdr)
		return "the hello is truncated";
	if (h->hdr.magic != XTC_ATTACH_MAGIC)
		return "the message does not start with the attach magic: not an xtc-tail client";
	if (h->hdr.major != XTC_ATTACH_MAJOR) {
		*err = EPROTONOSUPPORT;
		return "the client speaks another attach protocol version; upgrade libxtctail or xtcd";
	}
	if (h->hdr.type != XTC_MSG_HELLO)
		return "the first message is not a hello";
	if (n != (ssize_t)sizeof *h || h->hdr.size != sizeof *h)
		return "the hello has the wrong size";
	if (h->shm_major != XTC_SHM_MAJOR) {
		*err = EPROTONOSUPPORT;
		return "the client's shared-memory ABI major version is not one this xtcd speaks";
	}
	*err = EBADF;
	if (nfds == 0)
		return "the hello carries no memfd";
	if (nfds > 1)
		return "the hello carries more than one file descriptor";
	return NULL;
}

/* Copy the message into a zeroed hello and check it. */
const char *attach_check_hello(const void *buf, ssize_t n, int nfds, struct xtc_msg_hello *out,
                               int *err)
{
	memset(out, 0, sizeof *out);
	if (n > 0)
		memcpy(out, buf, (size_t)n < sizeof *out ? (size_t)n : sizeof *out);
	return hello_problem(out, n, nfds, err);
}

/* Check the memfd a valid hello carried. */
const char *attach_check_memfd(int fd, uint64_t want_size)
{
	struct stat sb;
	int seals;

	if (fstat(fd, &sb) < 0)
		return "cannot fstat the file descriptor";
	if (!S_ISREG(sb.st_mode))
		return S_ISFIFO(sb.st_mode) ? "the file descriptor is a pipe, not a memfd"
		     : S_ISDIR(sb.st_mode)  ? "the file descriptor is a directory, not a memfd"
		     : S_ISSOCK(sb.st_mode) ? "the file descriptor is a socket, not a memfd"
		                            : "the file descriptor is not a memfd";
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0)
		return "the file descriptor is not a sealable memfd";
	if ((seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
		return "the memfd is not sealed against shrinking and growing (F_SEAL_SHRINK|F_SEAL_GROW)";
	if ((uint64_t)sb.st_size != want_size)
		return "the memfd's size differs from the size the hello announces";
	if (want_size < XTC_SHM_HDR_SIZE || want_size > XTC_SHM_MAX_SEGMENT_SIZE)
		return "the segment size is out of range";
	return NULL;
}
