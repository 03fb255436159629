/*
 * xtcd/status_client.c - xtcd --status: ask the running daemon, print.
 *
 * One connection to the attach socket: STATUS_REQ out; STATUS, the
 * STATUS_SESSION messages and STATUS_END back (proto/xtc_attach.h).  What
 * comes back is checked like any input: sizes, magic and types, and
 * strings are cut at their field's end.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto/xtc_attach.h"
#include "xtcd/read/print.h"
#include "xtcd/status.h"
#include "xtc_tail.h"

#define CLIENT_TIMEOUT_MS 5000

struct answer {
	struct xtc_msg_status d;
	struct xtc_msg_status_session *s;
	size_t n, cap;
};

/* One line on stderr, exit code 1. */
static int fail(const char *path, const char *what, const char *detail)
{
	fprintf(stderr, "xtcd: --status: %s at %s%s%s\n", what, path, detail ? ": " : "",
	        detail ? detail : "");
	return 1;
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof sa.sun_path) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int saved = errno;

		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

/* Take one message into a.  Returns 1 at STATUS_END, 0 to read on, or -1
 * with *why. */
static int take(struct answer *a, const char *buf, ssize_t n, int *have_status, char *why,
                size_t len)
{
	const struct xtc_msg_hdr *h = (const struct xtc_msg_hdr *)buf;

	if (n < (ssize_t)sizeof *h || h->magic != XTC_ATTACH_MAGIC || h->size != (uint32_t)n) {
		snprintf(why, len, "the answer is not an xtcd status message");
		return -1;
	}
	switch (h->type) {
	case XTC_MSG_REFUSE: {
		struct xtc_msg_refuse r;

		if (n != sizeof r)
			break;
		memcpy(&r, buf, sizeof r);
		r.reason[sizeof r.reason - 1] = '\0';
		if (strstr(r.reason, "not a hello") != NULL)
			snprintf(why, len, "this xtcd is too old to answer --status (it said: %s)", r.reason);
		else
			snprintf(why, len, "xtcd refused: %s", r.reason);
		return -1;
	}
	case XTC_MSG_STATUS:
		if (n != sizeof a->d || *have_status)
			break;
		memcpy(&a->d, buf, sizeof a->d);
		a->d.version[sizeof a->d.version - 1] = '\0';
		a->d.io[sizeof a->d.io - 1] = '\0';
		a->d.dir[sizeof a->d.dir - 1] = '\0';
		*have_status = 1;
		return 0;
	case XTC_MSG_STATUS_SESSION:
		if (n != sizeof *a->s || !*have_status)
			break;
		if (a->n == a->cap) {
			size_t cap = a->cap ? a->cap * 2 : 16;
			void *p = realloc(a->s, cap * sizeof *a->s);

			if (p == NULL) {
				snprintf(why, len, "out of memory");
				return -1;
			}
			a->s = p;
			a->cap = cap;
		}
		memcpy(&a->s[a->n], buf, sizeof *a->s);
		a->s[a->n].comm[sizeof a->s[a->n].comm - 1] = '\0';
		if (a->s[a->n].loops_listed > XTC_STATUS_MAX_LOOPS)
			a->s[a->n].loops_listed = XTC_STATUS_MAX_LOOPS;
		a->n++;
		return 0;
	case XTC_MSG_STATUS_END:
		if (n != sizeof(struct xtc_msg_status_end) || !*have_status)
			break;
		return 1;
	}
	snprintf(why, len, "unexpected message (type %u, %zd bytes) in the status answer",
	         (unsigned)h->type, n);
	return -1;
}

/* Send the request and read the whole answer.  Returns 0, or -1 with why. */
static int ask(int fd, struct answer *a, char *why, size_t len)
{
	struct xtc_msg_status_req req;
	struct timespec t0, t;
	int have_status = 0;

	memset(&req, 0, sizeof req);
	xtc_msg_init(&req.hdr, XTC_MSG_STATUS_REQ, sizeof req);
	if (send(fd, &req, sizeof req, MSG_NOSIGNAL) != (ssize_t)sizeof req) {
		snprintf(why, len, "cannot send the request: %s", strerror(errno));
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		char buf[XTC_ATTACH_MAX_MSG];
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		long waited;
		ssize_t n;
		int r;

		clock_gettime(CLOCK_MONOTONIC, &t);
		waited = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
		if (waited >= CLIENT_TIMEOUT_MS || (r = poll(&pf, 1, (int)(CLIENT_TIMEOUT_MS - waited))) == 0) {
			snprintf(why, len, "no complete answer within %d s", CLIENT_TIMEOUT_MS / 1000);
			return -1;
		}
		if (r < 0) {
			if (errno == EINTR)
				continue;
			snprintf(why, len, "poll: %s", strerror(errno));
			return -1;
		}
		n = recv(fd, buf, sizeof buf, MSG_TRUNC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(why, len, "the connection ended before the answer did%s%s",
			         n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
			return -1;
		}
		if ((size_t)n > sizeof buf) {
			snprintf(why, len, "a message of the answer is larger than any valid one");
			return -1;
		}
		r = take(a, buf, n, &have_status, why, len);
		if (r != 0)
			return r < 0 ? -1 : 0;
	}
}

/* ---------------------------------------------------------------------
 * Printing
 */

/* comm as it can be shown on a terminal. */
static const char *safe_text(const char *s, char *buf, size_t len)
{
	size_t i;

	for (i = 0; s[i] != '\0' && i < len - 1; i++)
		buf[i] = s[i] > 0x20 && s[i] < 0x7f ? s[i] : '?';
	buf[i] = '\0';
	return i ? buf : "-";
}

static int by_loop(const void *x, const void *y)
{
	const struct xtc_status_loop *a = x, *b = y;

	return a->loop_id < b->loop_id ? -1 : a->loop_id > b->loop_id;
}

/* The fills, by loop id: " 0:3.1% 1:0.4% -:0.0%". */
static void print_loops(FILE *out, const struct xtc_msg_status_session *s)
{
	struct xtc_status_loop loops[XTC_STATUS_MAX_LOOPS];

	memcpy(loops, s->loops, sizeof loops);
	qsort(loops, s->loops_listed, sizeof *loops, by_loop);
	for (uint32_t i = 0; i < s->loops_listed; i++) {
		const struct xtc_status_loop *l = &loops[i];
		char loop[16];

		print_loop(loop, sizeof loop, l->loop_id);
		if (l->fill == XTC_STATUS_FILL_CORRUPT)
			fprintf(out, " %s:corrupt", loop);
		else if (l->fill < 1000)
			fprintf(out, " %s:%.1f%%", loop, l->fill / 100.0);
		else
			fprintf(out, " %s:%u%%", loop, l->fill / 100);
	}
	if (s->loops_bound > s->loops_listed)
		fprintf(out, " +%u more", s->loops_bound - s->loops_listed);
	if (s->loops_bound == 0)
		fprintf(out, " none bound");
	if (s->flags & 1)
		fprintf(out, " [closing]");
	if (s->flags & 2)
		fprintf(out, " [over quota: %llu dropped]", (unsigned long long)s->quota_dropped);
}

static void print_text(FILE *out, const struct answer *a)
{
	const struct xtc_msg_status *d = &a->d;
	char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], b7[32];

	fprintf(out, "xtcd %s, pid %u, up %s; %s, drain every %u ms\n", d->version, d->pid,
	        print_duration(b1, sizeof b1, d->uptime_ns), d->io, d->drain_ms);
	fprintf(out, "  disk      %s: %llu segment%s, %s of %s used (%.1f%%), segments of %s\n", d->dir,
	        (unsigned long long)d->segments, d->segments == 1 ? "" : "s",
	        print_bytes(b1, sizeof b1, d->bytes_used), print_bytes(b2, sizeof b2, d->max_bytes),
	        d->max_bytes ? 100.0 * (double)d->bytes_used / (double)d->max_bytes : 0.0,
	        print_bytes(b3, sizeof b3, d->segment_bytes));
	fprintf(out, "  events    %s/s; since start %s produced, %s written, %s dropped, %s lost\n",
	        status_count_text(d->events_per_s, b1, sizeof b1), status_count_text(d->produced, b2, sizeof b2),
	        status_count_text(d->written, b3, sizeof b3), status_count_text(d->dropped, b4, sizeof b4),
	        status_count_text(d->lost, b5, sizeof b5));
	if (d->uid_quota == UINT64_MAX)
		fprintf(out, "  quota     uid %u: none (%s of events on disk)\n", d->peer_uid,
		        print_bytes(b1, sizeof b1, d->uid_bytes));
	else
		fprintf(out, "  quota     uid %u: %s of %s\n", d->peer_uid,
		        print_bytes(b1, sizeof b1, d->uid_bytes),
		        print_bytes(b2, sizeof b2, d->uid_quota));
	fprintf(out, "  shm       uid %u: %s of segments mapped (%s touched), at most %s\n",
	        d->peer_uid, print_bytes(b1, sizeof b1, d->uid_shm_mapped),
	        print_bytes(b2, sizeof b2, d->uid_shm_touched),
	        print_bytes(b3, sizeof b3, d->uid_shm_max));
	fprintf(out, "  sessions  %u live", d->sessions);
	if (a->n != d->sessions)
		fprintf(out, ", %zu of uid %u shown", a->n, d->peer_uid);
	fputc('\n', out);
	if (a->n == 0)
		return;
	fprintf(out, "\n%5s %7s %-15s %6s %7s %7s %8s %8s %8s %6s %8s  %s\n", "ID", "PID", "COMM",
	        "UID", "UPTIME", "EV/S", "PRODUCED", "WRITTEN", "DROPPED", "LOST", "BYTES",
	        "LOOP:FILL");
	for (size_t i = 0; i < a->n; i++) {
		const struct xtc_msg_status_session *s = &a->s[i];
		char comm[32];

		fprintf(out, "%5llu %7u %-15s %6u %7s %7s %8s %8s %8s %6s %8s ",
		        (unsigned long long)s->session_id, s->pid, safe_text(s->comm, comm, 16), s->uid,
		        print_duration(b1, sizeof b1, s->uptime_ns),
		        status_count_text(s->events_per_s, b2, sizeof b2),
		        status_count_text(s->produced, b3, sizeof b3),
		        status_count_text(s->written, b4, sizeof b4),
		        status_count_text(s->dropped, b5, sizeof b5),
		        status_count_text(s->lost, b6, sizeof b6),
		        print_bytes(b7, sizeof b7, s->bytes));
		print_loops(out, s);
		fputc('\n', out);
	}
}

static void json_u64(FILE *out, const char *key, uint64_t v, int comma)
{
	fprintf(out, "\"%s\":%llu%s", key, (unsigned long long)v, comma ? "," : "");
}

static void print_json_session(FILE *out, const struct xtc_msg_status_session *s)
{
	fputs("{", out);
	json_u64(out, "session", s->session_id, 1);
	json_u64(out, "pid", s->pid, 1);
	json_u64(out, "uid", s->uid, 1);
	json_u64(out, "gid", s->gid, 1);
	fputs("\"comm\":", out);
	print_json_string(out, s->comm, strlen(s->comm));
	fputc(',', out);
	json_u64(out, "uptime_ns", s->uptime_ns, 1);
	json_u64(out, "events_per_s", s->events_per_s, 1);
	json_u64(out, "produced", s->produced, 1);
	json_u64(out, "written", s->written, 1);
	json_u64(out, "dropped", s->dropped, 1);
	json_u64(out, "quota_dropped", s->quota_dropped, 1);
	json_u64(out, "lost", s->lost, 1);
	json_u64(out, "bytes", s->bytes, 1);
	fprintf(out, "\"closing\":%s,\"over_quota\":%s,", s->flags & 1 ? "true" : "false",
	        s->flags & 2 ? "true" : "false");
	json_u64(out, "ring_count", s->ring_count, 1);
	json_u64(out, "ring_capacity", s->ring_capacity, 1);
	json_u64(out, "loops_bound", s->loops_bound, 1);
	fputs("\"rings\":[", out);
	for (uint32_t i = 0; i < s->loops_listed; i++) {
		const struct xtc_status_loop *l = &s->loops[i];

		fprintf(out, "%s{\"ring\":%u,\"loop_id\":", i ? "," : "", l->ring);
		if (l->loop_id == XTC_TAIL_LOOP_NONE)
			fputs("null", out);
		else
			fprintf(out, "%u", l->loop_id);
		if (l->fill == XTC_STATUS_FILL_CORRUPT)
			fputs(",\"fill\":null,\"corrupt\":true}", out);
		else
			fprintf(out, ",\"fill\":%.4f,\"corrupt\":false}", l->fill / 10000.0);
	}
	fputs("]}", out);
}

static void print_json(FILE *out, const struct answer *a)
{
	const struct xtc_msg_status *d = &a->d;

	fputs("{\"version\":", out);
	print_json_string(out, d->version, strlen(d->version));
	fputc(',', out);
	json_u64(out, "pid", d->pid, 1);
	json_u64(out, "uptime_ns", d->uptime_ns, 1);
	fputs("\"io\":", out);
	print_json_string(out, d->io, strlen(d->io));
	fprintf(out, ",\"io_uring\":%s,\"dir\":", d->flags & 1 ? "true" : "false");
	print_json_string(out, d->dir, strlen(d->dir));
	fputc(',', out);
	json_u64(out, "drain_ms", d->drain_ms, 1);
	json_u64(out, "segments", d->segments, 1);
	json_u64(out, "bytes_used", d->bytes_used, 1);
	json_u64(out, "max_bytes", d->max_bytes, 1);
	json_u64(out, "segment_bytes", d->segment_bytes, 1);
	json_u64(out, "sessions_live", d->sessions, 1);
	json_u64(out, "events_per_s", d->events_per_s, 1);
	json_u64(out, "produced", d->produced, 1);
	json_u64(out, "written", d->written, 1);
	json_u64(out, "dropped", d->dropped, 1);
	json_u64(out, "lost", d->lost, 1);
	json_u64(out, "uid", d->peer_uid, 1);
	json_u64(out, "uid_bytes", d->uid_bytes, 1);
	if (d->uid_quota == UINT64_MAX)
		fputs("\"uid_quota\":null,", out);
	else
		json_u64(out, "uid_quota", d->uid_quota, 1);
	json_u64(out, "uid_shm_mapped", d->uid_shm_mapped, 1);
	json_u64(out, "uid_shm_touched", d->uid_shm_touched, 1);
	json_u64(out, "uid_shm_max", d->uid_shm_max, 1);
	fputs("\"sessions\":[", out);
	for (size_t i = 0; i < a->n; i++) {
		if (i)
			fputc(',', out);
		print_json_session(out, &a->s[i]);
	}
	fputs("]}\n", out);
}

static int by_id(const void *x, const void *y)
{
	const struct xtc_msg_status_session *a = x, *b = y;

	return a->session_id < b->session_id ? -1 : a->session_id > b->session_id;
}

int status_client(const char *path, int json, FILE *out)
{
	struct answer a = { 0 };
	char why[256];
	int fd = connect_to(path), rc;

	if (fd < 0) {
		int err = errno;

		snprintf(why, sizeof why, "%s%s", strerror(err),
		         err == ENOENT || err == ECONNREFUSED
		             ? "; is it running? (systemctl status xtcd, or give --socket PATH)" : "");
		return fail(path, "no xtcd answers", why);
	}
	rc = ask(fd, &a, why, sizeof why);
	close(fd);
	if (rc == 0 && a.n > 1)
		qsort(a.s, a.n, sizeof *a.s, by_id);
	if (rc < 0) {
		free(a.s);
		return fail(path, "no status from xtcd", why);
	}
	if (json)
		print_json(out, &a);
	else
		print_text(out, &a);
	free(a.s);
	if (fflush(out) != 0 || ferror(out)) {
		fprintf(stderr, "xtcd: --status: writing the output failed: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}
