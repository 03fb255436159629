/*
 * xtcd/conf.c - the configuration file and its merge with the command line.
 *
 * The file is "key = value" lines; blank lines and lines starting with #
 * are ignored, and so is " # ..." after a value.  Every key may appear once.
 * A bad line is reported as "FILE:LINE: what is wrong; expected FORM", one
 * line, and nothing of the file is used: at startup xtcd exits 2, on
 * SIGHUP it keeps the settings in force (main.c).
 *
 * What the keys are and what values they take is the settings table's
 * (settings.c).  Command-line flags win over the file: main.c keeps them
 * as given (struct settings_cli), and conf_build() lays them over the
 * defaults and the file each time, so a reload lays the same flags over
 * the new file.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xtcd/conf.h"
#include "xtcd/settings.h"

#ifndef XTCD_CONF_PATH
#define XTCD_CONF_PATH "/etc/xtcd.conf"
#endif

const char *conf_default_path(void)
{
	return XTCD_CONF_PATH;
}

/* Where each setting came from, for the messages of checks that involve
 * two of them. */
struct origin {
	const char *file;
	int line[SETTINGS_MAX];   /* 0: default; -1: command line */
};

void conf_free(struct config *c)
{
	settings_free(c);
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

/* "max-bytes" for "max_bytes": say what was meant. */
static void unknown_key(const char *name, char *why, size_t len)
{
	char fixed[64];
	size_t i;

	for (i = 0; name[i] != '\0' && i < sizeof fixed - 1; i++)
		fixed[i] = name[i] == '-' ? '_' : name[i];
	fixed[i] = '\0';
	if (strcmp(fixed, name) != 0 && settings_find_key(fixed) != NULL) {
		snprintf(why, len, "unknown key '%s'; did you mean %s?", name, fixed);
		return;
	}
	snprintf(why, len, "unknown key '%s'; expected one of %s", name, settings_keys_text());
}

/* Cut "key = value # comment" into its key and value; NULL: no '='. */
static char *split_line(char *s, char **value)
{
	char *eq = strchr(s, '='), *hash;

	if (eq == NULL)
		return NULL;
	*eq = '\0';
	*value = eq + 1;
	for (hash = *value; (hash = strchr(hash, '#')) != NULL; hash++)
		if (hash > *value && (hash[-1] == ' ' || hash[-1] == '\t')) {
			*hash = '\0';
			break;
		}
	*value = trim(*value);
	return trim(s);
}

/* One line that is not blank or a comment into c.  0, or -1 with why. */
static int read_line(struct config *c, char *s, struct origin *o, int lineno, char *why,
                     size_t len)
{
	const struct setting *s_row;
	char *name, *value, said[512];
	size_t row;

	name = split_line(s, &value);
	if (name == NULL) {
		snprintf(why, len, "'%.64s' is not a setting; expected key = value, or a # comment", s);
		return -1;
	}
	s_row = settings_find_key(name);
	if (s_row == NULL) {
		unknown_key(name, why, len);
		return -1;
	}
	row = (size_t)(s_row - settings_table);
	if (s_row->type != SETTING_QUOTA_UID && o->line[row] > 0) {
		snprintf(why, len, "%s is set twice (first on line %d); keep one", name, o->line[row]);
		return -1;
	}
	if (*value == '\0') {
		char form[160];

		snprintf(why, len, "%s has no value; expected %s = %s", name, name,
		         settings_form(s_row, form, sizeof form));
		return -1;
	}
	snprintf(said, sizeof said, "%s = %s", name, value);
	if (settings_apply(s_row, name, value, said, c, why, len) < 0)
		return -1;
	o->line[row] = lineno;
	return 0;
}

/* Read the file into c.  Returns 0, or -1 with the message in err. */
static int read_file(struct config *c, const char *path, int must_exist, struct origin *o,
                     char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char *line = NULL, why[768];
	size_t cap = 0;
	int lineno = 0, rc = 0;

	if (f == NULL) {
		if (errno == ENOENT && !must_exist) {
			xlog_debug("%s: no such file; the defaults apply", path);
			return 0;
		}
		snprintf(err, errlen, "%s: %s%s", path, strerror(errno),
		         must_exist ? "; give --config an existing file" : "");
		return -1;
	}
	o->file = path;
	xlog_debug("reading %s", path);
	while (getline(&line, &cap, f) >= 0) {
		char *s = line;

		/* an editor's UTF-8 byte order mark is no part of the first key */
		if (lineno == 0 && memcmp(s, "\xef\xbb\xbf", 3) == 0)
			s += 3;
		s = trim(s);
		lineno++;
		if (*s == '\0' || *s == '#')
			continue;
		if (read_line(c, s, o, lineno, why, sizeof why) < 0) {
			snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
			rc = -1;
			break;
		}
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

/* Lay what the command line gave over c.  0, or -1 with why (a name
 * that no longer resolves at a reload). */
static int apply_cli(struct config *c, const struct settings_cli *cli, struct origin *o,
                     char *why, size_t len)
{
	for (size_t i = 0; i < settings_count; i++) {
		const struct setting *s = &settings_table[i];
		char said[512];

		if (cli == NULL || cli->value[i] == NULL)
			continue;
		settings_flag_said(s, cli->value[i], said, sizeof said);
		if (settings_apply(s, s->key, cli->value[i], said, c, why, len) < 0)
			return -1;
		o->line[i] = -1;
	}
	return 0;
}

/* "--max-bytes 1M", "max_bytes = 1M (/etc/xtcd.conf:3)" or "max_bytes =
 * 1G (the default)": a setting and where it came from. */
static const char *origin_text(const struct origin *o, const char *key, const struct config *c,
                               char *buf, size_t len)
{
	const struct setting *s = settings_find_key(key);
	size_t row = (size_t)(s - settings_table);
	char v[64];

	settings_format(s, c, v, sizeof v);
	if (o->line[row] < 0)
		settings_flag_said(s, v, buf, len);
	else if (o->line[row] > 0)
		snprintf(buf, len, "%s = %s (%s:%d)", s->key, v, o->file, o->line[row]);
	else
		snprintf(buf, len, "%s = %s (the default)", s->key, v);
	return buf;
}

int conf_build(struct config *out, const char *path, const struct settings_cli *cli, int daemon,
               char *err, size_t errlen)
{
	struct origin o = { 0 };
	char a[160], b[160];

	memset(out, 0, sizeof *out);
	settings_defaults(out);
	if (read_file(out, path != NULL ? path : conf_default_path(), path != NULL, &o, err, errlen) < 0)
		goto fail;
	if (apply_cli(out, cli, &o, err, errlen) < 0)
		goto fail;
	if (out->socket == NULL) {
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
		         "more kept)", origin_text(&o, "max_bytes", out, a, sizeof a),
		         origin_text(&o, "segment_bytes", out, b, sizeof b));
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

unsigned conf_max_sessions_per_uid(const struct config *c)
{
	if (c->max_sessions_per_uid != 0)
		return c->max_sessions_per_uid;
	return c->max_clients > 1 ? c->max_clients / 2 : 1;
}

/* Every byte of a client's segment can become a page xtcd itself
 * allocates (a read fault on a hole of a shmem file does, and is charged
 * to the process that faults): half of the memory is the most one uid
 * may make xtcd hold, leaving the rest to everyone else. */
uint64_t conf_max_shm_per_uid(const struct config *c)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

	if (c->max_shm_per_uid != 0)
		return c->max_shm_per_uid;
	if (pages <= 0 || page <= 0)
		return 1ULL << 30;
	return (uint64_t)pages * (uint64_t)page / 2;
}
