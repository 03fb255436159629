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
 * A connection may instead start with STATUS_REQ (no descriptors): xtcd
 * answers STATUS, one STATUS_SESSION per session the peer may see (all for
 * root, its own uid's otherwise), STATUS_END, and closes.  The same access
 * rule applies as to an attach.  A 1.0 daemon answers STATUS_REQ with a
 * REFUSE ("the first message is not a hello").
 *
 * The connection lives as long as the session.  The daemon takes the peer's
 * pid, uid and gid from SO_PEERCRED; `pid` in HELLO is informational only.
 * A message whose size, magic, version or type is wrong is refused with a
 * reason and the connection is closed: the daemon keeps serving others.
 *
 * Version history (bump XTC_ATTACH_MAJOR on any incompatible change):
 *   1.0  first version.
 *   1.1  STATUS_REQ, STATUS, STATUS_SESSION, STATUS_END (xtcd --status).
 */
#ifndef XTC_PROTO_ATTACH_H
#define XTC_PROTO_ATTACH_H

#include <stddef.h>
#include <stdint.h>

#define XTC_ATTACH_MAGIC   0x41435458u /* "XTCA" little-endian */
#define XTC_ATTACH_MAJOR   1
#define XTC_ATTACH_MINOR   1
#define XTC_ATTACH_MAX_MSG 512u        /* no valid message is larger */

#define XTC_DEFAULT_SOCKET "/run/xtcd/xtcd.sock"

enum xtc_msg_type {
	XTC_MSG_HELLO   = 1,
	XTC_MSG_ACCEPT  = 2,
	XTC_MSG_REFUSE  = 3,
	XTC_MSG_GOODBYE = 4,
	/* 1.1 */
	XTC_MSG_STATUS_REQ     = 5,
	XTC_MSG_STATUS         = 6,
	XTC_MSG_STATUS_SESSION = 7,
	XTC_MSG_STATUS_END     = 8,
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

/* ---- 1.1: live status.  Bump XTC_ATTACH_MINOR if you add a field (in the
 * reserved space only, so the sizes stay) and XTC_ATTACH_MAJOR if you
 * change one.  Counts are since the daemon or the session started. */

#define XTC_STATUS_MAX_LOOPS 32  /* ring fills one STATUS_SESSION lists */
#define XTC_STATUS_FILL_CORRUPT 0xFFFFu

struct xtc_msg_status_req {
	struct xtc_msg_hdr hdr;
	uint32_t flags;          /* none defined: 0 */
	uint8_t  reserved[12];
};

struct xtc_msg_status {
	struct xtc_msg_hdr hdr;
	char     version[16];    /* PACKAGE_VERSION, NUL-terminated */
	uint32_t pid;            /* the daemon's */
	uint32_t peer_uid;       /* the asker's uid, as SO_PEERCRED gave it */
	uint64_t uptime_ns;
	uint64_t segments;       /* segment files in the directory */
	uint64_t bytes_used;     /* their bytes, the one being written included */
	uint64_t max_bytes;      /* the budget */
	uint64_t segment_bytes;
	uint32_t sessions;       /* live sessions, all uids */
	uint32_t sessions_listed;/* STATUS_SESSION messages that follow */
	uint64_t events_per_s;   /* records produced over the last second */
	uint64_t produced;       /* records, over every session since start */
	uint64_t written;
	uint64_t dropped;
	uint64_t lost;
	uint64_t uid_bytes;      /* event bytes of peer_uid's sessions on disk */
	uint64_t uid_quota;      /* its quota; UINT64_MAX: none */
	uint32_t drain_ms;
	uint32_t flags;          /* 1: writing with io_uring, 2: registered buffers */
	char     io[32];         /* the I/O backend as a phrase */
	char     dir[128];       /* the segment directory (truncated) */
	uint64_t uid_shm_mapped; /* bytes of peer_uid's segments xtcd maps */
	uint64_t uid_shm_touched;/* of them, reached by its drains (at most) */
	uint64_t uid_shm_max;    /* max_shm_per_uid */
	uint8_t  reserved[8];
};

struct xtc_status_loop {
	uint32_t loop_id;        /* as the ring's descriptor says */
	uint16_t ring;           /* index in the producer's segment */
	uint16_t fill;           /* unread records, 1/10000 of capacity;
	                          * XTC_STATUS_FILL_CORRUPT: no longer drained */
};

struct xtc_msg_status_session {
	struct xtc_msg_hdr hdr;
	uint64_t session_id;
	uint64_t uptime_ns;
	uint32_t pid;
	uint32_t uid;
	uint32_t gid;
	uint32_t ring_count;
	uint32_t ring_capacity;
	uint32_t loops_bound;    /* rings bound or holding unread records */
	uint32_t loops_listed;   /* entries of loops[] used (the first ones) */
	uint32_t flags;          /* 1: closing, 2: over its uid's quota */
	char     comm[16];
	uint64_t events_per_s;   /* records produced over the last second */
	uint64_t produced;
	uint64_t written;
	uint64_t dropped;        /* quota drops included */
	uint64_t lost;
	uint64_t bytes;          /* bytes of its EVENTS blocks on disk */
	uint64_t quota_dropped;  /* records dropped because of the quota */
	uint8_t  reserved[24];
	struct xtc_status_loop loops[XTC_STATUS_MAX_LOOPS];
};

struct xtc_msg_status_end {
	struct xtc_msg_hdr hdr;
	uint32_t sessions_sent;  /* STATUS_SESSION messages sent */
	uint32_t reserved;
};

_Static_assert(sizeof(struct xtc_msg_hdr) == 16, "msg header");
_Static_assert(sizeof(struct xtc_msg_hello) == 72, "hello");
_Static_assert(sizeof(struct xtc_msg_accept) == 48, "accept");
_Static_assert(sizeof(struct xtc_msg_refuse) == 184, "refuse");
_Static_assert(sizeof(struct xtc_msg_goodbye) == 16, "goodbye");
_Static_assert(sizeof(struct xtc_msg_status_req) == 32, "status request");
_Static_assert(sizeof(struct xtc_msg_status) == 344, "status");
_Static_assert(offsetof(struct xtc_msg_status, io) == 152, "status io");
_Static_assert(sizeof(struct xtc_status_loop) == 8, "status loop");
_Static_assert(sizeof(struct xtc_msg_status_session) == 416, "status session");
_Static_assert(offsetof(struct xtc_msg_status_session, loops) == 160, "status loops");
_Static_assert(sizeof(struct xtc_msg_status_session) <= XTC_ATTACH_MAX_MSG, "status session size");
_Static_assert(sizeof(struct xtc_msg_status_end) == 24, "status end");

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
