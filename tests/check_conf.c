/*
 * tests/check_conf.c - xtcd's settings (xtcd/settings.c, xtcd/conf.c) and
 * its log levels (xtcd/log.c), without a daemon.
 *
 * The central check: for every setting with a flag, a value given as
 * "key = value" in a file and the same value given as "--flag value"
 * are accepted or refused alike, set the same, and are refused with the
 * same words (after the part that names the spelling).  The exact
 * messages are asserted too, so a change to one is seen here.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xtcd/conf.h"
#include "xtcd/holdoff.h"
#include "xtcd/settings.h"

static char tmpdir[] = "/tmp/check_conf.XXXXXX";
static char conf_path[64], empty_path[64];

static void tmp_setup(void)
{
	FILE *f;

	strcpy(tmpdir, "/tmp/check_conf.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(conf_path, sizeof conf_path, "%s/xtcd.conf", tmpdir);
	snprintf(empty_path, sizeof empty_path, "%s/empty.conf", tmpdir);
	f = fopen(empty_path, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
}

static void tmp_teardown(void)
{
	unlink(conf_path);
	unlink(empty_path);
	rmdir(tmpdir);
}

/* Write text as the file. */
static void write_conf(const char *text)
{
	FILE *f = fopen(conf_path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static size_t row_of(const char *key)
{
	const struct setting *s = settings_find_key(key);

	ck_assert_msg(s != NULL, "no row %s", key);
	return (size_t)(s - settings_table);
}

/* Build from "key = value" in the file.  0, or -1 with err. */
static int build_from_file(const char *key, const char *value, struct config *c, char *err,
                           size_t len)
{
	char line[512];

	snprintf(line, sizeof line, "# a comment\n%s = %s\n", key, value);
	write_conf(line);
	return conf_build(c, conf_path, NULL, 0, err, len);
}

/* Build from "--flag value" alone: the flag's check, then the merge. */
static int build_from_flag(const char *key, const char *value, struct config *c, char *err,
                           size_t len)
{
	struct settings_cli cli = { 0 };
	int r = settings_flag(&cli, row_of(key), value, err, len);

	if (r == 0)
		r = conf_build(c, empty_path, &cli, 0, err, len);
	settings_cli_free(&cli);
	return r;
}

/* ---- the two spellings ---- */

struct case_ {
	const char *key, *value;
	const char *why;    /* NULL: accepted; else the message after "SPELLING: " */
	const char *shown;  /* accepted: settings_format of the result, or NULL */
};

static const struct case_ cases[] = {
	{ "dir", "/var/lib/xtcd", NULL, "/var/lib/xtcd" },
	{ "socket", "/run/x.sock", NULL, "/run/x.sock" },
	{ "socket", "/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
	  "expected a path of at most 107 bytes", NULL },
	{ "max_bytes", "512M", NULL, "512M" },
	{ "max_bytes", "4GiB", NULL, "4G" },
	{ "max_bytes", "1099511627776", NULL, "1T" },
	{ "max_bytes", "12Q", "expected a size such as 512M or 4G", NULL },
	{ "max_bytes", "-1G", "expected a size such as 512M or 4G", NULL },
	{ "max_bytes", "2000000T", "expected a size such as 512M or 4G", NULL },
	{ "segment_bytes", "64K", NULL, "64K" },
	{ "segment_bytes", "4K", "expected a size of at least 64K, such as 64M", NULL },
	{ "keep_free", "0", NULL, "0" },
	{ "keep_free", "lots", "expected a size such as 1G, or 0", NULL },
	{ "drain_ms", "1", NULL, "1" },
	{ "drain_ms", "60000", NULL, "60000" },
	{ "drain_ms", "0", "expected a whole number of milliseconds from 1 to 60000", NULL },
	{ "drain_ms", "2s", "expected a whole number of milliseconds from 1 to 60000", NULL },
	{ "drain_ms", "5 ms", "expected a whole number of milliseconds from 1 to 60000", NULL },
	{ "priority_boost", "0", NULL, "0" },
	{ "priority_boost", "20", NULL, "20" },
	{ "priority_boost", "21", "expected a whole number from 0 to 20", NULL },
	{ "priority_boost", "-10", "expected a whole number from 0 to 20", NULL },
	{ "sync", "never", NULL, "never" },
	{ "sync", "rotate", NULL, "rotate" },
	{ "sync", "250", NULL, "250" },
	{ "sync", "often", "expected never, rotate, or a period in milliseconds from 1 to 3600000", NULL },
	{ "sync", "3600001", "expected never, rotate, or a period in milliseconds from 1 to 3600000", NULL },
	{ "pwrite", "yes", NULL, "yes" },
	{ "pwrite", "off", NULL, "no" },
	{ "pwrite", "maybe", "expected yes or no", NULL },
	{ "direct", "yes", NULL, "yes" },
	{ "direct", "off", NULL, "no" },
	{ "direct", "sometimes", "expected yes or no", NULL },
	{ "inline_max", "0", NULL, "0" },
	{ "inline_max", "128K", NULL, "128K" },
	{ "inline_max", "small", "expected a size such as 256K, or 0", NULL },
	{ "hello_timeout_ms", "1", NULL, "1" },
	{ "hello_timeout_ms", "600000", NULL, "600000" },
	{ "hello_timeout_ms", "0", "expected a whole number of milliseconds from 1 to 600000", NULL },
	{ "hello_timeout_ms", "600001", "expected a whole number of milliseconds from 1 to 600000", NULL },
	{ "max_clients", "100", NULL, "100" },
	{ "max_clients", "2000000", "expected a whole number from 1 to 1000000", NULL },
	{ "max_clients", "12abc", "expected a whole number from 1 to 1000000", NULL },
	{ "max_sessions_per_uid", "auto", NULL, "auto" },
	{ "max_sessions_per_uid", "8", NULL, "8" },
	{ "max_sessions_per_uid", "0", "expected a whole number from 1 to 1000000, or auto", NULL },
	{ "log_rate_burst", "0", NULL, "0" },
	{ "log_rate_burst", "100", NULL, "100" },
	{ "log_rate_burst", "1000001", "expected a whole number from 0 to 1000000", NULL },
	{ "log_rate_interval_ms", "30000", NULL, "30000" },
	{ "log_rate_interval_ms", "0", "expected a whole number of milliseconds from 1 to 3600000", NULL },
	{ "max_shm_per_uid", "auto", NULL, "auto" },
	{ "max_shm_per_uid", "4G", NULL, "4G" },
	{ "max_shm_per_uid", "512K", "expected a size of at least 1M, such as 4G, or auto", NULL },
	{ "max_shm_per_uid", "lots", "expected a size of at least 1M, such as 4G, or auto", NULL },
	{ "allow_uids", "0, root", NULL, "0,0" },
	{ "allow_uids", "any", NULL, "any" },
	{ "allow_uids", "1000,,1001", "expected user names or uids separated by commas, or any", NULL },
	{ "allow_uids", "no-such-user-xtc",
	  "'no-such-user-xtc' is neither a number nor a known user; expected user names or uids "
	  "separated by commas, or any", NULL },
	{ "allow_gids", "root,7", NULL, "0,7" },
	{ "allow_gids", "no-such-group-xtc",
	  "'no-such-group-xtc' is neither a number nor a known group; expected group names or gids "
	  "separated by commas, or any", NULL },
	{ "quota", "none", NULL, "none" },
	{ "quota", "256M", NULL, "256M" },
	{ "quota", "big", "expected a size such as 256M, or none", NULL },
	{ "log_level", "debug", NULL, "debug" },
	{ "log_level", "error", NULL, "error" },
	{ "log_level", "loud", "expected error, warning, info or debug", NULL },
	{ "metrics_file", "/run/xtcd/xtcd.prom", NULL, "/run/xtcd/xtcd.prom" },
	{ "metrics_file", "none", NULL, "none" },
	/* node-exporter reads *.prom only: another name would never be seen */
	{ "metrics_file", "/run/xtcd/metrics", "expected a file name ending in .prom, or none", NULL },
	{ "metrics_file", "/run/xtcd/.prom", "expected a file name ending in .prom, or none", NULL },
	{ "ship_create", "yes", NULL, "yes" },
	{ "ship_create", "maybe", "expected yes or no", NULL },
	{ "ship_host", "host-a", NULL, "host-a" },
	{ "ship_host", "none", NULL, "none" },
	{ "ship_host", "two words",
	  "expected a host name of 1 to 63 bytes without blanks or quotes, or none", NULL },
	{ "ship_host", "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh",
	  "expected a host name of 1 to 63 bytes without blanks or quotes, or none", NULL },
	{ "ship_cursor", "/var/lib/xtcd-ship/cursor", NULL, "/var/lib/xtcd-ship/cursor" },
	{ "ship_cursor", "none", NULL, "none" },
	{ "ship_batch", "1", NULL, "1" },
	{ "ship_batch", "1000000", NULL, "1000000" },
	{ "ship_batch", "0", "expected a whole number of rows from 1 to 1000000", NULL },
	{ "ship_batch", "64K", "expected a whole number of rows from 1 to 1000000", NULL },
	{ "ship_batch_ms", "200", NULL, "200" },
	{ "ship_batch_ms", "600001", "expected a whole number of milliseconds from 1 to 600000",
	  NULL },
	{ "ship_metrics", "/var/lib/node-exporter/xtcd-ship.prom", NULL,
	  "/var/lib/node-exporter/xtcd-ship.prom" },
	{ "ship_metrics", "/tmp/ship.txt", "expected a file name ending in .prom, or none", NULL },
};

/* Accepted or refused alike, with the same words after the spelling. */
START_TEST(test_key_and_flag_agree)
{
	const struct case_ *k = &cases[_i];
	const struct setting *s = &settings_table[row_of(k->key)];
	struct config a, b;
	char ea[1024] = "", eb[1024] = "", want[1200], va[256], vb[256];
	int ra = build_from_file(k->key, k->value, &a, ea, sizeof ea);
	int rb = build_from_flag(k->key, k->value, &b, eb, sizeof eb);

	ck_assert_ptr_nonnull(s->flag);
	if (k->why == NULL) {
		ck_assert_msg(ra == 0, "%s = %s refused: %s", k->key, k->value, ea);
		ck_assert_msg(rb == 0, "--%s %s refused: %s", s->flag, k->value, eb);
		settings_format(s, &a, va, sizeof va);
		settings_format(s, &b, vb, sizeof vb);
		ck_assert_str_eq(va, vb);
		if (k->shown)
			ck_assert_str_eq(va, k->shown);
		conf_free(&a);
		conf_free(&b);
		return;
	}
	ck_assert_msg(ra < 0, "%s = %s accepted", k->key, k->value);
	ck_assert_msg(rb < 0, "--%s %s accepted", s->flag, k->value);
	snprintf(want, sizeof want, "%s:2: %s = %s: %s", conf_path, k->key, k->value, k->why);
	ck_assert_str_eq(ea, want);
	/* a flag that may go bare takes its value after '=' (--pwrite=no) */
	snprintf(want, sizeof want, "--%s%s%s: %s; see xtcd --help", s->flag,
	         s->type == SETTING_BOOL || s->type == SETTING_LEVEL ? "=" : " ", k->value, k->why);
	ck_assert_str_eq(eb, want);
}
END_TEST

/* Every row with a flag is covered by the cases above, good and bad. */
START_TEST(test_every_flag_has_cases)
{
	for (size_t i = 0; i < settings_count; i++) {
		const struct setting *s = &settings_table[i];
		int good = 0, bad = 0;

		if (s->flag == NULL)
			continue;
		for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
			if (strcmp(cases[c].key, s->key) == 0)
				cases[c].why ? bad++ : good++;
		ck_assert_msg(good > 0, "no accepted value tested for %s", s->key);
		ck_assert_msg(bad > 0 || s->type == SETTING_PATH,
		              "no refused value tested for %s", s->key);
	}
}
END_TEST

/* ---- defaults, ranges, forms ---- */

START_TEST(test_defaults)
{
	struct config c;
	char err[512];

	ck_assert_int_eq(conf_build(&c, empty_path, NULL, 0, err, sizeof err), 0);
	ck_assert_ptr_null(c.dir);
	ck_assert_str_eq(c.socket, "/run/xtcd/xtcd.sock");
	ck_assert_uint_eq(c.max_bytes, 1ULL << 30);
	ck_assert_uint_eq(c.segment_bytes, 64ULL << 20);
	ck_assert_uint_eq(c.keep_free, 0);
	ck_assert_uint_eq(c.drain_ms, 20);
	ck_assert_uint_eq(c.priority_boost, 10);
	ck_assert_int_eq(c.sync, SYNC_ROTATE);
	ck_assert_int_eq(c.force_pwrite, 0);
	ck_assert_uint_eq(c.hello_timeout_ms, 5000);
	ck_assert_uint_eq(c.max_clients, 4096);
	ck_assert_uint_eq(c.max_sessions_per_uid, 0);
	ck_assert_uint_eq(conf_max_sessions_per_uid(&c), 2048);
	ck_assert_ptr_null(c.allow_uids);
	ck_assert_ptr_null(c.allow_gids);
	ck_assert_uint_eq(c.quota, CONF_NO_QUOTA);
	ck_assert_uint_eq(c.quota_count, 0);
	ck_assert_int_eq(c.log_level, XLOG_INFO);
	ck_assert_ptr_null(c.metrics_file);
	ck_assert_ptr_null(c.ship_url);
	ck_assert_int_eq(c.ship_create, 0);
	ck_assert_ptr_null(c.ship_host);
	ck_assert_ptr_null(c.ship_cursor);
	ck_assert_uint_eq(c.ship_batch, 65536);
	ck_assert_uint_eq(c.ship_batch_ms, 1000);
	ck_assert_ptr_null(c.ship_metrics);
	conf_free(&c);
}
END_TEST

/* Every default is a value its own parser takes. */
START_TEST(test_every_default_parses)
{
	for (size_t i = 0; i < settings_count; i++) {
		const struct setting *s = &settings_table[i];
		struct config c = { 0 };
		char why[512];

		if (s->def != NULL)
			ck_assert_msg(settings_apply(s, s->key, s->def, s->key, &c, why, sizeof why) == 0,
			              "%s's default %s: %s", s->key, s->def, why);
		settings_free(&c);
	}
}
END_TEST

/* The range of hello_timeout_ms is written once, in its row: the message
 * and --help say what the row says. */
START_TEST(test_range_written_once)
{
	const struct setting *s = settings_find_key("hello_timeout_ms");
	char form[160], *help = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&help, &len);

	ck_assert_uint_eq(s->min, 1);
	ck_assert_uint_eq(s->max, 600000);
	settings_form(s, form, sizeof form);
	ck_assert_str_eq(form, "a whole number of milliseconds from 1 to 600000");
	settings_help(f, 0);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(help, "--hello-timeout-ms N drop a client that sends no hello "
	                                   "in N ms\n                           (1 to 600000, "
	                                   "default 5000)\n"));
	free(help);
}
END_TEST

/* --help lists every flag of the table, with its default. */
START_TEST(test_help_lists_every_flag)
{
	char *help = NULL, want[64];
	size_t len = 0;
	FILE *f = open_memstream(&help, &len);

	settings_help(f, 0);
	settings_help(f, 1);
	fclose(f);
	for (size_t i = 0; i < settings_count; i++) {
		if (settings_table[i].flag == NULL)
			continue;
		snprintf(want, sizeof want, "--%s", settings_table[i].flag);
		ck_assert_msg(strstr(help, want) != NULL, "--help lacks %s", want);
	}
	ck_assert_ptr_nonnull(strstr(help, "  -d, --dir DIR  "));
	ck_assert_ptr_nonnull(strstr(help, "  -v, --verbose[=LEVEL]  "));
	ck_assert_ptr_nonnull(strstr(help, "(default 1G)"));
	for (char *p = help, *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1)
		ck_assert_msg(nl - p <= 80, "a --help line of %d columns", (int)(nl - p));
	free(help);
}
END_TEST

START_TEST(test_parse_size)
{
	static const struct { const char *s; uint64_t v; } good[] = {
		{ "0", 0 }, { "1", 1 }, { "64K", 65536 }, { "64k", 65536 }, { "1M", 1 << 20 },
		{ "1MB", 1 << 20 }, { "1MiB", 1 << 20 }, { "3G", 3ULL << 30 }, { "2T", 2ULL << 40 },
		{ "100B", 100 }, { "16777215T", 16777215ULL << 40 },
	};
	static const char *const bad[] = {
		"", "K", "-1", "+1", " 1", "1 ", "1X", "1KK", "1KiBB", "1.5G", "16777216T",
		"99999999999999999999",
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		ck_assert_msg(parse_size(good[i].s, &v) == 0, "%s refused", good[i].s);
		ck_assert_uint_eq(v, good[i].v);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(parse_size(bad[i], &v) == -EINVAL, "'%s' accepted", bad[i]);
	ck_assert_int_eq(parse_size(NULL, &v), -EINVAL);
}
END_TEST

START_TEST(test_size_text)
{
	char buf[32];

	ck_assert_str_eq(conf_size_text(0, buf, sizeof buf), "0");
	ck_assert_str_eq(conf_size_text(1000, buf, sizeof buf), "1000");
	ck_assert_str_eq(conf_size_text(65536, buf, sizeof buf), "64K");
	ck_assert_str_eq(conf_size_text(3ULL << 30, buf, sizeof buf), "3G");
	ck_assert_str_eq(conf_size_text(1ULL << 50, buf, sizeof buf), "1024T");
	ck_assert_str_eq(conf_size_text(CONF_NO_QUOTA, buf, sizeof buf), "none");
}
END_TEST

/* ---- the file ---- */

/* Each kind of bad line: FILE:LINE and what is wrong. */
START_TEST(test_file_errors)
{
	static const struct { const char *text, *msg; } bad[] = {
		{ "colour = red\n", ":1: unknown key 'colour'; expected one of dir, socket, max_bytes, "
		  "segment_bytes, keep_free, drain_ms, priority_boost, sync, pwrite, direct, inline_max, hello_timeout_ms, max_clients, "
		  "max_sessions_per_uid, max_shm_per_uid, allow_uids, allow_gids, quota, quota.UID, log_level, "
		  "log_rate_burst, log_rate_interval_ms, "
		  "metrics_file, ship, ship_create, ship_host, ship_cursor, ship_batch, ship_batch_ms, "
		  "ship_metrics" },
		{ "max-bytes = 1G\n", ":1: unknown key 'max-bytes'; did you mean max_bytes?" },
		{ "just words\n", ":1: 'just words' is not a setting; expected key = value, or a # comment" },
		{ "drain_ms = 20\n\ndrain_ms = 30\n", ":3: drain_ms is set twice (first on line 1); keep one" },
		{ "keep_free =\n", ":1: keep_free has no value; expected keep_free = a size such as 1G, or 0" },
		{ "quota.7 = 1G\nquota.7 = 2G\n", ":2: quota.7 names uid 7, which an earlier quota line names too" },
		{ "quota.no-such-user-xtc = 1G\n", ":1: quota.no-such-user-xtc = 1G: 'no-such-user-xtc' is "
		  "neither a number nor a known user; expected quota.UID = SIZE, UID a user name or uid, "
		  "SIZE such as 1G or none" },
		{ "quota.1000 = 1Z\n", ":1: quota.1000 = 1Z: expected quota.UID = SIZE, UID a user name "
		  "or uid, SIZE such as 1G or none" },
		{ "quota. = 1G\n", ":1: unknown key 'quota.'; expected one of dir" },
	};
	struct config c;
	char err[1024], want[1024];

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		write_conf(bad[i].text);
		ck_assert_msg(conf_build(&c, conf_path, NULL, 0, err, sizeof err) == -1, "%s accepted",
		              bad[i].text);
		snprintf(want, sizeof want, "%s%s", conf_path, bad[i].msg);
		ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "got '%s', expected '%s'", err, want);
	}
}
END_TEST

/* Comments, blanks, a comment after a value, a '#' inside one. */
START_TEST(test_file_format)
{
	struct config c;
	char err[512];

	write_conf("\n   # indented comment\n\tmax_bytes\t=\t2G   # two\r\n"
	           "metrics_file = /run/a#b.prom\nquota.root = 1G\nquota.7 = none\n");
	ck_assert_int_eq(conf_build(&c, conf_path, NULL, 0, err, sizeof err), 0);
	ck_assert_uint_eq(c.max_bytes, 2ULL << 30);
	ck_assert_str_eq(c.metrics_file, "/run/a#b.prom");
	ck_assert_uint_eq(c.quota_count, 2);
	ck_assert_uint_eq(conf_quota_for(&c, 0), 1ULL << 30);
	ck_assert_uint_eq(conf_quota_for(&c, 7), CONF_NO_QUOTA);
	ck_assert_uint_eq(conf_quota_for(&c, 8), CONF_NO_QUOTA);
	conf_free(&c);
}
END_TEST

/* A file an editor saved with a UTF-8 byte order mark: the mark is not
 * part of the first key, and only at the file's start is it skipped. */
START_TEST(test_file_bom)
{
	struct config c;
	char err[512];

	write_conf("\xef\xbb\xbfmax_bytes = 2G\n");
	ck_assert_int_eq(conf_build(&c, conf_path, NULL, 0, err, sizeof err), 0);
	ck_assert_uint_eq(c.max_bytes, 2ULL << 30);
	conf_free(&c);
	write_conf("max_bytes = 2G\n\xef\xbb\xbfmax_clients = 3\n");
	ck_assert_int_eq(conf_build(&c, conf_path, NULL, 0, err, sizeof err), -1);
	ck_assert_msg(strstr(err, ":2:") != NULL, "%s", err);
}
END_TEST

START_TEST(test_missing_files)
{
	struct config c;
	char err[512], path[128];

	snprintf(path, sizeof path, "%s/no-such.conf", tmpdir);
	ck_assert_int_eq(conf_build(&c, path, NULL, 0, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "no-such.conf: No such file or directory; give --config "
	                                  "an existing file"));
}
END_TEST

/* ---- the merge ---- */

/* Flags win over the file; the budget check names where each came from. */
START_TEST(test_flags_win_and_origins)
{
	struct settings_cli cli = { 0 };
	struct config c;
	char err[1024], want[1024];

	write_conf("max_bytes = 512M\ndrain_ms = 50\n");
	ck_assert_int_eq(settings_flag(&cli, row_of("drain_ms"), "30", err, sizeof err), 0);
	ck_assert_int_eq(conf_build(&c, conf_path, &cli, 0, err, sizeof err), 0);
	ck_assert_uint_eq(c.drain_ms, 30);
	ck_assert_uint_eq(c.max_bytes, 512ULL << 20);
	conf_free(&c);

	write_conf("max_bytes = 1M\n");
	ck_assert_int_eq(conf_build(&c, conf_path, &cli, 0, err, sizeof err), -1);
	snprintf(want, sizeof want, "max_bytes = 1M (%s:1) must be at least twice segment_bytes = "
	         "64M (the default) (one segment being written, one or more kept)", conf_path);
	ck_assert_str_eq(err, want);
	ck_assert_int_eq(settings_flag(&cli, row_of("segment_bytes"), "1M", err, sizeof err), 0);
	ck_assert_int_eq(conf_build(&c, conf_path, &cli, 0, err, sizeof err), -1);
	snprintf(want, sizeof want, "max_bytes = 1M (%s:1) must be at least twice --segment-bytes "
	         "1M (one segment being written, one or more kept)", conf_path);
	ck_assert_str_eq(err, want);
	settings_cli_free(&cli);
}
END_TEST

START_TEST(test_daemon_needs_dir)
{
	struct config c;
	char err[1024], want[1024];

	ck_assert_int_eq(conf_build(&c, empty_path, NULL, 1, err, sizeof err), -1);
	snprintf(want, sizeof want, "--dir is required to run the daemon: give --dir DIR or set dir "
	         "in %s; see xtcd --help", empty_path);
	ck_assert_str_eq(err, want);
}
END_TEST

/* A relative path is made absolute against the working directory. */
START_TEST(test_relative_path)
{
	struct config c;
	char err[512], cwd[4096], want[4200];

	ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
	snprintf(want, sizeof want, "%s/segs", cwd);
	ck_assert_int_eq(build_from_file("dir", "segs", &c, err, sizeof err), 0);
	ck_assert_str_eq(c.dir, want);
	conf_free(&c);
	ck_assert_int_eq(build_from_flag("dir", "segs", &c, err, sizeof err), 0);
	ck_assert_str_eq(c.dir, want);
	conf_free(&c);
}
END_TEST

/* ---- the command line ---- */

/* A repeated list flag adds; a repeated value flag replaces. */
START_TEST(test_repeated_flags)
{
	struct settings_cli cli = { 0 };
	struct config c;
	char err[512];

	ck_assert_int_eq(settings_flag(&cli, row_of("allow_uids"), "1,2", err, sizeof err), 0);
	ck_assert_int_eq(settings_flag(&cli, row_of("allow_uids"), "root", err, sizeof err), 0);
	ck_assert_int_eq(settings_flag(&cli, row_of("drain_ms"), "5", err, sizeof err), 0);
	ck_assert_int_eq(settings_flag(&cli, row_of("drain_ms"), "6", err, sizeof err), 0);
	ck_assert_int_eq(settings_flag(&cli, row_of("allow_uids"), "x-no-such", err, sizeof err), -1);
	ck_assert_str_eq(err, "--allow-uid x-no-such: 'x-no-such' is neither a number nor a known "
	                      "user; expected user names or uids separated by commas, or any; see "
	                      "xtcd --help");
	ck_assert_int_eq(conf_build(&c, empty_path, &cli, 0, err, sizeof err), 0);
	ck_assert_uint_eq(c.allow_uid_count, 3);
	ck_assert_uint_eq(c.allow_uids[0], 1);
	ck_assert_uint_eq(c.allow_uids[2], 0);
	ck_assert_uint_eq(c.drain_ms, 6);
	ck_assert(conf_peer_allowed(&c, 2, 99));
	ck_assert(!conf_peer_allowed(&c, 3, 99));
	ck_assert(conf_peer_allowed(&c, 0, 99));
	conf_free(&c);
	settings_cli_free(&cli);
}
END_TEST

/* --pwrite alone is yes; -v alone is one level more, up to debug. */
START_TEST(test_bare_flags)
{
	struct settings_cli cli = { 0 };
	struct config c;
	char err[512];

	ck_assert_int_eq(settings_flag(&cli, row_of("pwrite"), NULL, err, sizeof err), 0);
	ck_assert_str_eq(cli.value[row_of("pwrite")], "yes");
	ck_assert_int_eq(settings_flag(&cli, row_of("log_level"), NULL, err, sizeof err), 0);
	ck_assert_str_eq(cli.value[row_of("log_level")], "debug");
	ck_assert_int_eq(settings_flag(&cli, row_of("log_level"), NULL, err, sizeof err), 0);
	ck_assert_str_eq(cli.value[row_of("log_level")], "debug");
	ck_assert_int_eq(settings_flag(&cli, row_of("log_level"), "error", err, sizeof err), 0);
	ck_assert_int_eq(settings_flag(&cli, row_of("log_level"), NULL, err, sizeof err), 0);
	ck_assert_str_eq(cli.value[row_of("log_level")], "warning");
	ck_assert_int_eq(conf_build(&c, empty_path, &cli, 0, err, sizeof err), 0);
	ck_assert_int_eq(c.force_pwrite, 1);
	ck_assert_int_eq(c.log_level, XLOG_WARNING);
	conf_free(&c);
	settings_cli_free(&cli);
}
END_TEST

START_TEST(test_options)
{
	struct option opts[SETTINGS_MAX + 1] = { 0 };
	size_t n = settings_long_options(opts, 1000);
	int saw_verbose = 0;

	ck_assert_str_eq(settings_short_options(), "d:s:v");
	ck_assert_int_eq(settings_by_short('d'), (int)row_of("dir"));
	ck_assert_int_eq(settings_by_short('v'), (int)row_of("log_level"));
	ck_assert_int_eq(settings_by_short('x'), -1);
	for (size_t i = 0; i < n; i++) {
		const struct setting *s = &settings_table[opts[i].val - 1000];

		ck_assert_str_eq(opts[i].name, s->flag);
		if (strcmp(opts[i].name, "verbose") == 0) {
			ck_assert_int_eq(opts[i].has_arg, optional_argument);
			saw_verbose = 1;
		}
	}
	ck_assert(saw_verbose);
	ck_assert_str_eq(settings_suggest_flag("max_bytes"), "max-bytes");
	ck_assert_str_eq(settings_suggest_flag("allow_uids"), "allow-uid");
	ck_assert_ptr_null(settings_suggest_flag("colour"));
}
END_TEST

/* ship has no flag (its value is the argument after --ship): the file
 * alone, checked as a URL; the daemon's help leaves the shipper's rows
 * out, and the shipper's lists them. */
START_TEST(test_ship_rows)
{
	char *help = NULL;
	size_t len = 0;
	FILE *f;
	struct config c;
	char err[1024], want[1200];

	ck_assert_ptr_null(settings_find_key("ship")->flag);
	ck_assert_int_eq(build_from_file("ship", "http://127.0.0.1:8123/?database=xtc", &c, err,
	                                 sizeof err), 0);
	ck_assert_str_eq(c.ship_url, "http://127.0.0.1:8123/?database=xtc");
	conf_free(&c);
	ck_assert_int_eq(build_from_file("ship", "ftp://ch/", &c, err, sizeof err), -1);
	snprintf(want, sizeof want, "%s:2: ship = ftp://ch/: expected a ClickHouse HTTP URL such as "
	         "http://clickhouse:8123/?database=xtc, or none", conf_path);
	ck_assert_str_eq(err, want);
	for (size_t i = 0; i < settings_count; i++)
		if (strncmp(settings_table[i].key, "ship", 4) == 0)
			ck_assert_msg(settings_table[i].flags & SETTING_SHIP, "%s", settings_table[i].key);
	f = open_memstream(&help, &len);
	settings_help(f, 0);
	fclose(f);
	ck_assert_ptr_null(strstr(help, "--ship-"));
	ck_assert_ptr_nonnull(strstr(help, "--metrics-file PATH"));
	free(help);
	f = open_memstream(&help, &len);
	settings_help(f, 1);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(help, "      --ship-batch N       send when N rows wait "
	                                   "(1 to 1000000, default 65536)\n"));
	ck_assert_ptr_null(strstr(help, "--max-bytes"));
	free(help);
}
END_TEST

/* ---- using it ---- */

START_TEST(test_access_rule)
{
	struct config c;
	char err[512];

	ck_assert_int_eq(build_from_file("allow_gids", "42", &c, err, sizeof err), 0);
	ck_assert(conf_peer_allowed(&c, 1000, 42));
	ck_assert(!conf_peer_allowed(&c, 1000, 43));
	ck_assert(conf_peer_allowed(&c, 0, 43));
	conf_free(&c);
	ck_assert_int_eq(conf_build(&c, empty_path, NULL, 0, err, sizeof err), 0);
	ck_assert(conf_peer_allowed(&c, 1000, 43));
	conf_free(&c);
}
END_TEST

START_TEST(test_sessions_per_uid)
{
	struct config c = { .max_clients = 4096 };

	ck_assert_uint_eq(conf_max_sessions_per_uid(&c), 2048);
	c.max_clients = 1;
	ck_assert_uint_eq(conf_max_sessions_per_uid(&c), 1);
	c.max_clients = 3;
	ck_assert_uint_eq(conf_max_sessions_per_uid(&c), 1);
	c.max_sessions_per_uid = 10;
	ck_assert_uint_eq(conf_max_sessions_per_uid(&c), 10);
}
END_TEST

/* auto: half of physical memory; a value: itself. */
START_TEST(test_shm_per_uid)
{
	struct config c = { .max_shm_per_uid = 0 };
	uint64_t mem = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);

	ck_assert_uint_eq(conf_max_shm_per_uid(&c), mem / 2);
	c.max_shm_per_uid = 3ULL << 30;
	ck_assert_uint_eq(conf_max_shm_per_uid(&c), 3ULL << 30);
}
END_TEST

/* SIGHUP keeps a restart-only setting by swapping it back. */
START_TEST(test_keep_for_restart)
{
	struct config now = { 0 }, next = { 0 };

	now.dir = strdup("/old");
	next.dir = strdup("/new");
	now.force_pwrite = 0;
	next.force_pwrite = 1;
	settings_keep(settings_find_key("dir"), &now, &next);
	settings_keep(settings_find_key("pwrite"), &now, &next);
	ck_assert_str_eq(next.dir, "/old");
	ck_assert_str_eq(now.dir, "/new");
	ck_assert_int_eq(next.force_pwrite, 0);
	settings_free(&now);
	settings_free(&next);
	ck_assert(settings_find_key("dir")->flags & SETTING_RESTART);
	ck_assert(settings_find_key("socket")->flags & SETTING_RESTART);
	ck_assert(settings_find_key("pwrite")->flags & SETTING_RESTART);
	ck_assert(!(settings_find_key("max_bytes")->flags & SETTING_RESTART));
}
END_TEST

START_TEST(test_describe)
{
	struct config c;
	char err[512], buf[2048];

	write_conf("quota.7 = 1G\nquota.8 = none\nmax_bytes = 2G\n");
	ck_assert_int_eq(conf_build(&c, conf_path, NULL, 0, err, sizeof err), 0);
	settings_describe_all(&c, SETTING_RESTART, buf, sizeof buf);
	ck_assert_ptr_nonnull(strstr(buf, "max_bytes=2G segment_bytes=64M keep_free=0 drain_ms=20 "
	                                  "sync=rotate inline_max=256K hello_timeout_ms=5000"));
	ck_assert_ptr_nonnull(strstr(buf, " quota=none quota.7=1G quota.8=none log_level=info"));
	ck_assert_ptr_null(strstr(buf, "socket="));
	conf_free(&c);
}
END_TEST

/* ---- the log ---- */

START_TEST(test_log_levels)
{
	enum xlog_level l;

	ck_assert_int_eq(xlog_level_parse("error", &l), 0);
	ck_assert_int_eq(l, XLOG_ERROR);
	ck_assert_int_eq(xlog_level_parse("warning", &l), 0);
	ck_assert_int_eq(l, XLOG_WARNING);
	ck_assert_int_eq(xlog_level_parse("info", &l), 0);
	ck_assert_int_eq(xlog_level_parse("debug", &l), 0);
	ck_assert_int_eq(l, XLOG_DEBUG);
	ck_assert_int_eq(xlog_level_parse("DEBUG", &l), -1);
	ck_assert_int_eq(xlog_level_parse("trace", &l), -1);
	ck_assert_str_eq(xlog_level_name(XLOG_WARNING), "warning");
	/* the default lets through every line xlog() prints */
	ck_assert(xlog_enabled(XLOG_INFO));
	ck_assert(!xlog_enabled(XLOG_DEBUG));
	xlog_set_level(XLOG_ERROR);
	ck_assert(xlog_enabled(XLOG_ERROR));
	ck_assert(!xlog_enabled(XLOG_WARNING));
	xlog_set_level(XLOG_DEFAULT);
}
END_TEST

/* One whole line on stderr, "xtcd: " first, errno kept; debug says so. */
START_TEST(test_log_lines)
{
	char path[128], line[256];
	FILE *f;
	int saved = dup(2), fd;

	snprintf(path, sizeof path, "%s/log", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	dup2(fd, 2);
	errno = EAGAIN;
	xlog("one %d", 1);
	ck_assert_int_eq(errno, EAGAIN);
	xlog_debug("hidden");
	xlog_set_level(XLOG_DEBUG);
	xlog_debug("shown %s", "now");
	xlog_set_level(XLOG_ERROR);
	xlog("hidden too");
	xlog_error("bad");
	xlog_set_level(XLOG_DEFAULT);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(fd);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
	ck_assert_str_eq(line, "xtcd: one 1\n");
	ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
	ck_assert_str_eq(line, "xtcd: debug: shown now\n");
	ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
	ck_assert_str_eq(line, "xtcd: bad\n");
	ck_assert_ptr_null(fgets(line, sizeof line, f));
	fclose(f);
	unlink(path);
}
END_TEST

/* xtcd/holdoff.c, as store_write.c holds inline writes off: 1 s first,
 * doubling to 64 s; times in seconds here. */
#define S(x) ((uint64_t)(x) * 1000000000ull)

START_TEST(test_holdoff_doubles_to_cap)
{
	struct holdoff h = HOLDOFF_INIT(S(1), S(64));
	uint64_t t = S(100), want = S(1);

	ck_assert(!holdoff_held(&h, t));
	ck_assert_uint_eq(holdoff_note(&h, t, 0), 0); /* fast: nothing held */
	for (int i = 0; i < 9; i++) {
		uint64_t hold = holdoff_note(&h, t, 1);

		ck_assert_uint_eq(hold, want);
		ck_assert(holdoff_held(&h, t + hold - 1));
		ck_assert(!holdoff_held(&h, t + hold));
		t += hold; /* the next try is the probe at the hold's end */
		want = want * 2 < S(64) ? want * 2 : S(64);
	}
	ck_assert_uint_eq(want, S(64));
}
END_TEST

/* At the cap, a fast probe does not undo it: a disk that stays slow but
 * does not hold every write is held off a minute at a time, not from 1 s
 * again after each fast probe. */
START_TEST(test_holdoff_cap_survives_a_fast_probe)
{
	struct holdoff h;
	uint64_t t = S(100);

	holdoff_init(&h, S(1), S(64));
	for (int i = 0; i < 7; i++)
		t += holdoff_note(&h, t, 1); /* 1 2 4 8 16 32 64 */
	ck_assert_uint_eq(holdoff_note(&h, t, 0), 0);          /* fast, right at the end */
	ck_assert_uint_eq(holdoff_note(&h, t + S(10), 0), 0);  /* fast, 10 s on */
	ck_assert_uint_eq(holdoff_note(&h, t + S(30), 1), S(64)); /* slow again: a minute */
}
END_TEST

/* A cap's length of tries with none slow, counted from the end of the
 * last hold, brings it back to the first. */
START_TEST(test_holdoff_resets_after_a_quiet_cap)
{
	struct holdoff h = HOLDOFF_INIT(S(1), S(64));
	uint64_t t = S(100);

	for (int i = 0; i < 4; i++)
		t += holdoff_note(&h, t, 1); /* 1 2 4 8: next 16 */
	ck_assert_uint_eq(holdoff_note(&h, t + S(64), 0), 0);  /* not yet over 64 s */
	ck_assert_uint_eq(holdoff_note(&h, t + S(65), 1), S(16));
	t += S(65) + S(16);
	ck_assert_uint_eq(holdoff_note(&h, t + S(65), 0), 0);  /* 65 s quiet */
	ck_assert_uint_eq(holdoff_note(&h, t + S(66), 1), S(1));
}
END_TEST

/* A case of s whose tests each get a fresh temporary directory. */
static TCase *with_tmpdir(Suite *s, const char *name)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
	suite_add_tcase(s, tc);
	return tc;
}

static Suite *conf_suite(void)
{
	Suite *s = suite_create("conf");
	TCase *tc = with_tmpdir(s, "spellings");

	tcase_add_loop_test(tc, test_key_and_flag_agree, 0, (int)(sizeof cases / sizeof cases[0]));
	tcase_add_test(tc, test_every_flag_has_cases);
	tc = with_tmpdir(s, "values");
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_every_default_parses);
	tcase_add_test(tc, test_range_written_once);
	tcase_add_test(tc, test_help_lists_every_flag);
	tcase_add_test(tc, test_parse_size);
	tcase_add_test(tc, test_size_text);
	tc = with_tmpdir(s, "file");
	tcase_add_test(tc, test_file_errors);
	tcase_add_test(tc, test_file_format);
	tcase_add_test(tc, test_file_bom);
	tcase_add_test(tc, test_missing_files);
	tcase_add_test(tc, test_flags_win_and_origins);
	tcase_add_test(tc, test_daemon_needs_dir);
	tcase_add_test(tc, test_relative_path);
	tc = with_tmpdir(s, "command line");
	tcase_add_test(tc, test_repeated_flags);
	tcase_add_test(tc, test_bare_flags);
	tcase_add_test(tc, test_options);
	tcase_add_test(tc, test_ship_rows);
	tc = with_tmpdir(s, "use");
	tcase_add_test(tc, test_access_rule);
	tcase_add_test(tc, test_sessions_per_uid);
	tcase_add_test(tc, test_shm_per_uid);
	tcase_add_test(tc, test_keep_for_restart);
	tcase_add_test(tc, test_describe);
	tcase_add_test(tc, test_log_levels);
	tcase_add_test(tc, test_log_lines);
	tc = tcase_create("holdoff");
	tcase_add_test(tc, test_holdoff_doubles_to_cap);
	tcase_add_test(tc, test_holdoff_cap_survives_a_fast_probe);
	tcase_add_test(tc, test_holdoff_resets_after_a_quiet_cap);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(conf_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
