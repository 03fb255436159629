/*
 * xtcd/read/export_int.h - what the --export formats share: one read of a
 * segment directory through the filters, handing each item that passes to
 * the format.
 *
 *   export.c         reading, the mode, dial9 and xtcl
 *   export_chrome.c  Chrome trace event JSON
 *   export_ctf.c     CTF 1.8
 */
#ifndef XTCD_READ_EXPORT_INT_H
#define XTCD_READ_EXPORT_INT_H

#include <stdint.h>
#include <stdio.h>

#include "lib/seg/segread.h"
#include "xtcd/read/read.h"

#define EXPORT_NS_PER_S 1000000000ull

struct export;
typedef int (*export_item_fn)(struct export *x, const struct segread_item *it);

struct export {
	const struct read_opts *o;
	FILE   *out;
	struct segread *r;
	export_item_fn item;     /* gets each item that passes the filters */
	void   *fmt;             /* the format's own state */
	int     quiet;           /* a pre-pass: reader problems are not reported */
	int     out_err;         /* -errno of a failed write */
	int     fatal;           /* -errno that ended reading (-ENOMEM) */
	uint64_t seg_real;       /* time of the segment being read */
	uint64_t last_real;      /* time of the last item with one */
};

/* Read all of dir through the filters into x->item.  0, or 1 when
 * something was damaged (reported), or -errno (reported). */
int export_read(struct export *x, const char *dir);

/* --export chrome: 0, 1 (damaged) or -errno. */
int export_chrome(struct export *x, const char *dir, export_chains_fn chains);

/* --export ctf DIR OUT: 0, 1 (damaged) or -errno (reported). */
int export_ctf(struct export *x, const char *dir, const char *out_dir);

#endif /* XTCD_READ_EXPORT_INT_H */
