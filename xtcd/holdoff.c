/*
 * xtcd/holdoff.c - the back-off of holdoff.h.
 */
#include "xtcd/holdoff.h"

void holdoff_init(struct holdoff *h, uint64_t first_ns, uint64_t max_ns)
{
	*h = (struct holdoff)HOLDOFF_INIT(first_ns, max_ns);
}

int holdoff_held(const struct holdoff *h, uint64_t now_ns)
{
	return h->until_ns != 0 && now_ns < h->until_ns;
}

uint64_t holdoff_note(struct holdoff *h, uint64_t end_ns, int slow)
{
	uint64_t hold;

	if (!slow) {
		/* quiet for a cap since the last hold ended: tries made all
		 * that while, none slow */
		if (h->until_ns != 0 && end_ns - h->until_ns > h->max_ns)
			h->hold_ns = h->first_ns;
		return 0;
	}
	hold = h->hold_ns;
	h->until_ns = end_ns + hold;
	h->hold_ns = hold < h->max_ns / 2 ? hold * 2 : h->max_ns;
	return hold;
}
