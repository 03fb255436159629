/*
 * xtcd/holdoff.h - a back-off for something tried again after it proved
 * slow: each slow try holds it off for a while, twice as long as the last
 * up to a cap; only a cap's length of tries without a slow one, counted
 * from the end of the last hold, brings the hold back to its first
 * length.  So a thing that stays slow is tried a few times early and
 * then once a cap at most, and one that recovers is back to short holds.
 * (store_write.c holds small inline writes off this way.)
 */
#ifndef XTCD_HOLDOFF_H
#define XTCD_HOLDOFF_H

#include <stdint.h>

struct holdoff {
	uint64_t until_ns;  /* held off until then; 0: never held */
	uint64_t hold_ns;   /* the next hold's length */
	uint64_t first_ns;  /* the first hold's */
	uint64_t max_ns;    /* the cap */
};

#define HOLDOFF_INIT(first, max) { .hold_ns = (first), .first_ns = (first), .max_ns = (max) }
void holdoff_init(struct holdoff *h, uint64_t first_ns, uint64_t max_ns);
/* Whether it is held off at now_ns. */
int holdoff_held(const struct holdoff *h, uint64_t now_ns);
/* A try that ended at end_ns, slow or not.  Returns the hold a slow try
 * starts (it runs from end_ns), 0 for a fast one. */
uint64_t holdoff_note(struct holdoff *h, uint64_t end_ns, int slow);

#endif
