/*
 * proto/xtc_attach.h - the attach protocol between libxtctail and xtcd.
 *
 * Transport: a SOCK_SEQPACKET unix socket (XTC_TAIL_SHM names its path), one
 * message per packet, every message starting with struct xtc_msg_hdr.
 *
 *   app -> xtcd   HELLO    + the memfd as SCM_RIGHTS (exactly one fd)
 *   xtcd -> app   ACCEPT   + an eventfd as SCM_RIGHTS (the nudge), or
 *                 REFUSE   with a reason, then the daemon closes
 *   app -> xtcd   GOODBYE  clean detach: no more records will be produced
 *   EOF without GOODBYE    the producer died
 *
 * The connection lives as long as the session.  The daemon takes the peer's
 * pid, uid and gid from SO_PEERCRED; `pid` in HELLO is informational only.
 * A message whose size, magic, version or type is wrong is refused with a
 * reason and the connection is closed: the daemon keeps serving others.
 *
 * Version history (bump XTC_ATTACH_MAJOR on any incompatible change):
 *   1.0  first version.
 */
#ifndef XTC_PROTO_ATTACH_H
#define XTC_PROTO_ATTACH_H

#include <stddef.h>
#include <stdint.h>

#define XTC_ATTACH_MAGIC   0x41435458u /* "XTCA" little-endian */
#define XTC_ATTACH_MAJOR   1
#define XTC_ATTACH_MINOR   0
#define XTC_ATTACH_MAX_MSG 512u        /* no valid message is larger */

#define XTC_DEFAULT_SOCKET "/run/xtcd/xtcd.sock"

enum xtc_msg_type {
	XTC_MSG_HELLO   = 1,
	XTC_MSG_ACCEPT  = 2,
	XTC_MSG_REFUSE  = 3,
	XTC_MSG_GOODBYE = 4,
};

struct xtc_msg_hdr {
	uint32_t magic;     /* XTC_ATTACH_MAGIC */
	uint16_t major;     /* XTC_ATTACH_MAJOR */
	uint16_t minor;     /* XTC_ATTACH_MINOR */
	uint16_t type;      /* enum xtc_msg_type */
	uint16_t reserved;
	uint32_t size;      /* bytes of the whole message, header included */
};

struct xtc_msg_hello {
	struct xtc_msg_hdr hdr;
	uint64_t segment_size; /* must equal the memfd's size and the header's */
	uint32_t shm_major;    /* XTC_SHM_MAJOR the library speaks */
	uint32_t shm_minor;
	uint32_t pid;          /* informational: SO_PEERCRED is authoritative */
	uint32_t attach_count; /* how many times this segment attached before */
	char     comm[16];
	uint8_t  reserved[16];
};

struct xtc_msg_accept {
	struct xtc_msg_hdr hdr;
	uint64_t session_id;   /* the daemon's id for this session */
	uint32_t drain_ms;     /* the daemon's drain period */
	uint32_t has_nudge_fd; /* 1 when an eventfd rides along */
	uint8_t  reserved[16];
};

struct xtc_msg_refuse {
	struct xtc_msg_hdr hdr;
	int32_t  error;        /* a positive errno value naming the class */
	uint32_t reserved;
	char     reason[160];  /* one line, NUL-terminated */
};

struct xtc_msg_goodbye {
	struct xtc_msg_hdr hdr;
};

_Static_assert(sizeof(struct xtc_msg_hdr) == 16, "msg header");
_Static_assert(sizeof(struct xtc_msg_hello) == 72, "hello");
_Static_assert(sizeof(struct xtc_msg_accept) == 48, "accept");
_Static_assert(sizeof(struct xtc_msg_refuse) == 184, "refuse");
_Static_assert(sizeof(struct xtc_msg_goodbye) == 16, "goodbye");

/* Fill a message header. */
static inline void xtc_msg_init(struct xtc_msg_hdr *h, uint16_t type, uint32_t size)
{
	h->magic = XTC_ATTACH_MAGIC;
	h->major = XTC_ATTACH_MAJOR;
	h->minor = XTC_ATTACH_MINOR;
	h->type = type;
	h->reserved = 0;
	h->size = size;
}

#endif /* XTC_PROTO_ATTACH_H */
