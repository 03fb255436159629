/*
 * xtcd/read/ship.h - xtcd --ship: every record of a segment directory into
 * ClickHouse over its HTTP interface, nothing lost and nothing doubled.
 *
 *   ship.c       the follower, the batches, the cursor, backing off
 *   ship_rows.c  the schema and one JSONEachRow line per record
 *   ship_http.c  POST to ClickHouse (libcurl)
 *
 * Every row carries a key that names its record for good (host, boot,
 * segment, block offset, index in the block): tables are ReplacingMergeTree
 * on that key, so a batch sent twice (the shipper died between ClickHouse's
 * answer and the cursor write) is one set of rows to FINAL and to exact
 * aggregates.  The cursor (segment, block offset) is written only after
 * ClickHouse acknowledged everything before it.
 */
#ifndef XTCD_READ_SHIP_H
#define XTCD_READ_SHIP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/seg/segread.h"

/* What --ship was asked for (xtcd/ship_opts.c fills it). */
struct ship_opts {
	const char *url;          /* ClickHouse HTTP, e.g. http://127.0.0.1:8123/?database=xtc */
	const char *dir;          /* the segment directory */
	const char *host;         /* host name shipped; NULL: each segment's own */
	const char *cursor;       /* cursor file; NULL: DIR/.xtcd-ship.cursor */
	const char *metrics_file; /* node-exporter textfile for the shipper; NULL: none */
	int         create;       /* --ship-create: create the tables first */
	uint32_t    batch_records;/* flush at this many rows (64k) */
	unsigned    batch_ms;     /* ... or when the oldest row is this old (1000) */
};

/* Run the shipper until SIGINT/SIGTERM; returns the exit code (0 stopped,
 * 2 bad usage or a directory that cannot be read). */
int xtcd_ship(const struct ship_opts *o);

/* ---- ship_rows.c ---- */

/* The tables, in the order --ship-create makes them. */
enum ship_table { SHIP_EVENTS = 0, SHIP_SESSIONS, SHIP_DROPS, SHIP_NTABLES };

/* The table's name, and its CREATE TABLE IF NOT EXISTS statement. */
const char *ship_table_name(enum ship_table t);
const char *ship_table_sql(enum ship_table t);

/* What names a row for good: the record's place in the directory. */
struct ship_key {
	const char *host;
	char        boot[33];     /* the session's boot id, hex */
	uint64_t    seg_ns;       /* the segment's creation time (a reused seq
	                           * after DIR was emptied is another segment) */
	uint64_t    seg;
	uint64_t    blk;          /* block offset */
	uint32_t    idx;          /* the item's index in its block */
};

/* The table item's row goes to, or -1 for items that are no row. */
int ship_row_table(const struct segread_item *it);

/* Write the row(s) for item it to out (one JSON object a line) and return
 * the table it belongs to, or -1 for items that are no row (segment begin
 * and end). */
int ship_row(FILE *out, const struct ship_key *k, const struct segread_item *it);

/* The row for segments first..last that the byte budget deleted before
 * they were shipped (the first from byte at; 0 for all of it), noticed at
 * a segment created at real_ns. */
void ship_row_unshipped(FILE *out, const char *host, uint64_t first, uint64_t last,
                        uint64_t at, uint64_t real_ns);

/* ---- ship_http.c ---- */

struct ship_http;

/* A connection to base_url (kept alive between requests).  0 or -errno. */
int  ship_http_open(struct ship_http **hp, const char *base_url);
void ship_http_close(struct ship_http *h);

/* POST body to the URL with query=sql added.  Returns 0 on HTTP 200;
 * otherwise -1 with one line of why in err (the connection's error, or
 * the status and the first line ClickHouse answered). */
int  ship_http_post(struct ship_http *h, const char *sql, const char *body, size_t len,
                    char *err, size_t errlen);

/* Whether this build has an HTTP client (libcurl). */
int  ship_http_available(void);

#endif /* XTCD_READ_SHIP_H */
