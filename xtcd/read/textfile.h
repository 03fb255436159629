/*
 * xtcd/read/textfile.h - replace a small file whole: the shipper's cursor
 * and the node-exporter textfiles of xtcd and its shipper.  A reader (the
 * next shipper, node-exporter) sees the old contents or the new, never a
 * mix: the data goes to PATH.tmp.PID, which is renamed over PATH.
 */
#ifndef XTCD_READ_TEXTFILE_H
#define XTCD_READ_TEXTFILE_H

#include <stddef.h>

/* Write data[0..len) to path by rename.  With durable, the file is
 * fsync'ed before the rename and its directory after it, so the new
 * contents survive a crash once this returns.  0 or -errno. */
int textfile_replace(const char *path, const char *data, size_t len, int durable);

#endif /* XTCD_READ_TEXTFILE_H */
