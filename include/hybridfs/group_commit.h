/*
 * group_commit.h - group commit for an append-only journal file: one
 * fdatasync(2) makes durable every record written before it, however many
 * threads wait for theirs.
 *
 * What it is for: the two journals of hybridfs, the indirection map's
 * (map_journal.h) and the SSD cache store's (cache_store.h), hand a ticket
 * (a sequence number) to each record they append, and a writer that needs
 * its record durable waits for its ticket. The first waiter runs the sync
 * for everything written so far; those who arrive meanwhile wait for it and
 * run the next one if theirs was written after it began (SQLite's and
 * ext4's journals commit groups the same way).
 *
 * Who calls it: borg/map_journal.c and cache/cache_store.c (its journal in
 * cache_store_journal.c), each with its
 * own mutex and sticky error; the unit tests through the two journals.
 *
 * Memory: struct hy_group_commit is embedded in its journal; init and
 * destroy handle its condition variable. Locks: every function is called
 * with the journal's own mutex held (the one that orders its appends), and
 * returns with it held; wait() releases it only across the fdatasync.
 */
#ifndef HYBRIDFS_GROUP_COMMIT_H
#define HYBRIDFS_GROUP_COMMIT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct hy_group_commit {
	pthread_cond_t synced;
	uint64_t written; /* the last ticket handed out */
	uint64_t durable; /* the last ticket known synced */
	bool syncing;	  /* a thread is in fdatasync now */
};

/* 0 or -ENOMEM. Tickets start after @seq (already durable). */
int hy_group_commit_init(struct hy_group_commit *g, uint64_t seq);
void hy_group_commit_destroy(struct hy_group_commit *g);

/* The ticket of the record just appended. */
static inline uint64_t hy_group_commit_issue(struct hy_group_commit *g)
{
	return ++g->written;
}

/* Waits until @ticket is durable, running the fdatasync of @fd when nobody
 * is. A failed sync sets *@error (the journal's sticky error), and every
 * waiter then returns it; a set *@error ends the wait at once. A ticket
 * above the count (issued before a reset) is durable: the checkpoint that
 * reset the count holds its record. 0 or the error. @lock held. */
int hy_group_commit_wait(struct hy_group_commit *g, pthread_mutex_t *lock, int fd, int *error,
			 uint64_t ticket);

/* Waits for a sync in progress to end (before the file is emptied, so that
 * its end cannot count the old records as the new file's), then restarts
 * the count at @seq, durable. @lock held. */
void hy_group_commit_reset(struct hy_group_commit *g, pthread_mutex_t *lock, uint64_t seq);

#endif
