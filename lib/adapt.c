/*
 * lib/adapt.c - the adapters' shared helpers (see adapt.h).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "lib/adapt.h"

uint64_t adapt_mult = (uint64_t)1 << 32;

void adapt_log(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	if (getenv("XTC_DEBUG") == NULL)
		return;
	n = snprintf(buf, sizeof buf, "xtc_tail[%d]: ", (int)getpid());
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof buf - 2)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	if (write(STDERR_FILENO, buf, (size_t)n) < 0) {
		/* nowhere left to say it */
	}
}
