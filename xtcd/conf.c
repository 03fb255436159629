/*
 * xtcd/conf.c - the configuration file and its merge with the command line.
 *
 * The file is "key = value" lines; blank lines and lines starting with #
 * are ignored, and so is " # ..." after a value.  Every key may appear once.
 * A bad line is reported as "FILE:LINE: what is wrong; expected FORM", one
 * line, and nothing of the file is used: at startup xtcd exits 2, on
 * SIGHUP it keeps the settings in force (main.c).
 *
 * Command-line flags win over the file.  To know what the command line
 * set, main.c parses it into a struct config that conf_unset() filled with
 * "not given" markers (NULL, UINT64_MAX, UINT_MAX, -1); conf_build() lays
 * every given value over the defaults and the file.  That copy is kept, so
 * a reload lays the same flags over the new file.
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "xtcd/conf.h"
#include "proto/xtc_attach.h"

#ifndef XTCD_CONF_PATH
#define XTCD_CONF_PATH "/etc/xtcd.conf"
#endif

#define UNSET_SIZE UINT64_MAX
#define UNSET_UINT UINT_MAX

const char *conf_default_path(void)
{
	return XTCD_CONF_PATH;
}

enum key {
	K_DIR, K_SOCKET, K_MAX_BYTES, K_SEGMENT_BYTES, K_KEEP_FREE, K_DRAIN_MS, K_SYNC, K_PWRITE,
	K_HELLO_TIMEOUT, K_MAX_CLIENTS, K_ALLOW_UIDS, K_ALLOW_GIDS, K_QUOTA, K_QUOTA_UID, K_SHIP,
	K_METRICS_FILE, NKEYS
};

/* Each key with the form its value takes, as error messages say it. */
static const struct {
	const char *name;
	const char *form;
} keys[NKEYS] = {
	[K_DIR]           = { "dir", "an absolute path of a directory" },
	[K_SOCKET]        = { "socket", "an absolute path of at most 107 bytes" },
	[K_MAX_BYTES]     = { "max_bytes", "a size such as 512M or 4G" },
	[K_SEGMENT_BYTES] = { "segment_bytes", "a size of at least 64K, such as 64M" },
	[K_KEEP_FREE]     = { "keep_free", "a size such as 1G, or 0" },
	[K_DRAIN_MS]      = { "drain_ms", "a whole number of milliseconds from 1 to 60000" },
	[K_SYNC]          = { "sync", "never, rotate, or a period in milliseconds from 1 to 3600000" },
	[K_PWRITE]        = { "pwrite", "yes or no" },
	[K_HELLO_TIMEOUT] = { "hello_timeout_ms", "a whole number of milliseconds from 1 to 600000" },
	[K_MAX_CLIENTS]   = { "max_clients", "a whole number from 1 to 1000000" },
	[K_ALLOW_UIDS]    = { "allow_uids", "user names or uids separated by commas, or any" },
	[K_ALLOW_GIDS]    = { "allow_gids", "group names or gids separated by commas, or any" },
	[K_QUOTA]         = { "quota", "a size such as 256M, or none" },
	[K_QUOTA_UID]     = { "quota.UID", "quota.UID = SIZE, UID a user name or uid, SIZE such as 1G or none" },
	[K_SHIP]          = { "ship", "a ClickHouse HTTP URL such as http://clickhouse:8123/?database=xtc" },
	[K_METRICS_FILE]  = { "metrics_file", "an absolute path ending in .prom" },
};

/* Where each setting came from, for the messages of checks that involve
 * two of them. */
struct origin {
	const char *file;
	int line[NKEYS];   /* 0: default; -1: command line */
};

void conf_unset(struct config *c)
{
	memset(c, 0, sizeof *c);
	c->max_bytes = c->segment_bytes = c->keep_free = UNSET_SIZE;
	c->drain_ms = c->sync_ms = c->hello_timeout_ms = c->max_clients = UNSET_UINT;
	c->force_pwrite = -1;
	c->sync = -1;
	c->quota = UNSET_SIZE;
}

static void set_defaults(struct config *c)
{
	memset(c, 0, sizeof *c);
	c->socket = strdup(XTC_DEFAULT_SOCKET);
	c->max_bytes = 1ULL << 30;
	c->segment_bytes = 64ULL << 20;
	c->keep_free = 0;
	c->drain_ms = 20;
	c->sync = SYNC_ROTATE;
	c->hello_timeout_ms = 5000;
	c->max_clients = 4096;
	c->quota = CONF_NO_QUOTA;
}

void conf_free(struct config *c)
{
	free((char *)c->dir);
	free((char *)c->socket);
	free((char *)c->ship);
	free((char *)c->metrics_file);
	free(c->allow_uids);
	free(c->allow_gids);
	free(c->quotas);
	memset(c, 0, sizeof *c);
}

const char *conf_size_text(uint64_t v, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	int u = -1;

	if (v == CONF_NO_QUOTA) {
		snprintf(buf, len, "none");
		return buf;
	}
	while (u < 3 && v != 0 && (v & 1023) == 0) {
		v >>= 10;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%llu", (unsigned long long)v);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long)v, units[u]);
	return buf;
}

/* ---------------------------------------------------------------------
 * Values
 */

static int parse_num(const char *s, unsigned min, unsigned max, unsigned *out)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* A size, refusing the absurd (so that no value reads as "not given"). */
static int parse_bytes(const char *s, uint64_t *out)
{
	return parse_size(s, out) < 0 || *out > (1ULL << 60) ? -1 : 0;
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

static int parse_sync(const char *s, int *policy, unsigned *ms)
{
	if (strcmp(s, "never") == 0)
		*policy = SYNC_NEVER;
	else if (strcmp(s, "rotate") == 0)
		*policy = SYNC_ROTATE;
	else if (parse_num(s, 1, 3600000, ms) == 0)
		*policy = SYNC_PERIOD;
	else
		return -1;
	return 0;
}

/* One user or group: a number, or a name the system knows. */
static int parse_id(const char *tok, int groups, uint32_t *out, char *why, size_t len)
{
	unsigned v;

	if (parse_num(tok, 0, UINT_MAX - 1, &v) == 0) {
		*out = v;
		return 0;
	}
	if (groups) {
		struct group gr, *g = NULL;
		char buf[16384];

		if (getgrnam_r(tok, &gr, buf, sizeof buf, &g) == 0 && g != NULL) {
			*out = g->gr_gid;
			return 0;
		}
	} else {
		struct passwd pw, *p = NULL;
		char buf[16384];

		if (getpwnam_r(tok, &pw, buf, sizeof buf, &p) == 0 && p != NULL) {
			*out = p->pw_uid;
			return 0;
		}
	}
	snprintf(why, len, "'%s' is neither a number nor a known %s", tok, groups ? "group" : "user");
	return -1;
}

int conf_parse_ids(const char *s, int groups, uint32_t **list, size_t *n, char *why, size_t len)
{
	const char *p = s;

	snprintf(why, len, "expected %s", keys[groups ? K_ALLOW_GIDS : K_ALLOW_UIDS].form);
	do {
		char tok[256];
		size_t k = strcspn(p, ",");
		uint32_t *grown;

		while (k > 0 && (*p == ' ' || *p == '\t'))
			p++, k--;
		memcpy(tok, p, k < sizeof tok ? k : sizeof tok - 1);
		tok[k < sizeof tok ? k : sizeof tok - 1] = '\0';
		for (size_t e = strlen(tok); e > 0 && (tok[e - 1] == ' ' || tok[e - 1] == '\t'); e--)
			tok[e - 1] = '\0';
		if (tok[0] == '\0')
			return -1;
		grown = realloc(*list, (*n + 1) * sizeof **list);
		if (grown == NULL) {
			snprintf(why, len, "out of memory");
			return -1;
		}
		*list = grown;
		if (parse_id(tok, groups, &(*list)[*n], why, len) < 0)
			return -1;
		(*n)++;
		p += k;
	} while (*p++ == ',');
	return 0;
}

/* allow_uids / allow_gids: a list, or "any" (no list). */
static int parse_id_list(const char *v, int groups, uint32_t **list, size_t *n, char *why,
                         size_t len)
{
	free(*list);
	*list = NULL;
	*n = 0;
	if (strcmp(v, "any") == 0)
		return 0;
	if (conf_parse_ids(v, groups, list, n, why, len) < 0) {
		free(*list);
		*list = NULL;
		*n = 0;
		return -1;
	}
	return 0;
}

static int add_quota(struct config *c, uid_t uid, uint64_t bytes)
{
	struct conf_quota *q = realloc(c->quotas, (c->quota_count + 1) * sizeof *q);

	if (q == NULL)
		return -1;
	c->quotas = q;
	c->quotas[c->quota_count++] = (struct conf_quota){ uid, bytes };
	return 0;
}

/* ---------------------------------------------------------------------
 * The file
 */

/* Trim blanks at both ends, in place. */
static char *trim(char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
		s[--n] = '\0';
	return s;
}

static int key_index(const char *name)
{
	for (int k = 0; k < NKEYS; k++)
		if (k != K_QUOTA_UID && strcmp(name, keys[k].name) == 0)
			return k;
	if (strncmp(name, "quota.", 6) == 0)
		return K_QUOTA_UID;
	return -1;
}

/* "max-bytes" for "max_bytes": say what was meant. */
static void unknown_key(const char *name, char *why, size_t len)
{
	char fixed[64];
	size_t i;

	for (i = 0; name[i] != '\0' && i < sizeof fixed - 1; i++)
		fixed[i] = name[i] == '-' ? '_' : name[i];
	fixed[i] = '\0';
	if (strcmp(fixed, name) != 0 && key_index(fixed) >= 0) {
		snprintf(why, len, "unknown key '%s'; did you mean %s?", name, fixed);
		return;
	}
	snprintf(why, len, "unknown key '%s'; expected one of dir, socket, max_bytes, segment_bytes, "
	         "keep_free, drain_ms, sync, pwrite, hello_timeout_ms, max_clients, allow_uids, "
	         "allow_gids, quota, quota.UID, ship, metrics_file", name);
}

/* Apply one "key = value" to c.  Returns 0, or -1 with why (the accepted
 * form included). */
static int apply_line(struct config *c, int k, const char *name, const char *v, char *why,
                      size_t len)
{
	uint64_t size;
	uint32_t uid;
	int ok = 0;

	switch (k) {
	case K_DIR:
	case K_SOCKET:
		if (v[0] != '/' || (k == K_SOCKET && strlen(v) >= sizeof(((struct sockaddr_un *)0)->sun_path)))
			break;
		if (k == K_DIR) {
			free((char *)c->dir);
			c->dir = strdup(v);
		} else {
			free((char *)c->socket);
			c->socket = strdup(v);
		}
		ok = 1;
		break;
	case K_SHIP:
		if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0)
			break;
		free((char *)c->ship);
		c->ship = strdup(v);
		ok = 1;
		break;
	case K_METRICS_FILE:
		if (v[0] != '/' || strlen(v) < 6 || strcmp(v + strlen(v) - 5, ".prom") != 0)
			break;
		free((char *)c->metrics_file);
		c->metrics_file = strdup(v);
		ok = 1;
		break;
	case K_MAX_BYTES:     ok = parse_bytes(v, &c->max_bytes) == 0; break;
	case K_SEGMENT_BYTES: ok = parse_bytes(v, &c->segment_bytes) == 0 && c->segment_bytes >= (64u << 10); break;
	case K_KEEP_FREE:     ok = parse_bytes(v, &c->keep_free) == 0; break;
	case K_DRAIN_MS:      ok = parse_num(v, 1, 60000, &c->drain_ms) == 0; break;
	case K_SYNC:          ok = parse_sync(v, &c->sync, &c->sync_ms) == 0; break;
	case K_PWRITE:        ok = parse_bool(v, &c->force_pwrite) == 0; break;
	case K_HELLO_TIMEOUT: ok = parse_num(v, 1, 600000, &c->hello_timeout_ms) == 0; break;
	case K_MAX_CLIENTS:   ok = parse_num(v, 1, 1000000, &c->max_clients) == 0; break;
	case K_ALLOW_UIDS:
	case K_ALLOW_GIDS: {
		char detail[256];
		int r = k == K_ALLOW_UIDS
		      ? parse_id_list(v, 0, &c->allow_uids, &c->allow_uid_count, detail, sizeof detail)
		      : parse_id_list(v, 1, &c->allow_gids, &c->allow_gid_count, detail, sizeof detail);

		if (r == 0)
			return 0;
		if (strncmp(detail, "expected", 8) == 0)
			snprintf(why, len, "%s = %s: %s", name, v, detail);
		else
			snprintf(why, len, "%s = %s: %s; expected %s", name, v, detail, keys[k].form);
		return -1;
	}
	case K_QUOTA:
		if (strcmp(v, "none") == 0) {
			c->quota = CONF_NO_QUOTA;
			ok = 1;
		} else {
			ok = parse_bytes(v, &c->quota) == 0;
		}
		break;
	case K_QUOTA_UID:
		if (parse_id(name + 6, 0, &uid, why, len) < 0) {
			size_t n = strlen(why);

			snprintf(why + n, len - n, "; expected %s", keys[k].form);
			return -1;
		}
		for (size_t i = 0; i < c->quota_count; i++)
			if (c->quotas[i].uid == uid) {
				snprintf(why, len, "%s names uid %u, which an earlier quota line names too", name,
				         (unsigned)uid);
				return -1;
			}
		if (strcmp(v, "none") == 0)
			size = CONF_NO_QUOTA;
		else if (parse_bytes(v, &size) < 0)
			break;
		if (add_quota(c, uid, size) < 0) {
			snprintf(why, len, "out of memory");
			return -1;
		}
		ok = 1;
		break;
	}
	if (!ok)
		snprintf(why, len, "%s = %s: expected %s", name, v, keys[k].form);
	return ok ? 0 : -1;
}

/* Read the file into c.  Returns 0, or -1 with the message in err. */
static int read_file(struct config *c, const char *path, int must_exist, struct origin *o,
                     char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char *line = NULL, why[512];
	size_t cap = 0;
	int lineno = 0, rc = 0;

	if (f == NULL) {
		if (errno == ENOENT && !must_exist)
			return 0;
		snprintf(err, errlen, "%s: %s%s", path, strerror(errno),
		         must_exist ? "; give --config an existing file" : "");
		return -1;
	}
	o->file = path;
	while (getline(&line, &cap, f) >= 0) {
		char *s = trim(line), *eq, *name, *value, *hash;
		int k;

		lineno++;
		if (*s == '\0' || *s == '#')
			continue;
		eq = strchr(s, '=');
		if (eq == NULL) {
			snprintf(err, errlen, "%s:%d: '%.64s' is not a setting; expected key = value, or a "
			         "# comment", path, lineno, s);
			rc = -1;
			break;
		}
		*eq = '\0';
		name = trim(s);
		value = eq + 1;
		for (hash = value; (hash = strchr(hash, '#')) != NULL; hash++)
			if (hash > value && (hash[-1] == ' ' || hash[-1] == '\t')) {
				*hash = '\0';
				break;
			}
		value = trim(value);
		k = key_index(name);
		if (k < 0) {
			unknown_key(name, why, sizeof why);
		} else if (k != K_QUOTA_UID && o->line[k] > 0) {
			snprintf(why, sizeof why, "%s is set twice (first on line %d); keep one", name,
			         o->line[k]);
			k = -1;
		} else if (*value == '\0') {
			snprintf(why, sizeof why, "%s has no value; expected %s = %s", name, name,
			         keys[k].form);
			k = -1;
		}
		if (k < 0 || apply_line(c, k, name, value, why, sizeof why) < 0) {
			snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
			rc = -1;
			break;
		}
		o->line[k] = lineno;
	}
	if (rc == 0 && ferror(f)) {
		snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
		rc = -1;
	}
	free(line);
	fclose(f);
	return rc;
}

/* ---------------------------------------------------------------------
 * The merge
 */

static void *dup_ids(const void *ids, size_t n)
{
	void *p = malloc(n * sizeof(uint32_t) + 1);

	if (p != NULL && n != 0)
		memcpy(p, ids, n * sizeof(uint32_t));
	return p;
}

/* Lay what the command line gave over c. */
static void apply_cli(struct config *c, const struct config *cli, struct origin *o)
{
#define TAKE(field, key, unset) \
	if (cli->field != (unset)) { c->field = cli->field; o->line[key] = -1; }
	if (cli->dir != NULL) {
		free((char *)c->dir);
		c->dir = strdup(cli->dir);
		o->line[K_DIR] = -1;
	}
	if (cli->socket != NULL) {
		free((char *)c->socket);
		c->socket = strdup(cli->socket);
		o->line[K_SOCKET] = -1;
	}
	if (cli->metrics_file != NULL) {
		free((char *)c->metrics_file);
		c->metrics_file = strdup(cli->metrics_file);
		o->line[K_METRICS_FILE] = -1;
	}
	TAKE(max_bytes, K_MAX_BYTES, UNSET_SIZE)
	TAKE(segment_bytes, K_SEGMENT_BYTES, UNSET_SIZE)
	TAKE(keep_free, K_KEEP_FREE, UNSET_SIZE)
	TAKE(drain_ms, K_DRAIN_MS, UNSET_UINT)
	TAKE(force_pwrite, K_PWRITE, -1)
	TAKE(hello_timeout_ms, K_HELLO_TIMEOUT, UNSET_UINT)
	TAKE(max_clients, K_MAX_CLIENTS, UNSET_UINT)
	if (cli->sync != -1) {
		c->sync = cli->sync;
		c->sync_ms = cli->sync_ms;
		o->line[K_SYNC] = -1;
	}
	if (cli->allow_uids != NULL) {
		free(c->allow_uids);
		c->allow_uids = dup_ids(cli->allow_uids, cli->allow_uid_count);
		c->allow_uid_count = cli->allow_uid_count;
		o->line[K_ALLOW_UIDS] = -1;
	}
	if (cli->allow_gids != NULL) {
		free(c->allow_gids);
		c->allow_gids = dup_ids(cli->allow_gids, cli->allow_gid_count);
		c->allow_gid_count = cli->allow_gid_count;
		o->line[K_ALLOW_GIDS] = -1;
	}
#undef TAKE
}

/* "--max-bytes 1M", "max_bytes = 1M (/etc/xtcd.conf:3)" or "max_bytes =
 * 1G (the default)": a size setting and where it came from. */
static const char *origin_text(const struct origin *o, int k, const char *flag, uint64_t v,
                               char *buf, size_t len)
{
	char size[32];

	conf_size_text(v, size, sizeof size);
	if (o->line[k] < 0)
		snprintf(buf, len, "%s %s", flag, size);
	else if (o->line[k] > 0)
		snprintf(buf, len, "%s = %s (%s:%d)", keys[k].name, size, o->file, o->line[k]);
	else
		snprintf(buf, len, "%s = %s (the default)", keys[k].name, size);
	return buf;
}

int conf_build(struct config *out, const char *path, const struct config *cli, int daemon,
               char *err, size_t errlen)
{
	struct origin o = { 0 };
	char a[160], b[160];

	set_defaults(out);
	if (read_file(out, path != NULL ? path : conf_default_path(), path != NULL, &o, err, errlen) < 0)
		goto fail;
	apply_cli(out, cli, &o);
	if ((out->dir == NULL && cli->dir != NULL) || (out->socket == NULL) ||
	    (cli->allow_uids != NULL && out->allow_uids == NULL) ||
	    (cli->allow_gids != NULL && out->allow_gids == NULL)) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (daemon && out->dir == NULL) {
		snprintf(err, errlen, "--dir is required to run the daemon: give --dir DIR or set dir in "
		         "%s; see xtcd --help", path != NULL ? path : conf_default_path());
		goto fail;
	}
	if (out->max_bytes < 2 * out->segment_bytes) {
		snprintf(err, errlen, "%s must be at least twice %s (one segment being written, one or "
		         "more kept)",
		         origin_text(&o, K_MAX_BYTES, "--max-bytes", out->max_bytes, a, sizeof a),
		         origin_text(&o, K_SEGMENT_BYTES, "--segment-bytes", out->segment_bytes, b, sizeof b));
		goto fail;
	}
	return 0;
fail:
	conf_free(out);
	return -1;
}

/* ---------------------------------------------------------------------
 * Using it
 */

int conf_peer_allowed(const struct config *c, uid_t uid, gid_t gid)
{
	if (uid == 0 || (c->allow_uids == NULL && c->allow_gids == NULL))
		return 1;
	for (size_t i = 0; c->allow_uids != NULL && i < c->allow_uid_count; i++)
		if (c->allow_uids[i] == uid)
			return 1;
	for (size_t i = 0; c->allow_gids != NULL && i < c->allow_gid_count; i++)
		if (c->allow_gids[i] == gid)
			return 1;
	return 0;
}

uint64_t conf_quota_for(const struct config *c, uid_t uid)
{
	for (size_t i = 0; i < c->quota_count; i++)
		if (c->quotas[i].uid == uid)
			return c->quotas[i].bytes;
	return c->quota;
}
