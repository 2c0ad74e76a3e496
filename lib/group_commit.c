/* group_commit.c - see include/hybridfs/group_commit.h. */
#include <errno.h>
#include <unistd.h>

#include "hybridfs/group_commit.h"

int hy_group_commit_init(struct hy_group_commit *g, uint64_t seq)
{
	g->written = g->durable = seq;
	g->syncing = false;
	return pthread_cond_init(&g->synced, NULL) == 0 ? 0 : -ENOMEM;
}

void hy_group_commit_destroy(struct hy_group_commit *g)
{
	pthread_cond_destroy(&g->synced);
}

int hy_group_commit_wait(struct hy_group_commit *g, pthread_mutex_t *lock, int fd, int *error,
			 uint64_t ticket)
{
	while (g->durable < ticket && !*error) {
		uint64_t target;
		int rc;

		/* issued before a reset: the checkpoint that emptied the file
		 * holds its record. Syncing on would never reach it (the count
		 * restarted below it), and a reset waiting for the sync to end
		 * would wait for ever */
		if (ticket > g->written)
			return 0;
		if (g->syncing) {
			pthread_cond_wait(&g->synced, lock);
			continue;
		}
		/* one sync for every record written so far, this one's too */
		target = g->written;
		g->syncing = true;
		pthread_mutex_unlock(lock);
		rc = fdatasync(fd) != 0 ? -errno : 0;
		pthread_mutex_lock(lock);
		g->syncing = false;
		if (rc)
			*error = rc;
		else if (target > g->durable)
			g->durable = target;
		pthread_cond_broadcast(&g->synced);
	}
	return g->durable >= ticket || ticket > g->written ? 0 : *error;
}

void hy_group_commit_reset(struct hy_group_commit *g, pthread_mutex_t *lock, uint64_t seq)
{
	while (g->syncing)
		pthread_cond_wait(&g->synced, lock);
	g->written = g->durable = seq;
}
