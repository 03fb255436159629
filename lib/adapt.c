/*
 * lib/adapt.c - the adapters' shared helpers (see adapt.h).
 */
#include "config.h"

#include <stdarg.h>
#include <stdlib.h>

#include "lib/adapt.h"
#include "lib/common/logline.h"

uint64_t adapt_mult = (uint64_t)1 << 32;

void adapt_log(const char *fmt, ...)
{
	va_list ap;

	if (getenv("XTC_DEBUG") == NULL)
		return;
	va_start(ap, fmt);
	logline_v(fmt, ap);
	va_end(ap);
}
