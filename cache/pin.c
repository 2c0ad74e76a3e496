/* pin.c - pinned and excluded files in the cache: the rules of file ids,
 * the pinned lines held out of the replacement policy, and the admission
 * a rule gives a request; see include/hybridfs/pin.h. */
#include <errno.h>
#include <string.h>

#include "hybridfs/pin.h"
#include "hybridfs/workload_policy.h"

#include "cache_internal.h"

int hy_cache_pin_init(struct hy_cache *c)
{
	pthread_mutex_init(&c->pin.rule_lock, NULL);
	/* half of the store at most: the other half always has victims */
	c->pin.cap = c->capacity / 2;
	return hy_keymap_init(&c->pin.rules, 64, true);
}

void hy_cache_pin_free(struct hy_cache *c)
{
	hy_keymap_free(&c->pin.rules);
	pthread_mutex_destroy(&c->pin.rule_lock);
}

/* Under a file table stripe (a new file's state): rule_lock is a leaf. */
uint8_t hy_cache_pin_rule_of(struct hy_cache *c, uint64_t file_id)
{
	uint32_t rule = HY_RULE_NONE;

	pthread_mutex_lock(&c->pin.rule_lock);
	if (c->pin.rules.count)
		hy_keymap_get(&c->pin.rules, file_id, &rule);
	pthread_mutex_unlock(&c->pin.rule_lock);
	return (uint8_t)rule;
}

enum hy_rule hy_pin_file_rule(struct hy_cache *c, uint64_t file_id)
{
	return (enum hy_rule)hy_cache_pin_rule_of(c, file_id);
}

/* A line of @cf is committed: pinned (true: the caller keeps it out of the
 * policy) while the cap has room. lines_lock held. */
bool hy_cache_pin_line_take(struct hy_cache *c, const struct cfile *cf, uint32_t line)
{
	if (atomic_load(&cf->rule) != HY_RULE_PIN)
		return false;
	if (c->pin.lines >= c->pin.cap) {
		atomic_fetch_add(&c->pin.over_cap, 1);
		return false;
	}
	c->lines[line].flags |= LS_PINNED;
	c->pin.lines++;
	return true;
}

/* A line leaves the cache: true when it was pinned (so not in the
 * policy). lines_lock held. */
bool hy_cache_pin_line_release(struct hy_cache *c, uint32_t line)
{
	if (!(c->lines[line].flags & LS_PINNED))
		return false;
	c->lines[line].flags &= (uint8_t)~LS_PINNED;
	c->pin.lines--;
	return true;
}

const struct hy_cache_hint *hy_cache_pin_hint(struct hy_cache *c, const struct cfile *cf,
					      const struct hy_cache_hint *hint,
					      struct hy_cache_hint *local)
{
	uint8_t rule = atomic_load(&cf->rule);

	if (rule == HY_RULE_NONE)
		return hint;
	if (hint) {
		*local = *hint;
	} else {
		/* the mount's own settings, as a NULL hint has them */
		memset(local, 0, sizeof(*local));
		local->write = -1;
		local->evict = HY_EVICT_NORMAL;
		local->line_size = LINE;
		local->seq_cutoff = HY_WORKLOAD_CUTOFF_MOUNT;
	}
	if (rule == HY_RULE_EXCLUDE) {
		local->admit = HY_ADMIT_BYPASS;
		atomic_fetch_add(&c->pin.excluded_requests, 1);
	} else {
		local->admit = HY_ADMIT_HIGH; /* past the heat filter */
	}
	return local;
}

void hy_cache_pin_forget(struct hy_cache *c, uint64_t file_id)
{
	pthread_mutex_lock(&c->pin.rule_lock);
	if (c->pin.rules.count) {
		uint64_t slot = hy_keymap_slot(&c->pin.rules, file_id);

		if (c->pin.rules.keys[slot] == file_id)
			hy_keymap_delete_at(&c->pin.rules, slot);
	}
	pthread_mutex_unlock(&c->pin.rule_lock);
}

int hy_pin_set_files(struct hy_cache *c, const uint64_t *ids, size_t n, enum hy_rule rule)
{
	struct hy_keymap batch;
	size_t cached = 0;
	int rc = 0;

	if (!n)
		return 0;
	pthread_mutex_lock(&c->pin.rule_lock);
	for (size_t i = 0; i < n && rc == 0; i++) {
		uint64_t slot = hy_keymap_slot(&c->pin.rules, ids[i]);

		if (c->pin.rules.keys[slot] == ids[i]) {
			if (rule == HY_RULE_NONE)
				hy_keymap_delete_at(&c->pin.rules, slot);
			else
				c->pin.rules.values[slot] = rule;
		} else if (rule != HY_RULE_NONE && hy_keymap_put(&c->pin.rules, ids[i], rule) < 0) {
			rc = -ENOMEM;
		}
	}
	pthread_mutex_unlock(&c->pin.rule_lock);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		struct cfile *cf = cfile_get(c, ids[i], false);

		if (cf) {
			atomic_store(&cf->rule, (uint8_t)rule);
			cached += atomic_load(&cf->blocks) > 0;
		}
		cfile_put(c, cf);
	}
	/* a file's first open finds it has nothing cached: no pass. (A block
	 * cached meanwhile is committed under the new rule, set above.) */
	if (!cached)
		return 0;
	/* the lines the files have now: one pass over the line table (a
	 * command's cost, not a request's) */
	if (hy_keymap_init(&batch, 2 * n, false) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (hy_keymap_put(&batch, ids[i], 0) < 0) {
			hy_keymap_free(&batch);
			return -ENOMEM;
		}
	pthread_mutex_lock(&c->lines_lock);
	for (uint32_t l = 0; l < c->capacity; l++) {
		struct line_state *ls = &c->lines[l];
		uint64_t file_id, block;

		if (!(ls->flags & LS_USED) || !line_key(c, l, &file_id, &block) ||
		    !hy_keymap_get(&batch, file_id, NULL))
			continue;
		if (rule == HY_RULE_PIN) {
			if (ls->flags & LS_PINNED)
				continue;
			if (c->pin.lines >= c->pin.cap) {
				atomic_fetch_add(&c->pin.over_cap, 1);
				continue;
			}
			if (hy_policy_remove(c->policy, l) == 0) {
				ls->flags |= LS_PINNED;
				c->pin.lines++;
			}
		} else if (hy_cache_pin_line_release(c, l)) {
			hy_policy_insert_at(c->policy, l, HY_POLICY_COLD);
		}
	}
	pthread_mutex_unlock(&c->lines_lock);
	hy_keymap_free(&batch);
	return 0;
}

void hy_pin_get_stats(struct hy_cache *c, struct hy_pin_stats *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&c->pin.rule_lock);
	for (uint64_t s = 0; c->pin.rules.count && s <= c->pin.rules.mask; s++) {
		if (c->pin.rules.keys[s] == HY_KEYMAP_EMPTY)
			continue;
		if (c->pin.rules.values[s] == HY_RULE_PIN)
			out->files_pinned++;
		else if (c->pin.rules.values[s] == HY_RULE_EXCLUDE)
			out->files_excluded++;
	}
	pthread_mutex_unlock(&c->pin.rule_lock);
	pthread_mutex_lock(&c->lines_lock);
	out->pinned_lines = c->pin.lines;
	out->pin_cap = c->pin.cap;
	pthread_mutex_unlock(&c->lines_lock);
	out->over_cap = atomic_load(&c->pin.over_cap);
	out->excluded_requests = atomic_load(&c->pin.excluded_requests);
}
