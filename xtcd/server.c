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
 * connection is closed; nobody else notices.  The checks of the message
 * and the memfd are in attach_check.c, where the fuzzers reach them.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/seg/idmap.h"
#include "proto/xtc_attach.h"
#include "xtcd/attach_check.h"
#include "xtcd/conf.h"
#include "xtcd/status.h"
#include "xtcd/xtcd.h"

#define MAX_FDS 8 /* room to see (and refuse) a client sending several */

struct pending {
	struct pending *next, **prev; /* prev: the pointer to this one */
	int      counted;             /* in its uid's count of connections */
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
	char     path[108];   /* where we listen, for messages */
	ev_io    io;
	ev_timer retry;       /* accept backoff after EMFILE */
	struct pending *pending;
	size_t   npending;
	struct idmap pending_uid; /* uid -> its connections without a hello yet */
} srv = { .fd = -1 };

/* uid's connections waiting for their hello. */
static uint64_t pending_of(uid_t uid)
{
	uint64_t n = 0;

	idmap_get(&srv.pending_uid, uid, &n);
	return n;
}

static void pending_uncount(struct pending *p)
{
	uint64_t n = pending_of(p->cred.uid);

	if (!p->counted)
		return;
	p->counted = 0;
	if (n <= 1)
		idmap_del(&srv.pending_uid, p->cred.uid);
	else
		idmap_put(&srv.pending_uid, p->cred.uid, n - 1);
}

/* O(1): a client may open thousands of connections and let them time out. */
static void pending_free(struct pending *p)
{
	*p->prev = p->next;
	if (p->next != NULL)
		p->next->prev = p->prev;
	pending_uncount(p);
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
	xlog_uid(XLOG_WARNING, p->cred.uid, "refused pid %d uid %u: %s", (int)p->cred.pid, (unsigned)p->cred.uid, why);
	drain_unread(p->fd);
	pending_free(p);
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

/* Whether mapping `size` more bytes of client segments for uid would take
 * it over max_shm_per_uid; if so, why (for the client and the log). */
static int shm_over_limit(uid_t uid, uint64_t size, char *why, size_t len)
{
	uint64_t max = conf_max_shm_per_uid(&cfg), has = session_shm_uid(uid);
	char b[32];

	if (size <= max && has <= max - size)
		return 0;
	snprintf(why, len, "uid %u has %llu bytes of segments mapped; %llu more would pass "
	         "max_shm_per_uid (%s): end a session, use smaller rings, or raise it",
	         (unsigned)uid, (unsigned long long)has, (unsigned long long)size,
	         conf_size_text(max, b, sizeof b));
	return 1;
}

static void pending_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct pending *p = w->data;
	char buf[XTC_ATTACH_MAX_MSG], why[160];
	struct xtc_msg_hello hello;
	int fds[MAX_FDS], nfds, err, conn;
	const char *problem;
	ssize_t n;

	(void)loop; (void)revents;
	n = recv_hello(p->fd, buf, sizeof buf, fds, &nfds);
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
	if (status_is_request(buf, n, nfds, &problem)) {
		uid_t uid = p->cred.uid;

		if (problem != NULL) {
			refuse(p, EPROTO, problem);
			goto close_fds;
		}
		conn = p->fd;
		p->fd = -1; /* status.c owns the connection now */
		pending_free(p);
		status_serve(conn, uid);
		goto close_fds;
	}
	problem = attach_check_hello(buf, n, nfds, &hello, &err);
	if (problem == NULL && (problem = attach_check_memfd(fds[0], hello.segment_size)) != NULL)
		err = EINVAL;
	if (problem != NULL) {
		refuse(p, err, problem);
		goto close_fds;
	}
	if (session_count_uid(p->cred.uid) >= conf_max_sessions_per_uid(&cfg)) {
		snprintf(why, sizeof why, "uid %u has %zu sessions attached, the most "
		         "max_sessions_per_uid allows; end one, or raise it", (unsigned)p->cred.uid,
		         session_count_uid(p->cred.uid));
		refuse(p, EBUSY, why);
		goto close_fds;
	}
	if (shm_over_limit(p->cred.uid, hello.segment_size, why, sizeof why)) {
		refuse(p, EBUSY, why);
		goto close_fds;
	}
	conn = p->fd;
	ev_io_stop(srv.loop, &p->io);
	ev_timer_stop(srv.loop, &p->timer);
	if (session_attach(conn, fds[0], p->cred.pid, p->cred.uid, p->cred.gid, &hello, why,
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
	xlog_uid(XLOG_WARNING, p->cred.uid, "pid %d uid %u connected but sent no hello within %u ms; closed", (int)p->cred.pid,
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
	p->prev = &srv.pending;
	if (srv.pending != NULL)
		srv.pending->prev = &p->next;
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
	else if (!conf_peer_allowed(&cfg, p->cred.uid, p->cred.gid))
		p->refuse_why = "this uid is not allowed to attach (see allow_uids and allow_gids in "
		                "xtcd.conf, or --allow-uid)";
	else if (srv.npending + session_count() > cfg.max_clients) {
		/* not deferred: that would hold a descriptor past the limit */
		refuse(p, EBUSY, "xtcd serves its maximum number of clients; try again later");
		return;
	} else if (pending_of(p->cred.uid) != 0 &&
	           pending_of(p->cred.uid) + session_count_uid(p->cred.uid) >=
	           conf_max_sessions_per_uid(&cfg)) {
		/* Connections still without a hello count as sessions of their
		 * uid: else one user holding max_clients of them, each for
		 * hello_timeout_ms, locks every other user out at no cost.
		 * (With no connection waiting, a uid at its limit is refused
		 * at its hello, as before, where it reads why.) */
		refuse(p, EBUSY, "this uid has as many sessions and connections waiting for their hello "
		                 "as max_sessions_per_uid allows; end one, or raise it");
		return;
	} else if (idmap_put(&srv.pending_uid, p->cred.uid, pending_of(p->cred.uid) + 1) == 0) {
		p->counted = 1;
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
			xlog_warn("accept: %s; pausing new connections for 100 ms", strerror(errno));
			ev_io_stop(loop, &srv.io);
			ev_timer_set(&srv.retry, 0.1, 0);
			ev_timer_start(loop, &srv.retry);
		} else if (errno != EAGAIN && errno != EWOULDBLOCK) {
			xlog_warn("accept: %s; that connection was not accepted", strerror(errno));
		}
		return;
	}
}

/* A socket from systemd (LISTEN_FDS): descriptor 3, -1 when there is
 * none, -2 when the one passed is not a unix SOCK_SEQPACKET socket. */
static int socket_from_systemd(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	struct sockaddr_un sa = { 0 };
	socklen_t len = sizeof sa, ilen = sizeof(int);
	int type = 0, domain = 0;
	long n;

	if (pid == NULL || fds == NULL || (pid_t)strtol(pid, NULL, 10) != getpid() ||
	    (n = strtol(fds, NULL, 10)) < 1)
		return -1;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (getsockopt(3, SOL_SOCKET, SO_DOMAIN, &domain, &ilen) < 0 ||
	    getsockopt(3, SOL_SOCKET, SO_TYPE, &type, &ilen) < 0 || domain != AF_UNIX ||
	    type != SOCK_SEQPACKET) {
		xlog_warn("LISTEN_FDS: descriptor 3 is not a unix SOCK_SEQPACKET socket; the socket unit "
		     "needs ListenSequentialPacket=");
		return -2;
	}
	if (n > 1)
		xlog_warn("LISTEN_FDS=%ld: listening on the first descriptor only", n);
	fcntl(3, F_SETFD, FD_CLOEXEC);
	if (getsockname(3, (struct sockaddr *)&sa, &len) == 0 && len > offsetof(struct sockaddr_un, sun_path) &&
	    sa.sun_path[0] != '\0') {
		snprintf(srv.path, sizeof srv.path, "%.*s", (int)sizeof sa.sun_path, sa.sun_path);
		if (strcmp(srv.path, cfg.socket) != 0)
			xlog_warn("the socket systemd passed is %s, not %s", srv.path, cfg.socket);
	}
	return 3;
}

/* Whether something other than a socket sits at cfg.socket: a mistyped
 * --socket naming a segment or a configuration file must not delete it. */
static int socket_path_taken(void)
{
	struct stat st;

	if (stat(cfg.socket, &st) < 0 || S_ISSOCK(st.st_mode))
		return 0;
	xlog_error("--socket %s: %s is there, not a socket; left as it is: remove it or choose another path",
	     cfg.socket, S_ISDIR(st.st_mode) ? "a directory" : S_ISREG(st.st_mode) ? "a file" : "something");
	return 1;
}

/* Bind cfg.socket, replacing a stale socket file nobody listens on. */
static int bind_socket(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(cfg.socket) >= sizeof sa.sun_path) {
		xlog_error("--socket %s: the path is longer than %zu bytes; choose a shorter one", cfg.socket,
		     sizeof sa.sun_path - 1);
		return -1;
	}
	strcpy(sa.sun_path, cfg.socket);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
		xlog_error("--socket %s: another xtcd is listening there; stop it or choose another path",
		     cfg.socket);
		close(fd);
		return -1;
	}
	close(fd);
	if (socket_path_taken())
		return -1;
	unlink(cfg.socket);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		xlog_error("--socket %s: cannot bind: %s; check that its directory exists and is writable",
		     cfg.socket, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	chmod(cfg.socket, 0666); /* the access rule, not the mode, decides */
	srv.owned_path = 1;
	return fd;
}

const char *server_path(void)
{
	return srv.path[0] != '\0' ? srv.path : cfg.socket;
}

int server_init(struct ev_loop *loop)
{
	srv.loop = loop;
	srv.fd = socket_from_systemd();
	if (srv.fd == -2 || (srv.fd < 0 && (srv.fd = bind_socket()) < 0)) {
		srv.fd = -1;
		return -1;
	}
	fcntl(srv.fd, F_SETFL, fcntl(srv.fd, F_GETFL) | O_NONBLOCK);
	if (listen(srv.fd, 128) < 0) {
		xlog_error("listen on %s: %s", cfg.socket, strerror(errno));
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
