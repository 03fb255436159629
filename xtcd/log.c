/*
 * xtcd/log.c - levelled, whole-line logging to standard error.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "xtcd/log.h"

static const char *const level_names[] = {
	[XLOG_ERROR] = "error", [XLOG_WARNING] = "warning", [XLOG_INFO] = "info",
	[XLOG_DEBUG] = "debug",
};

/* Written by the event loop (SIGHUP), read by the worker thread too. */
static int level_in_force = XLOG_DEFAULT;

int xlog_enabled(enum xlog_level level)
{
	return (int)level <= __atomic_load_n(&level_in_force, __ATOMIC_RELAXED);
}

void xlog_set_level(enum xlog_level level)
{
	__atomic_store_n(&level_in_force, (int)level, __ATOMIC_RELAXED);
}

int xlog_level_parse(const char *name, enum xlog_level *out)
{
	for (size_t i = 0; i < sizeof level_names / sizeof level_names[0]; i++)
		if (strcmp(name, level_names[i]) == 0) {
			*out = (enum xlog_level)i;
			return 0;
		}
	return -1;
}

const char *xlog_level_name(enum xlog_level level)
{
	return (unsigned)level < sizeof level_names / sizeof level_names[0] ? level_names[level] : "?";
}

/* Debug lines say so; the others keep the text xtcd has always printed. */
void xlog_vat(enum xlog_level level, const char *fmt, va_list ap)
{
	int saved = errno;

	if (!xlog_enabled(level))
		return;
	flockfile(stderr); /* one whole line, also from the worker thread */
	fputs(level == XLOG_DEBUG ? "xtcd: debug: " : "xtcd: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	funlockfile(stderr);
	errno = saved;
}

#define XLOG_AT(name, level)                    \
	void name(const char *fmt, ...)         \
	{                                       \
		va_list ap;                     \
		va_start(ap, fmt);              \
		xlog_vat(level, fmt, ap);       \
		va_end(ap);                     \
	}

void xlog_at(enum xlog_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	xlog_vat(level, fmt, ap);
	va_end(ap);
}

XLOG_AT(xlog, XLOG_INFO)
XLOG_AT(xlog_error, XLOG_ERROR)
XLOG_AT(xlog_warn, XLOG_WARNING)
XLOG_AT(xlog_debug, XLOG_DEBUG)
