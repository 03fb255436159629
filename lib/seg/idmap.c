/*
 * lib/seg/idmap.c - 64-bit id to 64-bit value, O(1) (see idmap.h).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "lib/seg/idmap.h"

/* Spread an id over the table (ids are mostly consecutive). */
static size_t idmap_hash(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x;
}

/* The slot holding key, or the empty slot where it would go. */
static size_t idmap_probe(const struct idmap *m, uint64_t key)
{
	size_t mask = m->cap - 1, i = idmap_hash(key) & mask;

	while (m->used[i] && m->key[i] != key)
		i = (i + 1) & mask;
	return i;
}

int idmap_get(const struct idmap *m, uint64_t key, uint64_t *val)
{
	size_t i;

	if (m->cap == 0)
		return 0;
	i = idmap_probe(m, key);
	if (!m->used[i])
		return 0;
	if (val != NULL)
		*val = m->val[i];
	return 1;
}

static int idmap_grow(struct idmap *m)
{
	struct idmap nm = { .cap = m->cap ? m->cap * 2 : 64, .n = m->n };

	nm.key = malloc(nm.cap * sizeof *nm.key);
	nm.val = malloc(nm.cap * sizeof *nm.val);
	nm.used = calloc(nm.cap, 1);
	if (nm.key == NULL || nm.val == NULL || nm.used == NULL) {
		idmap_free(&nm);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->used[i]) {
			size_t k = idmap_probe(&nm, m->key[i]);

			nm.used[k] = 1;
			nm.key[k] = m->key[i];
			nm.val[k] = m->val[i];
		}
	idmap_free(m);
	*m = nm;
	return 0;
}

int idmap_put(struct idmap *m, uint64_t key, uint64_t val)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap && idmap_grow(m) < 0)
		return -ENOMEM;
	i = idmap_probe(m, key);
	if (!m->used[i]) {
		m->used[i] = 1;
		m->key[i] = key;
		m->n++;
	}
	m->val[i] = val;
	return 0;
}

void idmap_del(struct idmap *m, uint64_t key)
{
	size_t mask, i, j;

	if (m->cap == 0)
		return;
	mask = m->cap - 1;
	i = idmap_probe(m, key);
	if (!m->used[i])
		return;
	m->used[i] = 0;
	m->n--;
	/* Shift back every entry after the hole that would no longer be
	 * found past it. */
	for (j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
		size_t home = idmap_hash(m->key[j]) & mask;

		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->used[i] = 1;
			m->key[i] = m->key[j];
			m->val[i] = m->val[j];
			m->used[j] = 0;
			i = j;
		}
	}
}

void idmap_free(struct idmap *m)
{
	free(m->key);
	free(m->val);
	free(m->used);
	*m = (struct idmap){ 0 };
}
