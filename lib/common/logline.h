/*
 * lib/common/logline.h - the recorder's and the adapters' one line on
 * stderr, "xtc_tail[PID]: ...", written with one write(2) so that lines
 * of several threads or processes never interleave.
 */
#ifndef XTC_LIB_LOGLINE_H
#define XTC_LIB_LOGLINE_H

#include <stdarg.h>

/* Format and write the line (cut to 510 bytes): no allocation and no
 * stdio buffer, so it may be called in a child after fork.  Keeps errno. */
void logline_v(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#endif /* XTC_LIB_LOGLINE_H */
