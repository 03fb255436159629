/*
 * lib/seg/idmap.h - a map from 64-bit ids (sessions, mostly) to 64-bit
 * values, in O(1) per operation.  Segments, and the daemon's live state,
 * can name hundreds of thousands of sessions that one local user created
 * at will: nothing that looks a session up by id may scan.
 *
 * Open addressing with linear probing, at most half full; removal shifts
 * the following entries back, so no tombstones build up.
 */
#ifndef XTC_IDMAP_H
#define XTC_IDMAP_H

#include <stddef.h>
#include <stdint.h>

struct idmap {
	uint64_t *key;
	uint64_t *val;
	uint8_t  *used;
	size_t    cap;    /* a power of two, or 0 */
	size_t    n;
};

/* Whether key is in m; its value in *val (when val is not NULL). */
int  idmap_get(const struct idmap *m, uint64_t key, uint64_t *val);
/* Set key's value, adding it if new: 0, or -ENOMEM (m unchanged). */
int  idmap_put(struct idmap *m, uint64_t key, uint64_t val);
/* Take key out of m, if it is there. */
void idmap_del(struct idmap *m, uint64_t key);
void idmap_free(struct idmap *m);

#endif /* XTC_IDMAP_H */
