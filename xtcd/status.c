/*
 * xtcd/status.c - live status: sd_notify, the watchdog, STATUS_REQ answers.
 *
 * systemd (Type=notify) hears READY=1 once the socket listens (main.c),
 * then once a second STATUS= with the live sessions, events/s, drops and
 * bytes used, and WATCHDOG=1 every half WatchdogSec.  Both timers run in
 * the one loop, so a loop stuck for longer than WatchdogSec stops the
 * keep-alives and systemd restarts xtcd, as it should.
 *
 * A status request is answered from one buffer of messages built at once
 * (a consistent snapshot) and written without blocking the loop: a client
 * that does not read is dropped after STATUS_TIMEOUT.  Slots are few, so
 * a client that does not read must not keep them from one that does: a
 * uid holds at most STATUS_MAX_PER_UID of them, and a request that finds
 * no slot free takes the one whose reader went longest without reading.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/common/clock.h"
#include "xtcd/conf.h"
#include "proto/xtc_attach.h"
#include "xtcd/read/print.h"
#include "xtcd/status.h"
#include "xtcd/xtcd.h"

#define STATUS_TIMEOUT  5.0  /* seconds a status client has to read it all */
#define STATUS_MAX_CONN 16   /* status connections served at once */
#define STATUS_MAX_PER_UID 4 /* of which one uid may hold */

struct status_conn {
	struct status_conn *next;
	int      fd;
	uid_t    uid;
	uint64_t read_at;     /* mono ns: accepted, or the client last took a message */
	ev_io    io;
	ev_timer timer;
	uint8_t *buf;         /* the messages, back to back */
	size_t  *sizes;       /* each message's size */
	size_t   count, sent, off;
};

static struct {
	struct ev_loop *loop;
	int      notify_fd;
	struct sockaddr_un notify_sa;
	socklen_t notify_len;
	ev_timer tick;
	ev_timer watchdog;
	uint64_t start_ns;
	struct status_conn *conns;
	size_t   nconns;
} sts = { .notify_fd = -1 };

const char *status_count_text(uint64_t v, char *buf, size_t len)
{
	if (v < 10000)
		snprintf(buf, len, "%llu", (unsigned long long)v);
	else if (v < 1000000)
		snprintf(buf, len, "%.1fk", v / 1e3);
	else if (v < 1000000000)
		snprintf(buf, len, "%.2fM", v / 1e6);
	else
		snprintf(buf, len, "%.2fG", v / 1e9);
	return buf;
}

/* ---------------------------------------------------------------------
 * sd_notify, without libsystemd
 */

/* Open a datagram socket for $NOTIFY_SOCKET, if there is one. */
static void notify_open(void)
{
	const char *path = getenv("NOTIFY_SOCKET");
	size_t len;

	if (sts.notify_fd >= 0 || path == NULL || (*path != '/' && *path != '@'))
		return;
	len = strlen(path);
	if (len >= sizeof sts.notify_sa.sun_path) {
		xlog_warn("NOTIFY_SOCKET is longer than a socket path can be; not notifying systemd");
		return;
	}
	sts.notify_sa.sun_family = AF_UNIX;
	memcpy(sts.notify_sa.sun_path, path, len);
	if (*path == '@')
		sts.notify_sa.sun_path[0] = '\0'; /* the abstract namespace */
	sts.notify_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	sts.notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (sts.notify_fd < 0)
		xlog_warn("NOTIFY_SOCKET: cannot make a socket: %s", strerror(errno));
}

void status_notify(const char *msg)
{
	static int complained;

	if (sts.notify_fd < 0 && sts.notify_len == 0)
		notify_open();
	if (sts.notify_fd < 0)
		return;
	if (sendto(sts.notify_fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sts.notify_sa,
	           sts.notify_len) < 0 && !complained) {
		xlog_warn("sd_notify to %s: %s", getenv("NOTIFY_SOCKET"), strerror(errno));
		complained = 1;
	}
}

/* Once a second: the rates, and STATUS= for systemctl status. */
static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct session_totals t;
	char msg[256], eps[32], used[32], budget[32];

	(void)loop; (void)w; (void)revents;
	session_sample();
	if (sts.notify_fd < 0)
		return;
	session_totals(&t);
	snprintf(msg, sizeof msg, "STATUS=%zu session%s, %s events/s, %llu dropped, %s of %s used",
	         session_count(), session_count() == 1 ? "" : "s",
	         status_count_text(t.events_per_s, eps, sizeof eps), (unsigned long long)t.dropped,
	         print_bytes(used, sizeof used, store_disk_bytes()),
	         print_bytes(budget, sizeof budget, cfg.max_bytes));
	status_notify(msg);
}

static void watchdog_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop; (void)w; (void)revents;
	status_notify("WATCHDOG=1");
}

/* WATCHDOG_USEC, when systemd wants keep-alives from this process. */
static uint64_t watchdog_usec(void)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	unsigned long long v;
	char *end;

	if (usec == NULL)
		return 0;
	if (pid != NULL && strtol(pid, NULL, 10) != (long)getpid())
		return 0; /* meant for another process */
	errno = 0;
	v = strtoull(usec, &end, 10);
	if (errno != 0 || *end != '\0' || v == 0) {
		xlog_warn("WATCHDOG_USEC=%s is not a number of microseconds; no watchdog keep-alives", usec);
		return 0;
	}
	return v;
}

void status_init(struct ev_loop *loop)
{
	uint64_t wd = watchdog_usec();

	sts.loop = loop;
	sts.start_ns = mono_ns();
	notify_open();
	ev_timer_init(&sts.tick, tick_cb, 1.0, 1.0);
	ev_timer_start(loop, &sts.tick);
	if (wd != 0) {
		ev_timer_init(&sts.watchdog, watchdog_cb, 0.0, wd / 2e6);
		ev_timer_start(loop, &sts.watchdog);
		xlog("systemd watchdog: a keep-alive every %.3f s", wd / 2e6);
	}
}

static void conn_free(struct status_conn *c);

void status_fini(void)
{
	ev_timer_stop(sts.loop, &sts.tick);
	ev_timer_stop(sts.loop, &sts.watchdog);
	while (sts.conns != NULL)
		conn_free(sts.conns);
	if (sts.notify_fd >= 0)
		close(sts.notify_fd);
	sts.notify_fd = -1;
}

/* ---------------------------------------------------------------------
 * Answering --status
 */

int status_is_request(const void *buf, ssize_t n, int nfds, const char **why)
{
	struct xtc_msg_status_req r;

	*why = NULL;
	if (n < (ssize_t)sizeof r.hdr)
		return 0;
	memcpy(&r, buf, sizeof r.hdr);
	if (r.hdr.magic != XTC_ATTACH_MAGIC || r.hdr.major != XTC_ATTACH_MAJOR ||
	    r.hdr.type != XTC_MSG_STATUS_REQ)
		return 0;
	if (n != (ssize_t)sizeof r || r.hdr.size != sizeof r)
		*why = "the status request has the wrong size";
	else if (nfds != 0)
		*why = "the status request carries file descriptors; it takes none";
	return 1;
}

static void conn_free(struct status_conn *c)
{
	struct status_conn **pp;

	for (pp = &sts.conns; *pp != NULL; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	sts.nconns--;
	ev_io_stop(sts.loop, &c->io);
	ev_timer_stop(sts.loop, &c->timer);
	close(c->fd);
	free(c->buf);
	free(c->sizes);
	free(c);
}

/* Send what the socket takes; close once all is sent or the peer left. */
static void conn_send(struct status_conn *c)
{
	while (c->sent < c->count) {
		ssize_t n = send(c->fd, c->buf + c->off, c->sizes[c->sent], MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			ev_io_start(sts.loop, &c->io);
			return;
		}
		if (n < 0)
			break; /* gone: nothing more to say */
		c->off += c->sizes[c->sent++];
		c->read_at = mono_ns();
	}
	conn_free(c);
}

static void conn_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop; (void)revents;
	ev_io_stop(sts.loop, w);
	conn_send(w->data);
}

static void conn_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct status_conn *c = w->data;

	(void)loop; (void)revents;
	xlog_uid(XLOG_WARNING, c->uid, "a status client read only %zu of %zu messages in %.0f s; closed", c->sent, c->count,
	     STATUS_TIMEOUT);
	conn_free(c);
}

/* The daemon's part of the answer. */
static void fill_status(struct xtc_msg_status *m, uid_t uid, size_t listed)
{
	struct session_totals t;
	const char *io = store_io_backend();

	session_totals(&t);
	memset(m, 0, sizeof *m);
	xtc_msg_init(&m->hdr, XTC_MSG_STATUS, sizeof *m);
	snprintf(m->version, sizeof m->version, "%s", PACKAGE_VERSION);
	m->pid = (uint32_t)getpid();
	m->peer_uid = (uint32_t)uid;
	m->uptime_ns = mono_ns() - sts.start_ns;
	m->segments = store_segments();
	m->bytes_used = store_disk_bytes();
	m->max_bytes = cfg.max_bytes;
	m->segment_bytes = cfg.segment_bytes;
	m->sessions = (uint32_t)session_count();
	m->sessions_listed = (uint32_t)listed;
	m->events_per_s = t.events_per_s;
	m->produced = t.produced;
	m->written = t.written;
	m->dropped = t.dropped;
	m->lost = t.lost;
	m->uid_bytes = store_uid_bytes(uid);
	m->uid_quota = conf_quota_for(&cfg, uid);
	m->uid_shm_mapped = session_shm_uid(uid);
	m->uid_shm_touched = session_shm_touched_uid(uid);
	m->uid_shm_max = conf_max_shm_per_uid(&cfg);
	m->drain_ms = cfg.drain_ms;
	m->flags = strncmp(io, "io_uring", 8) == 0 ? 1u : 0u;
	if (strstr(io, "registered") != NULL)
		m->flags |= 2u;
	snprintf(m->io, sizeof m->io, "%s", io);
	snprintf(m->dir, sizeof m->dir, "%s", cfg.dir);
}

/* The slot to give a new request of uid when the slots are taken: the
 * connection (of uid, when uid holds its share) whose reader went the
 * longest without reading; NULL when there is a free slot. */
static struct status_conn *slot_to_take(uid_t uid)
{
	struct status_conn *oldest = NULL, *oldest_uid = NULL;
	size_t of_uid = 0;

	for (struct status_conn *c = sts.conns; c != NULL; c = c->next) {
		if (oldest == NULL || c->read_at < oldest->read_at)
			oldest = c;
		if (c->uid == uid && (oldest_uid == NULL || c->read_at < oldest_uid->read_at))
			oldest_uid = c;
		of_uid += c->uid == uid;
	}
	if (of_uid >= STATUS_MAX_PER_UID)
		return oldest_uid;
	return sts.nconns >= STATUS_MAX_CONN ? oldest : NULL;
}

/* Send a REFUSE and close: too many status clients at once. */
static void refuse_busy(int fd)
{
	struct xtc_msg_refuse m;

	memset(&m, 0, sizeof m);
	xtc_msg_init(&m.hdr, XTC_MSG_REFUSE, sizeof m);
	m.error = EBUSY;
	snprintf(m.reason, sizeof m.reason, "xtcd is answering %d status requests; try again",
	         STATUS_MAX_CONN);
	if (send(fd, &m, sizeof m, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* the client is gone */
	}
	close(fd);
}

void status_serve(int fd, uid_t uid)
{
	size_t max = session_count(), listed, total;
	struct xtc_msg_status_session *ss;
	struct xtc_msg_status_end end;
	struct status_conn *c;

	if ((c = slot_to_take(uid)) != NULL) {
		xlog_uid(XLOG_WARNING, c->uid, "a status client (uid %u) read %zu of %zu messages and nothing for %.1f s; closed "
		     "for a new request", (unsigned)c->uid, c->sent, c->count,
		     (double)(mono_ns() - c->read_at) / 1e9);
		conn_free(c);
	}
	if (sts.nconns >= STATUS_MAX_CONN) {
		refuse_busy(fd);
		return;
	}
	c = calloc(1, sizeof *c);
	total = sizeof(struct xtc_msg_status) + max * sizeof *ss + sizeof end;
	if (c == NULL || (c->buf = malloc(total)) == NULL ||
	    (c->sizes = malloc((max + 2) * sizeof *c->sizes)) == NULL) {
		if (c != NULL)
			free(c->buf);
		free(c);
		close(fd);
		return;
	}
	c->fd = fd;
	c->uid = uid;
	c->read_at = mono_ns();
	ss = (struct xtc_msg_status_session *)(c->buf + sizeof(struct xtc_msg_status));
	listed = session_status(uid, ss, max);
	fill_status((struct xtc_msg_status *)c->buf, uid, listed);
	memset(&end, 0, sizeof end);
	xtc_msg_init(&end.hdr, XTC_MSG_STATUS_END, sizeof end);
	end.sessions_sent = (uint32_t)listed;
	memcpy(ss + listed, &end, sizeof end);
	c->sizes[c->count++] = sizeof(struct xtc_msg_status);
	for (size_t i = 0; i < listed; i++)
		c->sizes[c->count++] = sizeof *ss;
	c->sizes[c->count++] = sizeof end;
	c->next = sts.conns;
	sts.conns = c;
	sts.nconns++;
	ev_io_init(&c->io, conn_write_cb, fd, EV_WRITE);
	c->io.data = c;
	ev_timer_init(&c->timer, conn_timeout_cb, STATUS_TIMEOUT, 0);
	c->timer.data = c;
	ev_timer_start(sts.loop, &c->timer);
	conn_send(c);
}
