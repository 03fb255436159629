/*
 * xtcd/attach_check.h - the checks of an attach request that need no
 * socket: the HELLO message and the memfd that came with it.
 *
 * server.c receives the message and the descriptors and calls these; the
 * fuzzers (fuzz/fuzz_attach.c) call the very same functions on arbitrary
 * bytes.  Both return NULL when all is well, or a one-line reason that
 * goes to the client in a REFUSE and to the log.
 */
#ifndef XTCD_ATTACH_CHECK_H
#define XTCD_ATTACH_CHECK_H

#include <stdint.h>
#include <sys/types.h>

#include "proto/xtc_attach.h"

/* Parse and check the first message of a connection.  n is what the
 * receive returned: the bytes at buf, or -EMSGSIZE (larger than any
 * message), -ETOOMANYREFS (more descriptors than xtcd makes room for) or
 * -EMFILE (the kernel could not install a descriptor); nfds is how many
 * descriptors came with it.  On success *out is the hello; otherwise *out
 * holds what could be copied and *err the positive errno for the REFUSE. */
const char *attach_check_hello(const void *buf, ssize_t n, int nfds, struct xtc_msg_hello *out,
                               int *err);

/* Check the descriptor a valid hello carried: a regular, sealable memfd
 * sealed against shrinking and growing, of exactly want_size bytes, and
 * that size within the shared-memory ABI's bounds. */
const char *attach_check_memfd(int fd, uint64_t want_size);

#endif /* XTCD_ATTACH_CHECK_H */
