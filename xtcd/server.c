/*
 * xtcd/server.c - the attach socket.
 *
 * A connection must send one valid HELLO carrying exactly one memfd
 * within --hello-timeout; everything about it is checked before anything
 * is mapped: the peer's credentials (SO_PEERCRED, never the message), the
 * access rule, the message's size, magic, version and type, the fd's
 * type, its seals (the segment must be unable to shrink or grow under our
 * mapping, or a truncate would SIGBUS us) and its size.  A bad client gets
 * a REFUSE with a one-line reason, the daemon logs the same line, and the
 * connection is closed; nobody else notices.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/xtc_attach.h"
#include "xtcd.h"

#define MAX_FDS 8 /* room to see (and refuse) a client sending several */

struct pending {
	struct pending *next;
	int      fd;
	ev_io    io;
	ev_timer timer;
	struct ucred cred;
	const char *refuse_why; /* decided at accept, answered to the hello */
	int      refuse_err;
};

static struct {
	struct ev_loop *loop;
	int      fd;
	int      owned_path;  /* we bound it, so we unlink it */
	ev_io    io;
	ev_timer retry;       /* accept backoff after EMFILE */
	struct pending *pending;
	size_t   npending;
} srv = { .fd = -1 };

static void pending_free(struct pending *p)
{
	struct pending **pp;

	for (pp = &srv.pending; *pp != NULL; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	srv.npending--;
	ev_io_stop(srv.loop, &p->io);
	ev_timer_stop(srv.loop, &p->timer);
	if (p->fd >= 0)
		close(p->fd);
	free(p);
}

static ssize_t recv_hello(int fd, void *buf, size_t len, int *fds, int *nfds);

/* Read and drop what the client sent and we did not read: a unix socket
 * closed with unread data resets the connection, and the client would
 * read ECONNRESET instead of our REFUSE. */
static void drain_unread(int fd)
{
	char buf[XTC_ATTACH_MAX_MSG];
	int fds[MAX_FDS], nfds;

	for (int k = 0; k < 8; k++) {
		ssize_t n = recv_hello(fd, buf, sizeof buf, fds, &nfds);

		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		if (n == 0 || n == -EAGAIN || n == -ECONNRESET)
			break;
	}
}

/* Tell the client why, log it, and let it go. */
static void refuse(struct pending *p, int err, const char *why)
{
	struct xtc_msg_refuse m;

	memset(&m, 0, sizeof m);
	xtc_msg_init(&m.hdr, XTC_MSG_REFUSE, sizeof m);
	m.error = err;
	snprintf(m.reason, sizeof m.reason, "%s", why);
	if (send(p->fd, &m, sizeof m, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* the client is gone; the log line is what remains */
	}
	xlog("refused pid %d uid %u: %s", (int)p->cred.pid, (unsigned)p->cred.uid, why);
	drain_unread(p->fd);
	pending_free(p);
}

/* The access rule: any uid that can reach the socket, unless an allow
 * list is configured. */
static int uid_allowed(uid_t uid)
{
	if (cfg.allow_uids == NULL || uid == 0)
		return 1;
	for (size_t i = 0; i < cfg.allow_uid_count; i++)
		if (cfg.allow_uids[i] == uid)
			return 1;
	return 0;
}

/* Check the memfd.  Returns NULL or what is wrong with it. */
static const char *memfd_problem(int fd, uint64_t want_size)
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

/* Receive the hello and its fds.  Returns bytes read (or -errno) and the
 * fds received in fds[], *nfds of them (all to be closed by the caller
 * except one it keeps). */
static ssize_t recv_hello(int fd, void *buf, size_t len, int *fds, int *nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
	                     .msg_controllen = sizeof cbuf };
	struct cmsghdr *c;
	ssize_t n;

	*nfds = 0;
	n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int) && *nfds < MAX_FDS; k++)
			memcpy(&fds[(*nfds)++], CMSG_DATA(c) + k * sizeof(int), sizeof(int));
	}
	if (mh.msg_flags & MSG_TRUNC)
		return -EMSGSIZE;
	/* No room in cbuf for every fd, or (fewer than MAX_FDS came) none
	 * left in this process to install one: the kernel dropped them. */
	if (mh.msg_flags & MSG_CTRUNC)
		return *nfds == MAX_FDS ? -ETOOMANYREFS : -EMFILE;
	return n;
}

/* Whether the peer closed its end.  recvmsg returns 0 for that and for an
 * empty SOCK_SEQPACKET message alike; only the second deserves a REFUSE. */
static int peer_gone(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLRDHUP };

	return poll(&pf, 1, 0) > 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

/* What is wrong with a hello message, or NULL. */
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

static void pending_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct pending *p = w->data;
	union { struct xtc_msg_hello h; char raw[XTC_ATTACH_MAX_MSG]; } m;
	char why[160];
	int fds[MAX_FDS], nfds, err, conn;
	const char *problem;
	ssize_t n;

	(void)loop; (void)revents;
	memset(&m, 0, sizeof m);
	n = recv_hello(p->fd, &m, sizeof m, fds, &nfds);
	if (n == -EAGAIN || n == -EINTR)
		return;
	if (p->refuse_why != NULL) {
		refuse(p, p->refuse_err, p->refuse_why);
		goto close_fds;
	}
	if (n == 0 && nfds == 0 && peer_gone(p->fd)) {
		pending_free(p); /* connected and left: nothing to say */
		goto close_fds;
	}
	problem = hello_problem(&m.h, n, nfds, &err);
	if (problem == NULL && (problem = memfd_problem(fds[0], m.h.segment_size)) != NULL)
		err = EINVAL;
	if (problem != NULL) {
		refuse(p, err, problem);
		goto close_fds;
	}
	conn = p->fd;
	ev_io_stop(srv.loop, &p->io);
	ev_timer_stop(srv.loop, &p->timer);
	if (session_attach(conn, fds[0], p->cred.pid, p->cred.uid, p->cred.gid, &m.h, why,
	                   sizeof why) < 0) {
		refuse(p, EINVAL, why);
		goto close_fds;
	}
	p->fd = -1; /* the session owns the connection now */
	pending_free(p);
close_fds:
	for (int i = 0; i < nfds; i++)
		close(fds[i]); /* the mapping keeps the segment alive */
}

static void pending_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct pending *p = w->data;

	(void)loop; (void)revents;
	if (p->refuse_why != NULL) {
		refuse(p, p->refuse_err, p->refuse_why);
		return;
	}
	xlog("pid %d uid %u connected but sent no hello within %u ms; closed", (int)p->cred.pid,
	     (unsigned)p->cred.uid, cfg.hello_timeout_ms);
	pending_free(p);
}

/* Take one connection: credentials, access rule, slot, hello timer. */
static void accept_one(int fd)
{
	socklen_t len = sizeof(struct ucred);
	struct pending *p = calloc(1, sizeof *p);

	if (p == NULL) {
		close(fd);
		return;
	}
	p->fd = fd;
	p->next = srv.pending;
	srv.pending = p;
	srv.npending++;
	ev_io_init(&p->io, pending_read_cb, fd, EV_READ);
	p->io.data = p;
	ev_timer_init(&p->timer, pending_timeout_cb, cfg.hello_timeout_ms / 1000.0, 0);
	p->timer.data = p;
	/* Refusals decided here are answered once the hello is read (or at
	 * the hello timeout): closing before would reset the connection or
	 * fail the client's send, and it would never see why. */
	p->refuse_err = EACCES;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &p->cred, &len) < 0)
		p->refuse_why = "cannot read the peer's credentials";
	else if (!uid_allowed(p->cred.uid))
		p->refuse_why = "this uid is not allowed to attach (see --allow-uid)";
	else if (srv.npending + session_count() > cfg.max_clients) {
		/* not deferred: that would hold a descriptor past the limit */
		refuse(p, EBUSY, "xtcd serves its maximum number of clients; try again later");
		return;
	}
	ev_io_start(srv.loop, &p->io);
	ev_timer_start(srv.loop, &p->timer);
}

static void retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w; (void)revents;
	ev_io_start(loop, &srv.io);
}

static void listen_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)w; (void)revents;
	for (int i = 0; i < 64; i++) {
		int fd = accept4(srv.fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd >= 0) {
			accept_one(fd);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			/* out of descriptors: stop accepting for a moment */
			xlog("accept: %s; pausing new connections for 100 ms", strerror(errno));
			ev_io_stop(loop, &srv.io);
			ev_timer_set(&srv.retry, 0.1, 0);
			ev_timer_start(loop, &srv.retry);
		}
		return;
	}
}

/* A socket from systemd (LISTEN_FDS), or -1. */
static int socket_from_systemd(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");

	if (pid == NULL || fds == NULL || (pid_t)strtol(pid, NULL, 10) != getpid() ||
	    strtol(fds, NULL, 10) < 1)
		return -1;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	fcntl(3, F_SETFD, FD_CLOEXEC);
	return 3;
}

/* Bind cfg.socket, replacing a stale socket file nobody listens on. */
static int bind_socket(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(cfg.socket) >= sizeof sa.sun_path) {
		xlog("--socket %s: the path is longer than %zu bytes; choose a shorter one", cfg.socket,
		     sizeof sa.sun_path - 1);
		return -1;
	}
	strcpy(sa.sun_path, cfg.socket);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
		xlog("--socket %s: another xtcd is listening there; stop it or choose another path",
		     cfg.socket);
		close(fd);
		return -1;
	}
	close(fd);
	unlink(cfg.socket);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		xlog("--socket %s: cannot bind: %s; check that its directory exists and is writable",
		     cfg.socket, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	chmod(cfg.socket, 0666); /* the access rule, not the mode, decides */
	srv.owned_path = 1;
	return fd;
}

int server_init(struct ev_loop *loop)
{
	srv.loop = loop;
	srv.fd = socket_from_systemd();
	if (srv.fd < 0 && (srv.fd = bind_socket()) < 0)
		return -1;
	fcntl(srv.fd, F_SETFL, fcntl(srv.fd, F_GETFL) | O_NONBLOCK);
	if (listen(srv.fd, 128) < 0) {
		xlog("listen on %s: %s", cfg.socket, strerror(errno));
		return -1;
	}
	ev_io_init(&srv.io, listen_cb, srv.fd, EV_READ);
	ev_io_start(loop, &srv.io);
	ev_timer_init(&srv.retry, retry_cb, 0.1, 0);
	return 0;
}

void server_stop_accepting(void)
{
	if (srv.fd < 0)
		return;
	ev_io_stop(srv.loop, &srv.io);
	ev_timer_stop(srv.loop, &srv.retry);
	while (srv.pending != NULL)
		pending_free(srv.pending);
}

void server_fini(void)
{
	server_stop_accepting();
	if (srv.fd >= 0)
		close(srv.fd);
	if (srv.owned_path)
		unlink(cfg.socket);
	srv.fd = -1;
}
