/* keymap.c - see include/hybridfs/keymap.h. Deletion shifts back the keys
 * that probed past the deleted one, so no tombstones pile up over millions
 * of evictions. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/keymap.h"

int hy_keymap_init(struct hy_keymap *m, uint64_t slots, bool with_values)
{
	uint64_t n = 16;

	while (n < slots)
		n <<= 1;
	m->keys = malloc(n * sizeof(*m->keys));
	m->values = with_values ? malloc(n * sizeof(*m->values)) : NULL;
	if (!m->keys || (with_values && !m->values)) {
		free(m->keys);
		free(m->values);
		return -ENOMEM;
	}
	memset(m->keys, 0xff, n * sizeof(*m->keys));
	m->mask = n - 1;
	m->count = 0;
	return 0;
}

void hy_keymap_free(struct hy_keymap *m)
{
	free(m->keys);
	free(m->values);
}

uint64_t hy_keymap_slot(const struct hy_keymap *m, uint64_t key)
{
	uint64_t i = hy_keymap_mix(key) & m->mask;

	while (m->keys[i] != HY_KEYMAP_EMPTY && m->keys[i] != key)
		i = (i + 1) & m->mask;
	return i;
}

static int grow(struct hy_keymap *m)
{
	struct hy_keymap bigger;
	int rc = hy_keymap_init(&bigger, (m->mask + 1) * 2, m->values != NULL);

	if (rc < 0)
		return rc;
	for (uint64_t i = 0; i <= m->mask; i++) {
		uint64_t j;

		if (m->keys[i] == HY_KEYMAP_EMPTY)
			continue;
		j = hy_keymap_slot(&bigger, m->keys[i]);
		bigger.keys[j] = m->keys[i];
		if (m->values)
			bigger.values[j] = m->values[i];
	}
	bigger.count = m->count;
	hy_keymap_free(m);
	*m = bigger;
	return 0;
}

int hy_keymap_put(struct hy_keymap *m, uint64_t key, uint32_t value)
{
	uint64_t i;

	if ((m->count + 1) * 2 > m->mask + 1) {
		int rc = grow(m);

		if (rc < 0)
			return rc;
	}
	i = hy_keymap_slot(m, key);
	if (m->keys[i] == key)
		return 0;
	m->keys[i] = key;
	if (m->values)
		m->values[i] = value;
	m->count++;
	return 1;
}

void hy_keymap_delete_at(struct hy_keymap *m, uint64_t i)
{
	uint64_t j = i;

	for (;;) {
		uint64_t home;

		j = (j + 1) & m->mask;
		if (m->keys[j] == HY_KEYMAP_EMPTY)
			break;
		home = hy_keymap_mix(m->keys[j]) & m->mask;
		/* the key at j may move to i when i lies on its probe path,
		 * cyclically between its home and j */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			m->keys[i] = m->keys[j];
			if (m->values)
				m->values[i] = m->values[j];
			i = j;
		}
	}
	m->keys[i] = HY_KEYMAP_EMPTY;
	m->count--;
}

bool hy_keymap_get(const struct hy_keymap *m, uint64_t key, uint32_t *value)
{
	uint64_t i;

	if (!m->keys)
		return false;
	i = hy_keymap_slot(m, key);
	if (m->keys[i] != key)
		return false;
	if (value && m->values)
		*value = m->values[i];
	return true;
}
