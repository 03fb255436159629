/*
 * xtcd/settings.h - the settings table: one row per setting of the daemon,
 * read by the configuration file (conf.c), the command line (main.c) and
 * --help alike, so that a key and its flag take the same values and say
 * the same when one is wrong.  A new setting is a new row in settings.c
 * (and a field in struct config).
 */
#ifndef XTCD_SETTINGS_H
#define XTCD_SETTINGS_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "xtcd/xtcd.h"

/* What a value is, and so how it is parsed, checked and printed. */
enum setting_type {
	SETTING_PATH,       /* a path; a relative one is taken from the working directory */
	SETTING_SIZE,       /* bytes, with K, M, G or T: min..max */
	SETTING_UINT,       /* a whole number: min..max */
	SETTING_BOOL,       /* yes/no, true/false, on/off, 1/0 */
	SETTING_SYNC,       /* never, rotate, or a period in ms (min..max) */
	SETTING_UIDS,       /* user names or uids, comma-separated, or any */
	SETTING_GIDS,       /* group names or gids, comma-separated, or any */
	SETTING_LEVEL,      /* a log level: error, warning, info, debug */
	SETTING_QUOTA_UID,  /* the quota.UID keys: a size or none for one uid */
	SETTING_URL,        /* an http:// or https:// URL */
	SETTING_NAME,       /* a word of 1..max bytes, no blanks */
	SETTING_PROM,       /* a path ending in .prom (node-exporter reads only those) */
};

/* Row flags. */
#define SETTING_RESTART 0x1u  /* SIGHUP keeps the value in force: needs a restart */
#define SETTING_NONE    0x2u  /* "none" is a value too (NULL, or CONF_NO_QUOTA) */
#define SETTING_AUTO    0x4u  /* "auto" is a value too (stored as 0) */
#define SETTING_SHIP    0x8u  /* read by xtcd --ship only; the daemon ignores it */

struct setting {
	const char *key;        /* in xtcd.conf; "quota." for the quota.UID keys */
	const char *flag;       /* the long option without "--"; NULL: the file only */
	char        short_flag; /* 'd', or 0 */
	enum setting_type type;
	unsigned    flags;      /* SETTING_* */
	uint64_t    min, max;   /* the range (a path: its longest length, 0: any) */
	const char *def;        /* the default, written as a value; NULL: none */
	size_t      off;        /* the field of struct config */
	size_t      off2;       /* a list's count, sync's period */
	const char *example;    /* a size's examples, a number's unit, a path's noun */
	const char *arg;        /* --help's name for the value */
	const char *help;       /* --help's text */
};

extern const struct setting settings_table[];
extern const size_t settings_count;

#define SETTINGS_MAX 32

/* The flags given on the command line, as given, kept so that a reload
 * lays the same flags over the new file. */
struct settings_cli {
	char *value[SETTINGS_MAX];  /* by row; NULL: not given */
};

/* The row of key (quota.alice: the quota.UID row), or NULL. */
const struct setting *settings_find_key(const char *key);

/* Put the default of every setting into c (which must be zeroed). */
void settings_defaults(struct config *c);

/* Parse value into the setting's field(s) of c.  said is how the user
 * wrote it ("max_bytes = 12Q", "--max-bytes 12Q"); name the key as
 * written (quota.alice).  Returns 0, or -1 with one line in why: said,
 * what is wrong, the accepted form. */
int  settings_apply(const struct setting *s, const char *name, const char *value,
                    const char *said, struct config *c, char *why, size_t len);

/* The form a setting's value takes, as messages say it. */
const char *settings_form(const struct setting *s, char *buf, size_t len);

/* A setting's value in c, written as it would be in the file. */
const char *settings_format(const struct setting *s, const struct config *c, char *buf,
                            size_t len);

/* "key=value" (quota.UID: "quota.1000=1G ...", or "" when none). */
const char *settings_describe(const struct setting *s, const struct config *c, char *buf,
                              size_t len);
/* Every setting but the rows with a flag in skip, "key=value ...". */
const char *settings_describe_all(const struct config *c, unsigned skip, char *buf, size_t len);

/* Free what c's fields own, by the table. */
void settings_free(struct config *c);

/* Keep the old value of a SETTING_RESTART row in next (swap: old is
 * freed by the caller). */
void settings_keep(const struct setting *s, struct config *old, struct config *next);

/* "dir, socket, ..., quota.UID": every key, for the unknown-key message. */
const char *settings_keys_text(void);

/* ---- the command line ---- */

/* Append a long option for every row with a flag to opts (val = base +
 * row), return how many; opts must hold settings_count more. */
size_t settings_long_options(struct option *opts, int base);
/* "d:s:v": the short flags. */
const char *settings_short_options(void);
/* The flag of a row that may go bare when arg is it ("--verbose", "-v"),
 * or NULL: for the hint that its value goes after '='. */
const char *settings_bare_flag(const char *arg);
/* The row of a short flag, or -1. */
int  settings_by_short(int c);
/* Take one flag of row `row` (value NULL: given bare, such as --pwrite or
 * -v) into cli, checked now.  Returns 0, or -1 with one line in err. */
int  settings_flag(struct settings_cli *cli, size_t row, const char *value, char *err,
                   size_t len);
void settings_cli_free(struct settings_cli *cli);
/* How the flag was written: "--max-bytes 12Q", "--pwrite=maybe". */
const char *settings_flag_said(const struct setting *s, const char *value, char *buf,
                               size_t len);
/* The flag spelled like the unknown name (--max_bytes: --max-bytes), or
 * NULL. */
const char *settings_suggest_flag(const char *name);

/* Print the options of --help, from the table: the daemon's rows, or
 * (ship) the SETTING_SHIP ones. */
void settings_help(FILE *f, int ship);

/* "64M" -> 67108864.  K, M, G, T suffixes are powers of 1024, an optional
 * B or iB after them.  0, or -EINVAL. */
int  parse_size(const char *s, uint64_t *out);

#endif /* XTCD_SETTINGS_H */
