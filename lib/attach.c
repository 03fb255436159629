/*
 * lib/attach.c - hand the segment to xtcd and keep the session alive.
 *
 * A background thread (all signals blocked) connects to the daemon's
 * SOCK_SEQPACKET socket, sends HELLO with the memfd, and then waits on
 * the connection: EOF means the daemon went away, so it reconnects with
 * exponential backoff (10 ms doubling to 2 s; 30 s after a refusal).
 * The rings stay in drop-new mode the whole time, so records a restarted
 * daemon has not yet drained are never overwritten: it resumes from the
 * ring tails and nothing in the rings is lost.
 *
 * A failure an operator must fix (no permission on the socket, a path
 * that is not a socket, a refused hello) is said once on stderr, since a
 * program recording only in-process would otherwise go unnoticed; a
 * daemon that is merely not running yet is no news.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto/xtc_attach.h"
#include "tail_int.h"

static struct {
	pthread_mutex_t lock;   /* conn_fd and the goodbye */
	pthread_t thread;
	int      running;
	int      stopping;
	int      resume_in_child; /* the parent was attaching when it forked */
	int      refused;         /* the last answer was a REFUSE */
	int      warned;          /* the failure line was written since the last attach */
	char     reason[160];     /* the last REFUSE's reason, printable */
	int      stop_fd;       /* eventfd: wakes the thread to stop */
	int      conn_fd;       /* the live connection, or -1 */
	int      attaching;     /* the thread's hello is waiting for its answer */
	uint32_t attach_count;
	char     path[sizeof(((struct sockaddr_un *)0)->sun_path)];
} at = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.stop_fd = -1,
	.conn_fd = -1,
};

/* Wait up to ms for fd to be readable or for a stop request.  Returns 1
 * readable, 0 timeout, -1 stop. */
static int wait_readable(int fd, int ms)
{
	struct pollfd p[2] = { { .fd = at.stop_fd, .events = POLLIN }, { .fd = fd, .events = POLLIN } };
	int n;

	do
		n = poll(p, fd >= 0 ? 2 : 1, ms);
	while (n < 0 && errno == EINTR);
	if (n > 0 && p[0].revents)
		return -1;
	return n > 0;
}

/* Send HELLO with the memfd. */
static int send_hello(int fd)
{
	struct xtc_msg_hello m;
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof m };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
	                     .msg_controllen = sizeof cbuf };
	struct cmsghdr *c;
	int memfd;

	memset(&m, 0, sizeof m);
	memset(cbuf, 0, sizeof cbuf);
	xtc_msg_init(&m.hdr, XTC_MSG_HELLO, sizeof m);
	pthread_mutex_lock(&tail_st.lock);
	if (tail_st.hdr == NULL || tail_st.forked) {
		pthread_mutex_unlock(&tail_st.lock);
		return -ENODEV;
	}
	memfd = tail_st.memfd;
	m.segment_size = tail_st.size;
	memcpy(m.comm, tail_st.hdr->comm, sizeof m.comm);
	pthread_mutex_unlock(&tail_st.lock);
	m.shm_major = XTC_SHM_MAJOR;
	m.shm_minor = XTC_SHM_MINOR;
	m.pid = (uint32_t)getpid();
	m.attach_count = at.attach_count;
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &memfd, sizeof memfd);
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof m)
		return -errno ? -errno : -EIO;
	return 0;
}

/* Install the daemon's nudge eventfd.  The number producers write to is
 * never closed while they may use it: a later daemon's eventfd is dup3'd
 * over it, so a producer racing a re-attach writes to one or the other. */
static void install_nudge(int fd)
{
	int cur = __atomic_load_n(&tail_st.nudge_fd, __ATOMIC_ACQUIRE);

	if (cur < 0) {
		__atomic_store_n(&tail_st.nudge_fd, fd, __ATOMIC_RELEASE);
		return;
	}
	dup3(fd, cur, O_CLOEXEC);
	close(fd);
}

/* Keep the daemon's reason, each byte that is not printable ASCII made
 * '?': it goes to the operator's terminal in one line. */
static void keep_reason(const char *r)
{
	size_t i;

	for (i = 0; i < sizeof at.reason - 1 && r[i] != '\0'; i++)
		at.reason[i] = r[i] >= 0x20 && r[i] < 0x7f ? r[i] : '?';
	at.reason[i] = '\0';
}

/* Read the daemon's answer within ms.  Returns 0 accepted, -errno
 * otherwise. */
static int read_answer(int fd, int ms)
{
	union {
		struct xtc_msg_hdr hdr;
		struct xtc_msg_accept acc;
		struct xtc_msg_refuse ref;
		char raw[XTC_ATTACH_MAX_MSG];
	} m;
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof m };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
	                     .msg_controllen = sizeof cbuf };
	struct cmsghdr *c;
	int nudge = -1;
	ssize_t n;

	if (wait_readable(fd, ms) <= 0)
		return -ETIMEDOUT;
	n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&nudge, CMSG_DATA(c), sizeof nudge);
	if (n >= (ssize_t)sizeof m.acc && m.hdr.magic == XTC_ATTACH_MAGIC &&
	    m.hdr.type == XTC_MSG_ACCEPT) {
		tail_log(0, "attached to %s as session %llu", at.path,
		         (unsigned long long)m.acc.session_id);
		if (nudge >= 0)
			install_nudge(nudge);
		return 0;
	}
	if (nudge >= 0)
		close(nudge);
	if (n >= (ssize_t)sizeof m.ref && m.hdr.magic == XTC_ATTACH_MAGIC &&
	    m.hdr.type == XTC_MSG_REFUSE) {
		m.ref.reason[sizeof m.ref.reason - 1] = '\0';
		at.refused = 1;
		keep_reason(m.ref.reason);
		tail_log(0, "xtcd at %s refused the attach: %s", at.path, m.ref.reason);
		return -(m.ref.error > 0 && m.ref.error < 4096 ? m.ref.error : EPROTO);
	}
	tail_log(0, "xtcd at %s answered with %s", at.path, n == 0 ? "a close" : "an unknown message");
	/* A close is a daemon stopping mid-hello; anything else is not xtcd. */
	return n == 0 ? -ECONNRESET : -EPROTO;
}

/* Connect, say hello and read the answer (waiting up to ms).  Returns the
 * connected socket or -errno. */
static int attach_once(int ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, err;

	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memcpy(sa.sun_path, at.path, sizeof sa.sun_path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		err = -errno;
		goto fail;
	}
	err = send_hello(fd);
	if (err == 0)
		err = read_answer(fd, ms);
	if (err == 0)
		return fd;
fail:
	close(fd);
	return err;
}

/* What an operator must fix for attaching to succeed, in words, or NULL
 * when nothing but time will: an absent daemon (no socket, or a socket
 * nobody listens on), one starting, busy or stopping, a forked child's
 * missing segment, a shortage of memory or descriptors. */
static const char *failure_text(int err)
{
	struct stat st;

	if (at.refused)
		return at.reason;
	switch (-err) {
	case ENOENT:
	case ETIMEDOUT:
	case ECONNRESET:
	case EPIPE:
	case EAGAIN:
	case EINTR:
	case ENODEV:
	case ENOMEM:
	case ENOBUFS:
	case EMFILE:
	case ENFILE:
		return NULL;
	case ECONNREFUSED:
		/* connect(2) says so for a regular file or a directory too. */
		return stat(at.path, &st) == 0 && !S_ISSOCK(st.st_mode) ? "not a socket" : NULL;
	case EPROTO:
		return "what listens there does not speak the xtcd protocol";
	default:
		return strerror(-err);
	}
}

/* Append s to the line buf of size cap, holding *n bytes. */
static void line_put(char *buf, size_t cap, size_t *n, const char *s)
{
	while (*s != '\0' && *n < cap - 1)
		buf[(*n)++] = *s++;
}

/* The one line an operator reads when attaching cannot succeed until they
 * act, once per run of failures, unless XTC_TAIL_QUIET=1.  Built in a
 * fixed buffer and written in one write(2), so it neither allocates nor
 * interleaves with other writers; errno is kept. */
static void warn_once(int err)
{
	const char *why, *quiet;
	char buf[512];
	size_t n = 0;
	int saved = errno;

	if (at.warned || (why = failure_text(err)) == NULL) {
		errno = saved;
		return;
	}
	at.warned = 1;
	quiet = getenv("XTC_TAIL_QUIET");
	if (quiet == NULL || strcmp(quiet, "1") != 0) {
		line_put(buf, sizeof buf, &n, "xtc_tail: cannot attach to ");
		line_put(buf, sizeof buf, &n, at.path);
		line_put(buf, sizeof buf, &n, at.refused ? ": xtcd refused: " : ": ");
		line_put(buf, sizeof buf, &n, why);
		line_put(buf, sizeof buf, &n, "; recording in-process only, retrying");
		buf[n++] = '\n';
		if (write(STDERR_FILENO, buf, n) < 0) {
			/* nowhere left to report it */
		}
	}
	errno = saved;
}

/* Sleep for ms unless asked to stop.  Returns -1 on stop. */
static int backoff_sleep(unsigned ms)
{
	return wait_readable(-1, (int)ms) < 0 ? -1 : 0;
}

static void *attach_main(void *arg)
{
	unsigned backoff = 10;

	(void)arg;
	while (!__atomic_load_n(&at.stopping, __ATOMIC_ACQUIRE)) {
		int fd = at.conn_fd; /* attached before the thread started */

		at.refused = 0;
		if (fd < 0) {
			__atomic_store_n(&at.attaching, 1, __ATOMIC_RELEASE);
			fd = attach_once(5000);
		}
		if (fd < 0) {
			__atomic_store_n(&at.attaching, 0, __ATOMIC_RELEASE);
			/* A daemon that is absent, starting or dying: retry soon.
			 * One that refused us: it will likely refuse again. */
			warn_once(fd);
			if (at.refused)
				backoff = 30000;
			if (fd != -ENOENT && fd != -ECONNREFUSED)
				tail_log(0, "attach to %s failed: %s; retrying in %u ms", at.path,
				         strerror(-fd), backoff);
			if (backoff_sleep(backoff) < 0)
				break;
			backoff = backoff * 2 > 2000 ? 2000 : backoff * 2;
			continue;
		}
		backoff = 10;
		at.warned = 0; /* a later failure is news again */
		if (at.conn_fd < 0) {
			at.attach_count++;
			pthread_mutex_lock(&at.lock);
			at.conn_fd = fd;
			pthread_mutex_unlock(&at.lock);
		}
		__atomic_store_n(&at.attaching, 0, __ATOMIC_RELEASE);
		/* The session lives while the connection does. */
		while (wait_readable(fd, -1) > 0) {
			char buf[XTC_ATTACH_MAX_MSG];

			if (recv(fd, buf, sizeof buf, MSG_DONTWAIT) <= 0)
				break;
		}
		pthread_mutex_lock(&at.lock);
		at.conn_fd = -1;
		pthread_mutex_unlock(&at.lock);
		close(fd);
		tail_log(0, "connection to xtcd at %s closed", at.path);
	}
	return NULL;
}

int attach_start(const char *path, int now)
{
	sigset_t all, old;
	int err;

	if (path == NULL)
		path = getenv("XTC_TAIL_SHM");
	if (path == NULL || *path == '\0' || strcmp(path, "1") == 0)
		path = XTC_DEFAULT_SOCKET;
	if (strlen(path) >= sizeof at.path) {
		tail_log(1, "XTC_TAIL_SHM=%s: the socket path is longer than %zu bytes", path,
		         sizeof at.path - 1);
		return -ENAMETOOLONG;
	}
	if (at.running)
		return -EALREADY;
	if (path != at.path) { /* a forked child resumes with at.path itself */
		memset(at.path, 0, sizeof at.path);
		strcpy(at.path, path);
	}
	at.stop_fd = eventfd(0, EFD_CLOEXEC);
	if (at.stop_fd < 0)
		return -errno;
	at.stopping = 0;
	/* Try once right here, so a program that exits in a few milliseconds
	 * is still recorded; an absent daemon fails at once (ENOENT or
	 * ECONNREFUSED) and the thread keeps trying. */
	if (now) {
		int fd;

		at.refused = 0;
		fd = attach_once(1000);

		if (fd >= 0) {
			at.conn_fd = fd;
			at.attach_count++;
		} else {
			warn_once(fd);
		}
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&at.thread, NULL, attach_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err != 0) {
		close(at.stop_fd);
		at.stop_fd = -1;
		if (at.conn_fd >= 0)
			close(at.conn_fd);
		at.conn_fd = -1;
		return -err;
	}
	at.running = 1;
	return 0;
}

/* A process that stops while its hello is still unanswered (a forked
 * child that exits at once, a busy daemon) would take its records with
 * it: give the answer as long as the first attach of a process gets,
 * 1 s, so that the daemon maps the segment and drains it after we are
 * gone.  Nothing waits when no hello is in flight. */
static void wait_for_answer(void)
{
	const struct timespec tick = { 0, 10 * 1000 * 1000 };

	for (int i = 0; i < 100 && __atomic_load_n(&at.attaching, __ATOMIC_ACQUIRE); i++)
		nanosleep(&tick, NULL);
}

/* Say goodbye (a clean detach) and stop the thread; join it when asked
 * (not from a destructor at exit, where waiting helps no one). */
int attach_stop(int join)
{
	struct xtc_msg_goodbye g;
	uint64_t one = 1;

	if (!at.running)
		return -ENOTCONN;
	wait_for_answer();
	pthread_mutex_lock(&at.lock);
	__atomic_store_n(&at.stopping, 1, __ATOMIC_RELEASE);
	if (tail_st.hdr != NULL)
		__atomic_store_n(&tail_st.hdr->producer_state, XTC_SHM_PRODUCER_DETACHED,
		                 __ATOMIC_RELEASE);
	if (at.conn_fd >= 0) {
		xtc_msg_init(&g.hdr, XTC_MSG_GOODBYE, sizeof g);
		if (send(at.conn_fd, &g, sizeof g, MSG_NOSIGNAL) < 0)
			tail_log(0, "goodbye to xtcd failed: %s", strerror(errno));
	}
	pthread_mutex_unlock(&at.lock);
	if (write(at.stop_fd, &one, sizeof one) < 0) {
		/* cannot happen for an eventfd below its limit */
	}
	if (!join)
		return 0;
	pthread_join(at.thread, NULL);
	close(at.stop_fd);
	at.stop_fd = -1;
	at.running = 0;
	return 0;
}

/* After fork: the thread does not exist in the child, and the child's
 * copy of the connection must not keep the parent's session open. */
void attach_forget_in_child(void)
{
	pthread_mutex_init(&at.lock, NULL);
	at.resume_in_child = at.running && !at.stopping;
	if (at.conn_fd >= 0)
		close(at.conn_fd);
	if (at.stop_fd >= 0)
		close(at.stop_fd);
	at.conn_fd = -1;
	at.stop_fd = -1;
	at.running = 0;
	at.stopping = 0;
	at.attach_count = 0;
}

/* In a child with a segment of its own: attach it as a session of its own
 * if the parent was attached. */
void attach_resume_in_child(void)
{
	if (at.resume_in_child) {
		at.resume_in_child = 0;
		attach_start(at.path, 0);
	}
}

XTC_API int xtc_tail_attach(const char *socket_path)
{
	const char *path = socket_path;
	unsigned enabled = 0;
	uint32_t old_mode;
	int err;

	/* Refuse what attach_start would refuse before touching anything, so
	 * a failed attach leaves recording exactly as it was. */
	if (path == NULL)
		path = getenv("XTC_TAIL_SHM");
	if (path == NULL || *path == '\0' || strcmp(path, "1") == 0)
		path = XTC_DEFAULT_SOCKET;
	if (strlen(path) >= sizeof at.path)
		return -ENAMETOOLONG;
	if (at.running)
		return -EALREADY;
	pthread_mutex_lock(&tail_st.lock);
	old_mode = tail_st.mode;
	tail_st.mode = XTC_SHM_MODE_DROP_NEW;
	if (tail_st.hdr != NULL) {
		__atomic_store_n(&tail_st.hdr->mode, XTC_SHM_MODE_DROP_NEW, __ATOMIC_RELEASE);
		__atomic_store_n(&tail_st.hdr->producer_state, XTC_SHM_PRODUCER_ACTIVE,
		                 __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&tail_st.lock);
	if (__atomic_load_n(&xtc_tail_mask_, __ATOMIC_RELAXED) == 0) {
		xtc_tail_enable(XTC_TAIL_ALL);
		enabled = 1;
	}
	err = attach_start(socket_path, 1);
	if (err < 0) {
		if (enabled)
			xtc_tail_enable(0);
		pthread_mutex_lock(&tail_st.lock);
		tail_st.mode = old_mode;
		if (tail_st.hdr != NULL)
			__atomic_store_n(&tail_st.hdr->mode, old_mode, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&tail_st.lock);
	}
	return err;
}

XTC_API int xtc_tail_detach(void)
{
	return attach_stop(1);
}
