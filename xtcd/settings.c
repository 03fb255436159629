/*
 * xtcd/settings.c - every setting of the daemon, once: its key, its flag,
 * its type and range, its default, its field, its help.  After the table,
 * the types: how a value is parsed, how its accepted form is said, how it
 * is printed.  Whether it comes from xtcd.conf or from the command line, a
 * value goes through settings_apply(), so both take the same values and
 * refuse them with the same words.
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/xtc_attach.h"
#include "xtcd/conf.h"
#include "xtcd/settings.h"

#define F(field) offsetof(struct config, field)
#define SUN_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

/* The order is --help's and the unknown-key message's.  A new setting is a
 * new row here and a field in struct config (xtcd.h). */
const struct setting settings_table[] = {
	{ .key = "dir", .flag = "dir", .short_flag = 'd', .type = SETTING_PATH,
	  .flags = SETTING_RESTART, .off = F(dir), .example = "the path of a directory",
	  .arg = "DIR", .help = "segment directory (must exist and be writable)" },
	{ .key = "socket", .flag = "socket", .short_flag = 's', .type = SETTING_PATH,
	  .flags = SETTING_RESTART, .max = SUN_PATH_MAX, .def = XTC_DEFAULT_SOCKET, .off = F(socket),
	  .arg = "PATH", .help = "attach socket" },
	{ .key = "max_bytes", .flag = "max-bytes", .type = SETTING_SIZE, .def = "1G",
	  .off = F(max_bytes), .example = "512M or 4G", .arg = "N",
	  .help = "all segments together at most N bytes" },
	{ .key = "segment_bytes", .flag = "segment-bytes", .type = SETTING_SIZE, .min = 64u << 10,
	  .def = "64M", .off = F(segment_bytes), .example = "64M", .arg = "N",
	  .help = "one segment at most N bytes" },
	{ .key = "keep_free", .flag = "keep-free", .type = SETTING_SIZE, .def = "0",
	  .off = F(keep_free), .example = "1G, or 0", .arg = "N",
	  .help = "also keep N bytes of the filesystem free" },
	{ .key = "drain_ms", .flag = "drain-ms", .type = SETTING_UINT, .min = 1, .max = 60000,
	  .def = "20", .off = F(drain_ms), .example = "milliseconds", .arg = "N",
	  .help = "drain every N ms, and on producer nudges" },
	{ .key = "priority_boost", .flag = "priority-boost", .type = SETTING_UINT,
	  .flags = SETTING_RESTART, .max = 20, .def = "10", .off = F(priority_boost), .arg = "N",
	  .help = "drain at nice -N, ahead of the applications (needs CAP_SYS_NICE unless "
	          "started so); 0: at the nice xtcd was started with" },
	{ .key = "sync", .flag = "sync", .type = SETTING_SYNC, .min = 1, .max = 3600000,
	  .def = "rotate", .off = F(sync), .off2 = F(sync_ms), .arg = "WHEN",
	  .help = "fdatasync: never, rotate (each closed segment), or every N ms" },
	{ .key = "pwrite", .flag = "pwrite", .type = SETTING_BOOL, .flags = SETTING_RESTART,
	  .def = "no", .off = F(force_pwrite), .arg = "BOOL",
	  .help = "write with pwrite(2) instead of io_uring" },
	{ .key = "direct", .flag = "direct", .type = SETTING_BOOL, .flags = SETTING_RESTART,
	  .def = "no", .off = F(direct), .arg = "BOOL",
	  .help = "write whole 4 KiB blocks of large writes with O_DIRECT, past the page cache" },
	{ .key = "inline_max", .flag = "inline-max", .type = SETTING_SIZE, .def = "256K",
	  .off = F(inline_max), .example = "256K, or 0", .arg = "N",
	  .help = "with io_uring, write a buffer of at most N bytes with pwrite on the loop when "
	          "nothing is in flight and such writes stay under 1 ms; 0: never" },
	{ .key = "hello_timeout_ms", .flag = "hello-timeout-ms", .type = SETTING_UINT, .min = 1,
	  .max = 600000, .def = "5000", .off = F(hello_timeout_ms), .example = "milliseconds",
	  .arg = "N", .help = "drop a client that sends no hello in N ms" },
	{ .key = "max_clients", .flag = "max-clients", .type = SETTING_UINT, .min = 1,
	  .max = 1000000, .def = "4096", .off = F(max_clients), .arg = "N",
	  .help = "at most N clients attached or connecting" },
	{ .key = "max_sessions_per_uid", .flag = "max-sessions-per-uid", .type = SETTING_UINT,
	  .flags = SETTING_AUTO, .min = 1, .max = 1000000, .def = "auto",
	  .off = F(max_sessions_per_uid), .arg = "N",
	  .help = "at most N sessions of one uid attached at once; auto: half of --max-clients" },
	{ .key = "max_shm_per_uid", .flag = "max-shm-per-uid", .type = SETTING_SIZE,
	  .flags = SETTING_AUTO, .min = 1u << 20, .def = "auto", .off = F(max_shm_per_uid),
	  .example = "4G", .arg = "SIZE",
	  .help = "the client segments of one uid xtcd maps at once at most SIZE bytes; "
	          "auto: half of physical memory" },
	{ .key = "allow_uids", .flag = "allow-uid", .type = SETTING_UIDS, .def = "any",
	  .off = F(allow_uids), .off2 = F(allow_uid_count), .arg = "LIST",
	  .help = "only these users (names or uids, comma-separated) may attach; root always may" },
	{ .key = "allow_gids", .flag = "allow-gid", .type = SETTING_GIDS, .def = "any",
	  .off = F(allow_gids), .off2 = F(allow_gid_count), .arg = "LIST",
	  .help = "also these groups (the peer's primary gid) may attach" },
	{ .key = "quota", .flag = "quota", .type = SETTING_SIZE, .flags = SETTING_NONE,
	  .def = "none", .off = F(quota), .example = "256M", .arg = "SIZE",
	  .help = "event bytes the sessions of one uid may hold in DIR" },
	{ .key = "quota.", .type = SETTING_QUOTA_UID, .flags = SETTING_NONE, .off = F(quotas),
	  .off2 = F(quota_count),
	  .example = "quota.UID = SIZE, UID a user name or uid, SIZE such as 1G or none" },
	{ .key = "log_level", .flag = "verbose", .short_flag = 'v', .type = SETTING_LEVEL,
	  .def = "info", .off = F(log_level), .arg = "LEVEL",
	  .help = "log error, warning, info or debug lines and above; bare -v: one level more" },
	{ .key = "log_rate_burst", .flag = "log-rate-burst", .type = SETTING_UINT, .max = 1000000,
	  .def = "100", .off = F(log_rate_burst), .arg = "N",
	  .help = "at most N session and refusal lines per uid in each interval, then one line "
	          "saying how many were suppressed; 0: no limit" },
	{ .key = "log_rate_interval_ms", .flag = "log-rate-interval-ms", .type = SETTING_UINT,
	  .min = 1, .max = 3600000, .def = "10000", .off = F(log_rate_interval_ms),
	  .example = "milliseconds", .arg = "N", .help = "the interval of log_rate_burst" },
	{ .key = "metrics_file", .flag = "metrics-file", .type = SETTING_PROM,
	  .flags = SETTING_NONE | SETTING_RESTART, .def = "none", .off = F(metrics_file),
	  .arg = "PATH",
	  .help = "rewrite PATH, in node-exporter's textfile directory, with the daemon's counters "
	          "every 5~s" },
	/* xtcd --ship's; the URL's flag is the argument after --ship */
	{ .key = "ship", .type = SETTING_URL, .flags = SETTING_SHIP | SETTING_NONE, .def = "none",
	  .off = F(ship_url),
	  .example = "a ClickHouse HTTP URL such as http://clickhouse:8123/?database=xtc" },
	{ .key = "ship_create", .flag = "ship-create", .type = SETTING_BOOL, .flags = SETTING_SHIP,
	  .def = "no", .off = F(ship_create), .arg = "BOOL",
	  .help = "create the tables events, sessions and drops first" },
	{ .key = "ship_host", .flag = "ship-host", .type = SETTING_NAME,
	  .flags = SETTING_SHIP | SETTING_NONE, .min = 1, .max = 63, .def = "none",
	  .off = F(ship_host), .example = "a host name", .arg = "NAME",
	  .help = "the host name shipped; none: the segments' own" },
	{ .key = "ship_cursor", .flag = "ship-cursor", .type = SETTING_PATH,
	  .flags = SETTING_SHIP | SETTING_NONE, .def = "none", .off = F(ship_cursor),
	  .example = "a file path", .arg = "FILE",
	  .help = "where the position ClickHouse acknowledged is kept; none: DIR/.xtcd-ship.cursor" },
	{ .key = "ship_batch", .flag = "ship-batch", .type = SETTING_UINT, .flags = SETTING_SHIP,
	  .min = 1, .max = 1000000, .def = "65536", .off = F(ship_batch), .example = "rows",
	  .arg = "N", .help = "send when N rows wait" },
	{ .key = "ship_batch_ms", .flag = "ship-batch-ms", .type = SETTING_UINT,
	  .flags = SETTING_SHIP, .min = 1, .max = 600000, .def = "1000", .off = F(ship_batch_ms),
	  .example = "milliseconds", .arg = "MS", .help = "... or when the oldest has waited MS ms" },
	{ .key = "ship_metrics", .flag = "ship-metrics", .type = SETTING_PROM,
	  .flags = SETTING_SHIP | SETTING_NONE, .def = "none", .off = F(ship_metrics),
	  .arg = "FILE",
	  .help = "the shipper's node-exporter textfile; none: xtcd-ship.prom next to "
	          "metrics_file, if set" },
};
const size_t settings_count = sizeof settings_table / sizeof settings_table[0];

_Static_assert(sizeof settings_table / sizeof settings_table[0] <= SETTINGS_MAX,
               "raise SETTINGS_MAX");

/* ---------------------------------------------------------------------
 * Fields, by offset
 */

#define FIELD(c, off, type) ((type *)(void *)((char *)(c) + (off)))

const struct setting *settings_find_key(const char *key)
{
	for (size_t i = 0; i < settings_count; i++) {
		const struct setting *s = &settings_table[i];

		if (s->type == SETTING_QUOTA_UID ? strncmp(key, s->key, strlen(s->key)) == 0 &&
		                                   key[strlen(s->key)] != '\0'
		                                 : strcmp(key, s->key) == 0)
			return s;
	}
	return NULL;
}

/* ---------------------------------------------------------------------
 * Values
 */

int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	if (s == NULL || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (*end == 'i' || *end == 'B')
		end += *end == 'i' && end[1] == 'B' ? 2 : 1;
	if (*end != '\0' || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

/* Digits only: no sign, no blanks, no suffix. */
static int parse_num(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_bool(const char *s, int *out)
{
	static const char *const yes[] = { "yes", "true", "on", "1" }, *const no[] = { "no", "false", "off", "0" };

	for (size_t i = 0; i < 4; i++) {
		if (strcmp(s, yes[i]) == 0)
			return *out = 1, 0;
		if (strcmp(s, no[i]) == 0)
			return *out = 0, 0;
	}
	return -1;
}

/* One user or group: a number, or a name the system knows. */
static int parse_id(const char *tok, int groups, uint32_t *out, char *why, size_t len)
{
	char buf[16384];
	uint64_t v;

	if (parse_num(tok, 0, UINT_MAX - 1, &v) == 0) {
		*out = (uint32_t)v;
		return 0;
	}
	if (groups) {
		struct group gr, *g = NULL;

		if (getgrnam_r(tok, &gr, buf, sizeof buf, &g) == 0 && g != NULL)
			return *out = g->gr_gid, 0;
	} else {
		struct passwd pw, *p = NULL;

		if (getpwnam_r(tok, &pw, buf, sizeof buf, &p) == 0 && p != NULL)
			return *out = p->pw_uid, 0;
	}
	snprintf(why, len, "'%s' is neither a number nor a known %s", tok, groups ? "group" : "user");
	return -1;
}

/* The token of s up to the next comma, without blanks around it. */
static size_t next_token(const char **p, char *tok, size_t cap)
{
	size_t k = strcspn(*p, ","), n;

	while (k > 0 && (**p == ' ' || **p == '\t'))
		(*p)++, k--;
	n = k < cap ? k : cap - 1;
	memcpy(tok, *p, n);
	tok[n] = '\0';
	while (n > 0 && (tok[n - 1] == ' ' || tok[n - 1] == '\t'))
		tok[--n] = '\0';
	*p += k;
	return n;
}

/* "alice, 1001" into a new list; "any" is no list.  0, or -1 with why
 * empty (the form is the message) or naming the bad entry. */
static int parse_ids(const char *s, int groups, uint32_t **list, size_t *n, char *why, size_t len)
{
	uint32_t *ids = NULL;
	size_t count = 0;

	why[0] = '\0';
	*list = NULL;
	*n = 0;
	if (strcmp(s, "any") == 0)
		return 0;
	do {
		char tok[256];
		uint32_t *grown;

		if (next_token(&s, tok, sizeof tok) == 0)
			goto fail;
		grown = realloc(ids, (count + 1) * sizeof *ids);
		if (grown == NULL) {
			snprintf(why, len, "out of memory");
			goto fail;
		}
		ids = grown;
		if (parse_id(tok, groups, &ids[count], why, len) < 0)
			goto fail;
		count++;
	} while (*s++ == ',');
	*list = ids;
	*n = count;
	return 0;
fail:
	free(ids);
	return -1;
}

/* A path made absolute against the working directory, as xtcd never
 * changes it. */
static char *absolute_path(const char *v)
{
	char cwd[PATH_MAX], *out;

	if (v[0] == '/')
		return strdup(v);
	if (getcwd(cwd, sizeof cwd) == NULL)
		return NULL;
	if (asprintf(&out, "%s/%s", cwd, v) < 0)
		return NULL;
	return out;
}

/* ---------------------------------------------------------------------
 * One parser per type.  Each returns 0, or -1 leaving why empty (the
 * accepted form says it all) or set to a detail said before the form.
 */

static int apply_path(const struct setting *s, const char *v, struct config *c, char *why,
                      size_t len)
{
	char **field = FIELD(c, s->off, char *), *p = NULL;

	if ((s->flags & SETTING_NONE) && strcmp(v, "none") == 0) {
		free(*field);
		*field = NULL;
		return 0;
	}
	if (v[0] == '\0')
		return -1;
	p = absolute_path(v);
	if (p == NULL) {
		snprintf(why, len, "%s", strerror(errno));
		return -1;
	}
	if (s->max != 0 && strlen(p) > s->max) {
		if (strcmp(p, v) != 0)
			snprintf(why, len, "%s is %zu bytes long", p, strlen(p));
		free(p);
		return -1;
	}
	free(*field);
	*field = p;
	return 0;
}

/* A path node-exporter's textfile collector reads: it ignores every
 * name but *.prom, so another would be written and never seen. */
static int apply_prom(const struct setting *s, const char *v, struct config *c, char *why,
                      size_t len)
{
	size_t n = strlen(v);

	if (!((s->flags & SETTING_NONE) && strcmp(v, "none") == 0) &&
	    (n < 6 || strcmp(v + n - 5, ".prom") != 0 || v[n - 6] == '/'))
		return -1;
	return apply_path(s, v, c, why, len);
}

/* A string kept as given: a URL, or a name of min..max bytes. */
static int apply_text(const struct setting *s, const char *v, struct config *c)
{
	char **field = FIELD(c, s->off, char *), *p;
	size_t n = strlen(v);

	if ((s->flags & SETTING_NONE) && strcmp(v, "none") == 0) {
		free(*field);
		*field = NULL;
		return 0;
	}
	if (s->type == SETTING_URL && strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0)
		return -1;
	if (s->type == SETTING_NAME && (n < s->min || n > s->max || strpbrk(v, " \t\"'\\") != NULL))
		return -1;
	if (s->type == SETTING_URL && (n <= 8 || strpbrk(v, " \t") != NULL))
		return -1;
	p = strdup(v);
	if (p == NULL)
		return -1;
	free(*field);
	*field = p;
	return 0;
}

static int apply_size(const struct setting *s, const char *v, struct config *c)
{
	uint64_t *field = FIELD(c, s->off, uint64_t), size;

	if ((s->flags & SETTING_NONE) && strcmp(v, "none") == 0)
		return *field = CONF_NO_QUOTA, 0;
	if ((s->flags & SETTING_AUTO) && strcmp(v, "auto") == 0)
		return *field = 0, 0;
	/* refuse the absurd, so that no size reads as "none" */
	if (parse_size(v, &size) < 0 || size > (1ULL << 60) || size < s->min)
		return -1;
	*field = size;
	return 0;
}

static int apply_uint(const struct setting *s, const char *v, struct config *c)
{
	unsigned *field = FIELD(c, s->off, unsigned);
	uint64_t n;

	if ((s->flags & SETTING_AUTO) && strcmp(v, "auto") == 0)
		return *field = 0, 0;
	if (parse_num(v, s->min, s->max, &n) < 0)
		return -1;
	*field = (unsigned)n;
	return 0;
}

static int apply_sync(const struct setting *s, const char *v, struct config *c)
{
	int *policy = FIELD(c, s->off, int);
	unsigned *ms = FIELD(c, s->off2, unsigned);
	uint64_t n;

	if (strcmp(v, "never") == 0)
		*policy = SYNC_NEVER;
	else if (strcmp(v, "rotate") == 0)
		*policy = SYNC_ROTATE;
	else if (parse_num(v, s->min, s->max, &n) == 0)
		*policy = SYNC_PERIOD, *ms = (unsigned)n;
	else
		return -1;
	return 0;
}

static int apply_ids(const struct setting *s, const char *v, struct config *c, char *why,
                     size_t len)
{
	uint32_t **field = FIELD(c, s->off, uint32_t *), *list;
	size_t *count = FIELD(c, s->off2, size_t), n;

	if (parse_ids(v, s->type == SETTING_GIDS, &list, &n, why, len) < 0)
		return -1;
	free(*field);
	*field = list;
	*count = n;
	return 0;
}

static int apply_level(const struct setting *s, const char *v, struct config *c)
{
	enum xlog_level level;

	if (xlog_level_parse(v, &level) < 0)
		return -1;
	*FIELD(c, s->off, int) = (int)level;
	return 0;
}

/* quota.NAME = SIZE: NAME is in the key.  -2: why is the whole message. */
static int apply_quota_uid(const struct setting *s, const char *name, const char *v,
                           struct config *c, char *why, size_t len)
{
	struct conf_quota **quotas = FIELD(c, s->off, struct conf_quota *), *grown;
	size_t *count = FIELD(c, s->off2, size_t);
	uint64_t bytes = CONF_NO_QUOTA;
	uint32_t uid;

	if (parse_id(name + strlen(s->key), 0, &uid, why, len) < 0)
		return -1;
	for (size_t i = 0; i < *count; i++)
		if ((*quotas)[i].uid == uid) {
			snprintf(why, len, "%s names uid %u, which an earlier quota line names too", name,
			         (unsigned)uid);
			return -2;
		}
	if (strcmp(v, "none") != 0 && (parse_size(v, &bytes) < 0 || bytes > (1ULL << 60)))
		return -1;
	grown = realloc(*quotas, (*count + 1) * sizeof *grown);
	if (grown == NULL) {
		snprintf(why, len, "out of memory");
		return -2;
	}
	*quotas = grown;
	grown[(*count)++] = (struct conf_quota){ uid, bytes };
	return 0;
}

int settings_apply(const struct setting *s, const char *name, const char *value,
                   const char *said, struct config *c, char *why, size_t len)
{
	char detail[256] = "", form[160];
	int r = -1;

	switch (s->type) {
	case SETTING_PATH:  r = apply_path(s, value, c, detail, sizeof detail); break;
	case SETTING_SIZE:  r = apply_size(s, value, c); break;
	case SETTING_UINT:  r = apply_uint(s, value, c); break;
	case SETTING_BOOL:  r = parse_bool(value, FIELD(c, s->off, int)); break;
	case SETTING_SYNC:  r = apply_sync(s, value, c); break;
	case SETTING_UIDS:
	case SETTING_GIDS:  r = apply_ids(s, value, c, detail, sizeof detail); break;
	case SETTING_LEVEL: r = apply_level(s, value, c); break;
	case SETTING_PROM:  r = apply_prom(s, value, c, detail, sizeof detail); break;
	case SETTING_URL:
	case SETTING_NAME:  r = apply_text(s, value, c); break;
	case SETTING_QUOTA_UID:
		r = apply_quota_uid(s, name, value, c, detail, sizeof detail);
		if (r == -2) {
			snprintf(why, len, "%s", detail);
			return -1;
		}
		break;
	}
	if (r == 0)
		return 0;
	settings_form(s, form, sizeof form);
	if (detail[0] != '\0')
		snprintf(why, len, "%s: %s; expected %s", said, detail, form);
	else
		snprintf(why, len, "%s: expected %s", said, form);
	return -1;
}

const char *settings_form(const struct setting *s, char *buf, size_t len)
{
	char min[32];

	switch (s->type) {
	case SETTING_PATH:
		snprintf(buf, len, "%s", s->example != NULL ? s->example : "a path");
		if (s->max != 0)
			snprintf(buf + strlen(buf), len - strlen(buf), " of at most %llu bytes",
			         (unsigned long long)s->max);
		break;
	case SETTING_SIZE:
		if (s->min != 0)
			snprintf(buf, len, "a size of at least %s, such as %s",
			         conf_size_text(s->min, min, sizeof min), s->example);
		else
			snprintf(buf, len, "a size such as %s", s->example);
		if (s->flags & SETTING_AUTO)
			snprintf(buf + strlen(buf), len - strlen(buf), ", or auto");
		break;
	case SETTING_UINT:
		snprintf(buf, len, "a whole number%s%s from %llu to %llu", s->example ? " of " : "",
		         s->example ? s->example : "", (unsigned long long)s->min,
		         (unsigned long long)s->max);
		if (s->flags & SETTING_AUTO)
			snprintf(buf + strlen(buf), len - strlen(buf), ", or auto");
		break;
	case SETTING_BOOL:
		snprintf(buf, len, "yes or no");
		break;
	case SETTING_SYNC:
		snprintf(buf, len, "never, rotate, or a period in milliseconds from %llu to %llu",
		         (unsigned long long)s->min, (unsigned long long)s->max);
		break;
	case SETTING_UIDS:
		snprintf(buf, len, "user names or uids separated by commas, or any");
		break;
	case SETTING_GIDS:
		snprintf(buf, len, "group names or gids separated by commas, or any");
		break;
	case SETTING_LEVEL:
		snprintf(buf, len, "error, warning, info or debug");
		break;
	case SETTING_URL:
		snprintf(buf, len, "%s", s->example);
		break;
	case SETTING_NAME:
		snprintf(buf, len, "%s of %llu to %llu bytes without blanks or quotes", s->example,
		         (unsigned long long)s->min, (unsigned long long)s->max);
		break;
	case SETTING_PROM:
		snprintf(buf, len, "a file name ending in .prom");
		break;
	case SETTING_QUOTA_UID:
		snprintf(buf, len, "%s", s->example);
		return buf;
	}
	if ((s->flags & SETTING_NONE) && strlen(buf) + 9 < len)
		strcat(buf, ", or none");
	return buf;
}

/* "1000,1001", cut short with "..." if it does not fit. */
static void format_ids(const uint32_t *ids, size_t n, char *buf, size_t len)
{
	size_t at = 0;

	if (ids == NULL) {
		snprintf(buf, len, "any");
		return;
	}
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(buf + at, len - at, "%s%u", i ? "," : "", (unsigned)ids[i]);

		if (w < 0 || (size_t)w >= len - at) {
			snprintf(buf + (len > 4 ? len - 4 : 0), len > 4 ? 4 : len, "...");
			return;
		}
		at += (size_t)w;
	}
}

const char *settings_format(const struct setting *s, const struct config *c, char *buf,
                            size_t len)
{
	const char *p;
	unsigned u;

	switch (s->type) {
	case SETTING_PATH:
	case SETTING_PROM:
	case SETTING_URL:
	case SETTING_NAME:
		p = *FIELD(c, s->off, const char *);
		snprintf(buf, len, "%s", p != NULL ? p : "none");
		break;
	case SETTING_SIZE:
		if ((s->flags & SETTING_AUTO) && *FIELD(c, s->off, const uint64_t) == 0)
			snprintf(buf, len, "auto");
		else
			conf_size_text(*FIELD(c, s->off, const uint64_t), buf, len);
		break;
	case SETTING_UINT:
		u = *FIELD(c, s->off, const unsigned);
		if ((s->flags & SETTING_AUTO) && u == 0)
			snprintf(buf, len, "auto");
		else
			snprintf(buf, len, "%u", u);
		break;
	case SETTING_BOOL:
		snprintf(buf, len, "%s", *FIELD(c, s->off, const int) ? "yes" : "no");
		break;
	case SETTING_SYNC:
		switch (*FIELD(c, s->off, const int)) {
		case SYNC_NEVER:  snprintf(buf, len, "never"); break;
		case SYNC_ROTATE: snprintf(buf, len, "rotate"); break;
		default:          snprintf(buf, len, "%u", *FIELD(c, s->off2, const unsigned)); break;
		}
		break;
	case SETTING_UIDS:
	case SETTING_GIDS:
		format_ids(*FIELD(c, s->off, uint32_t *const), *FIELD(c, s->off2, const size_t), buf, len);
		break;
	case SETTING_LEVEL:
		snprintf(buf, len, "%s", xlog_level_name(*FIELD(c, s->off, const int)));
		break;
	case SETTING_QUOTA_UID:
		snprintf(buf, len, "%zu uids", *FIELD(c, s->off2, const size_t));
		break;
	}
	return buf;
}

const char *settings_describe(const struct setting *s, const struct config *c, char *buf,
                              size_t len)
{
	const struct conf_quota *q;
	size_t at = 0, n;
	char v[256];

	if (s->type != SETTING_QUOTA_UID) {
		snprintf(buf, len, "%s=%s", s->key, settings_format(s, c, v, sizeof v));
		return buf;
	}
	q = *FIELD(c, s->off, struct conf_quota *const);
	n = *FIELD(c, s->off2, const size_t);
	buf[0] = '\0';
	for (size_t i = 0; i < n && at < len; i++) {
		int w = snprintf(buf + at, len - at, "%s%s%u=%s", i ? " " : "", s->key, (unsigned)q[i].uid,
		                 conf_size_text(q[i].bytes, v, sizeof v));

		at += w > 0 ? (size_t)w : 0;
	}
	return buf;
}

const char *settings_describe_all(const struct config *c, unsigned skip, char *buf, size_t len)
{
	size_t at = 0;
	char one[512];

	buf[0] = '\0';
	for (size_t i = 0; i < settings_count && at < len; i++) {
		int w;

		if (settings_table[i].flags & skip)
			continue;
		settings_describe(&settings_table[i], c, one, sizeof one);
		if (one[0] == '\0')
			continue;
		w = snprintf(buf + at, len - at, "%s%s", at ? " " : "", one);
		at += w > 0 ? (size_t)w : 0;
	}
	return buf;
}

void settings_defaults(struct config *c)
{
	char why[256];

	for (size_t i = 0; i < settings_count; i++) {
		const struct setting *s = &settings_table[i];

		/* tests/check_conf proves every default parses */
		if (s->def != NULL)
			settings_apply(s, s->key, s->def, s->key, c, why, sizeof why);
	}
}

void settings_free(struct config *c)
{
	for (size_t i = 0; i < settings_count; i++) {
		const struct setting *s = &settings_table[i];

		switch (s->type) {
		case SETTING_PATH:
		case SETTING_PROM:
		case SETTING_URL:
		case SETTING_NAME:
		case SETTING_UIDS:
		case SETTING_GIDS:
		case SETTING_QUOTA_UID:
			free(*FIELD(c, s->off, void *));
			*FIELD(c, s->off, void *) = NULL;
			break;
		default:
			break;
		}
	}
}

/* Whether the field is a string the table owns. */
static int setting_is_text(const struct setting *s)
{
	return s->type == SETTING_PATH || s->type == SETTING_PROM || s->type == SETTING_URL ||
	       s->type == SETTING_NAME;
}

void settings_keep(const struct setting *s, struct config *old, struct config *next)
{
	size_t size = setting_is_text(s) ? sizeof(char *) : sizeof(int);
	char tmp[sizeof(char *) > sizeof(int) ? sizeof(char *) : sizeof(int)];

	memcpy(tmp, (char *)old + s->off, size);
	memcpy((char *)old + s->off, (char *)next + s->off, size);
	memcpy((char *)next + s->off, tmp, size);
}

const char *settings_keys_text(void)
{
	static char text[512];

	if (text[0] == '\0')
		for (size_t i = 0; i < settings_count; i++) {
			const char *k = settings_table[i].key;

			snprintf(text + strlen(text), sizeof text - strlen(text), "%s%s%s", i ? ", " : "", k,
			         settings_table[i].type == SETTING_QUOTA_UID ? "UID" : "");
		}
	return text;
}

/* ---------------------------------------------------------------------
 * The command line
 */

/* Whether a flag may be given without a value (--pwrite, -v). */
static int bare_ok(const struct setting *s)
{
	return s->type == SETTING_BOOL || s->type == SETTING_LEVEL;
}

const char *settings_flag_said(const struct setting *s, const char *value, char *buf,
                               size_t len)
{
	snprintf(buf, len, "--%s%s%s", s->flag, bare_ok(s) ? "=" : " ", value);
	return buf;
}

size_t settings_long_options(struct option *opts, int base)
{
	size_t n = 0;

	for (size_t i = 0; i < settings_count; i++)
		if (settings_table[i].flag != NULL)
			opts[n++] = (struct option){ settings_table[i].flag,
			                             bare_ok(&settings_table[i]) ? optional_argument
			                                                         : required_argument,
			                             NULL, base + (int)i };
	return n;
}

const char *settings_short_options(void)
{
	static char text[2 * SETTINGS_MAX + 1];

	if (text[0] == '\0')
		for (size_t i = 0; i < settings_count; i++) {
			const struct setting *s = &settings_table[i];
			size_t n = strlen(text);

			if (s->short_flag == 0)
				continue;
			text[n++] = s->short_flag;
			/* -v is bare only: -vv is two of them, not -v v */
			if (!bare_ok(s))
				text[n++] = ':';
		}
	return text;
}

const char *settings_bare_flag(const char *arg)
{
	for (size_t i = 0; arg != NULL && i < settings_count; i++) {
		const struct setting *s = &settings_table[i];

		if (s->flag == NULL || !bare_ok(s))
			continue;
		if ((strncmp(arg, "--", 2) == 0 && strcmp(arg + 2, s->flag) == 0) ||
		    (s->short_flag != 0 && arg[0] == '-' && arg[1] == s->short_flag && arg[2] == '\0'))
			return s->flag;
	}
	return NULL;
}

int settings_by_short(int c)
{
	for (size_t i = 0; i < settings_count; i++)
		if (c != 0 && settings_table[i].short_flag == c)
			return (int)i;
	return -1;
}

/* The value of a bare flag: yes, or one log level more than so far. */
static const char *bare_value(const struct setting *s, const char *before)
{
	enum xlog_level level;

	if (s->type == SETTING_BOOL)
		return "yes";
	if (before == NULL || xlog_level_parse(before, &level) < 0)
		xlog_level_parse(s->def, &level);
	return xlog_level_name(level < XLOG_DEBUG ? level + 1 : XLOG_DEBUG);
}

int settings_flag(struct settings_cli *cli, size_t row, const char *value, char *err,
                  size_t len)
{
	const struct setting *s = &settings_table[row];
	struct config scratch = { 0 };
	char said[512], *v;
	int r;

	if (value == NULL)
		value = bare_value(s, cli->value[row]);
	/* A repeated list flag adds to the list. */
	if ((s->type == SETTING_UIDS || s->type == SETTING_GIDS) && cli->value[row] != NULL)
		r = asprintf(&v, "%s,%s", cli->value[row], value);
	else
		r = (v = strdup(value)) != NULL ? 0 : -1;
	if (r < 0) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	settings_flag_said(s, value, said, sizeof said);
	r = settings_apply(s, s->key, v, said, &scratch, err, len);
	settings_free(&scratch);
	if (r < 0) {
		snprintf(err + strlen(err), len - strlen(err), "; see xtcd --help");
		free(v);
		return -1;
	}
	free(cli->value[row]);
	cli->value[row] = v;
	return 0;
}

void settings_cli_free(struct settings_cli *cli)
{
	for (size_t i = 0; i < SETTINGS_MAX; i++) {
		free(cli->value[i]);
		cli->value[i] = NULL;
	}
}

const char *settings_suggest_flag(const char *name)
{
	char fixed[64];
	size_t i;

	for (i = 0; name[i] != '\0' && name[i] != '=' && i < sizeof fixed - 1; i++)
		fixed[i] = name[i] == '_' ? '-' : name[i];
	fixed[i] = '\0';
	for (size_t k = 0; k < settings_count; k++) {
		const struct setting *s = &settings_table[k];

		if (s->flag != NULL && (strcmp(fixed, s->flag) == 0 || strcmp(name, s->key) == 0))
			return s->flag;
	}
	return NULL;
}

/* ---------------------------------------------------------------------
 * --help
 */

#define HELP_COLUMN 27
#define HELP_WIDTH  80

/* Words of text from column `at` on, wrapped under HELP_COLUMN; a '~'
 * is a blank that does not break. */
static void help_wrap(FILE *f, const char *text, int at)
{
	while (*text != '\0') {
		size_t word = strcspn(text, " ");

		if (at > HELP_COLUMN && at + 1 + (int)word > HELP_WIDTH) {
			fprintf(f, "\n%*s", HELP_COLUMN, "");
			at = HELP_COLUMN;
		} else if (at > HELP_COLUMN) {
			fputc(' ', f);
			at++;
		}
		for (size_t i = 0; i < word; i++)
			fputc(text[i] == '~' ? ' ' : text[i], f);
		at += (int)word;
		text += word;
		while (*text == ' ')
			text++;
	}
	fputc('\n', f);
}

/* "(1~to~60000,~default~20)": the range and the default, from the row. */
static void help_tail(const struct setting *s, char *buf, size_t len)
{
	char min[32];

	buf[0] = '\0';
	if (s->type == SETTING_UINT)
		snprintf(buf, len, "%llu~to~%llu", (unsigned long long)s->min, (unsigned long long)s->max);
	else if (s->type == SETTING_SIZE && s->min != 0)
		snprintf(buf, len, "at~least~%s", conf_size_text(s->min, min, sizeof min));
	if (s->def != NULL)
		snprintf(buf + strlen(buf), len - strlen(buf), "%sdefault~%s", buf[0] ? ",~" : "", s->def);
	if (buf[0] != '\0') {
		memmove(buf + 2, buf, strlen(buf) + 1);
		buf[0] = ' ';
		buf[1] = '(';
		snprintf(buf + strlen(buf), len - strlen(buf), ")");
	}
}

void settings_help(FILE *f, int ship)
{
	for (size_t i = 0; i < settings_count; i++) {
		const struct setting *s = &settings_table[i];
		char head[64], tail[96], text[400];
		int n;

		if (s->flag == NULL || !(s->flags & SETTING_SHIP) != !ship)
			continue;
		if (s->short_flag != 0)
			n = snprintf(head, sizeof head, "  -%c, --%s", s->short_flag, s->flag);
		else
			n = snprintf(head, sizeof head, "      --%s", s->flag);
		snprintf(head + n, sizeof head - (size_t)n, bare_ok(s) ? "[=%s]" : " %s", s->arg);
		help_tail(s, tail, sizeof tail);
		snprintf(text, sizeof text, "%s%s", s->help, tail);
		if (strlen(head) >= HELP_COLUMN)
			fprintf(f, "%s\n%*s", head, HELP_COLUMN, "");
		else
			fprintf(f, "%-*s", HELP_COLUMN, head);
		help_wrap(f, text, HELP_COLUMN);
	}
}
