/*
 * lib/common/logline.c - one line on stderr (logline.h).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "lib/common/logline.h"

void logline_v(const char *fmt, va_list ap)
{
	int saved = errno;
	char buf[512];
	int n;

	n = snprintf(buf, sizeof buf, "xtc_tail[%d]: ", (int)getpid());
	n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
	if (n > (int)sizeof buf - 2)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	if (write(STDERR_FILENO, buf, (size_t)n) < 0) {
		/* nowhere left to say it */
	}
	errno = saved;
}
