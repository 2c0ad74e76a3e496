/* inode.c - see include/hybridfs/inode.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hybridfs/inode.h"
#include "hybridfs/log.h"

/* Descriptors to close once table->lock is dropped. */
struct close_list {
	int fds[8];
	int count;
};

static void close_later(struct close_list *list, int fd)
{
	if (list->count < (int)(sizeof(list->fds) / sizeof(list->fds[0])))
		list->fds[list->count++] = fd;
	else
		close(fd); /* rare: more than eight at once */
}

static void close_all(struct close_list *list)
{
	for (int i = 0; i < list->count; i++)
		close(list->fds[i]);
	list->count = 0;
}

static size_t hash_key(dev_t dev, ino_t ino, size_t nbuckets)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ULL ^ (uint64_t)dev * 0xc2b2ae3d27d4eb4fULL;

	return (size_t)(h ^ (h >> 29)) & (nbuckets - 1);
}

static struct hy_inode *hash_find(struct hy_inode_table *table, dev_t dev, ino_t ino)
{
	struct hy_inode *inode = table->buckets[hash_key(dev, ino, table->nbuckets)];

	while (inode && (inode->ino != ino || inode->dev != dev))
		inode = inode->hash_next;
	return inode;
}

/* Doubling keeps the chains short; the O(n) rehash is paid once per
 * doubling, so a lookup costs O(1) amortized. A failed allocation only
 * leaves the chains longer. */
static void hash_grow(struct hy_inode_table *table)
{
	size_t n = table->nbuckets * 2;
	struct hy_inode **buckets = calloc(n, sizeof(*buckets));

	if (!buckets)
		return;
	for (size_t i = 0; i < table->nbuckets; i++) {
		struct hy_inode *inode = table->buckets[i], *next;

		for (; inode; inode = next) {
			size_t b = hash_key(inode->dev, inode->ino, n);

			next = inode->hash_next;
			inode->hash_next = buckets[b];
			buckets[b] = inode;
		}
	}
	free(table->buckets);
	table->buckets = buckets;
	table->nbuckets = n;
}

static void hash_insert(struct hy_inode_table *table, struct hy_inode *inode)
{
	size_t b;

	if (table->count >= table->nbuckets)
		hash_grow(table);
	b = hash_key(inode->dev, inode->ino, table->nbuckets);
	inode->hash_next = table->buckets[b];
	table->buckets[b] = inode;
	table->count++;
}

static void hash_remove(struct hy_inode_table *table, struct hy_inode *inode)
{
	struct hy_inode **pp = &table->buckets[hash_key(inode->dev, inode->ino, table->nbuckets)];

	while (*pp && *pp != inode)
		pp = &(*pp)->hash_next;
	if (*pp) {
		*pp = inode->hash_next;
		table->count--;
	}
}

static void lru_remove(struct hy_inode *inode)
{
	if (!inode->in_lru)
		return;
	inode->lru_prev->lru_next = inode->lru_next;
	inode->lru_next->lru_prev = inode->lru_prev;
	inode->in_lru = false;
}

static bool fd_evictable(struct hy_inode_table *table, struct hy_inode *inode)
{
	return inode->fd >= 0 && inode->fd_users == 0 && inode->name && inode->parent &&
	       inode != table->root;
}

/* Puts @inode at the most recent end when its descriptor may be closed. */
static void lru_touch(struct hy_inode_table *table, struct hy_inode *inode)
{
	lru_remove(inode);
	if (!fd_evictable(table, inode))
		return;
	inode->lru_next = table->lru.lru_next;
	inode->lru_prev = &table->lru;
	table->lru.lru_next->lru_prev = inode;
	table->lru.lru_next = inode;
	inode->in_lru = true;
}

static void evict_one(struct hy_inode_table *table, struct close_list *list)
{
	struct hy_inode *victim = table->lru.lru_prev;

	lru_remove(victim);
	close_later(list, victim->fd);
	victim->fd = -1;
	table->fds_cached--;
	table->fd_evictions++;
}

static void evict_over_cap(struct hy_inode_table *table, struct close_list *list)
{
	while (table->fds_cached > table->fd_cap && table->lru.lru_prev != &table->lru)
		evict_one(table, list);
}

size_t hy_inode_shed(struct hy_inode_table *table, size_t count)
{
	struct close_list list = {.count = 0};
	size_t done = 0;

	while (done < count) {
		pthread_mutex_lock(&table->lock);
		/* a few at a time, closed with the lock dropped */
		for (int i = 0; i < 8 && done < count && table->lru.lru_prev != &table->lru; i++) {
			evict_one(table, &list);
			done++;
		}
		pthread_mutex_unlock(&table->lock);
		if (list.count == 0)
			break;
		close_all(&list);
	}
	return done;
}

/* Frees @inode, and then its parent, while nothing holds them. */
static void maybe_free(struct hy_inode_table *table, struct hy_inode *inode,
		       struct close_list *list)
{
	while (inode && inode != table->root && inode->nlookup == 0 && inode->refs == 0 &&
	       inode->fd_users == 0) {
		struct hy_inode *parent = inode->parent;

		hash_remove(table, inode);
		lru_remove(inode);
		if (inode->fd >= 0) {
			close_later(list, inode->fd);
			table->fds_cached--;
		}
		free(inode->name);
		free(inode);
		if (!parent)
			break;
		parent->refs--;
		inode = parent;
	}
}

int hy_inode_table_new(int root_fd, size_t fd_cap, struct hy_inode_table **out)
{
	struct hy_inode_table *table = calloc(1, sizeof(*table));
	struct stat st;

	*out = NULL;
	if (!table) {
		close(root_fd);
		return -ENOMEM;
	}
	if (fstat(root_fd, &st) < 0) {
		int err = errno;

		close(root_fd);
		free(table);
		return -err;
	}
	table->nbuckets = 1024;
	table->buckets = calloc(table->nbuckets, sizeof(*table->buckets));
	table->root = calloc(1, sizeof(*table->root));
	if (!table->buckets || !table->root) {
		close(root_fd);
		free(table->buckets);
		free(table->root);
		free(table);
		return -ENOMEM;
	}
	pthread_mutex_init(&table->lock, NULL);
	table->lru.lru_next = table->lru.lru_prev = &table->lru;
	table->fd_cap = fd_cap < 16 ? 16 : fd_cap;
	table->root->dev = st.st_dev;
	table->root->ino = st.st_ino;
	table->root->type = S_IFDIR;
	table->root->nlookup = 1;
	table->root->refs = 1;
	table->root->fd = root_fd;
	hash_insert(table, table->root);
	*out = table;
	return 0;
}

void hy_inode_table_free(struct hy_inode_table *table)
{
	if (!table)
		return;
	for (size_t i = 0; i < table->nbuckets; i++) {
		struct hy_inode *inode = table->buckets[i], *next;

		for (; inode; inode = next) {
			next = inode->hash_next;
			if (inode->fd >= 0)
				close(inode->fd);
			free(inode->name);
			free(inode);
		}
	}
	free(table->buckets);
	pthread_mutex_destroy(&table->lock);
	free(table);
}

struct hy_inode *hy_inode_find(struct hy_inode_table *table, dev_t dev, ino_t ino)
{
	struct hy_inode *inode;

	pthread_mutex_lock(&table->lock);
	inode = hash_find(table, dev, ino);
	pthread_mutex_unlock(&table->lock);
	return inode;
}

struct hy_inode *hy_inode_find_listed(struct hy_inode_table *table, dev_t dev, ino_t ino,
				      int64_t until)
{
	struct hy_inode *inode;
	int64_t expected = until;

	pthread_mutex_lock(&table->lock);
	inode = hash_find(table, dev, ino);
	/* under the lock the entry cannot be freed while its field is read */
	if (inode && !atomic_compare_exchange_strong(&inode->listed_until, &expected, 0))
		inode = NULL;
	pthread_mutex_unlock(&table->lock);
	return inode;
}

/* Sets @inode's name under table->lock; @name is consumed. */
static void set_name(struct hy_inode_table *table, struct hy_inode *inode, struct hy_inode *parent,
		     char *name, struct close_list *list)
{
	struct hy_inode *old_parent = inode->parent;

	free(inode->name);
	inode->name = name;
	if (old_parent == parent)
		return;
	parent->refs++;
	inode->parent = parent;
	if (old_parent) {
		old_parent->refs--;
		maybe_free(table, old_parent, list);
	}
}

int hy_inode_add_lookup(struct hy_inode_table *table, struct hy_inode *parent, const char *name,
			const struct stat *st, int fd, struct hy_inode **out)
{
	struct close_list list = {.count = 0};
	struct hy_inode *inode, *fresh = NULL;
	char *copy = strdup(name);

	*out = NULL;
	if (!copy) {
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	pthread_mutex_lock(&table->lock);
	inode = hash_find(table, st->st_dev, st->st_ino);
	if (!inode) {
		pthread_mutex_unlock(&table->lock);
		fresh = calloc(1, sizeof(*fresh));
		if (!fresh) {
			free(copy);
			if (fd >= 0)
				close(fd);
			return -ENOMEM;
		}
		fresh->dev = st->st_dev;
		fresh->ino = st->st_ino;
		fresh->type = st->st_mode & S_IFMT;
		fresh->fd = -1;
		pthread_mutex_lock(&table->lock);
		/* another thread may have added it meanwhile */
		inode = hash_find(table, st->st_dev, st->st_ino);
		if (!inode) {
			inode = fresh;
			fresh = NULL;
			hash_insert(table, inode);
		}
	}
	inode->nlookup++;
	if (inode != table->root)
		set_name(table, inode, parent, copy, &list);
	else
		free(copy);
	if (fd >= 0) {
		if (inode->fd < 0) {
			inode->fd = fd;
			if (inode != table->root)
				table->fds_cached++;
			lru_touch(table, inode);
			evict_over_cap(table, &list);
		} else {
			close_later(&list, fd);
		}
	}
	pthread_mutex_unlock(&table->lock);
	close_all(&list);
	free(fresh);
	*out = inode;
	return 0;
}

void hy_inode_forget(struct hy_inode_table *table, struct hy_inode *inode, uint64_t n)
{
	struct close_list list = {.count = 0};

	pthread_mutex_lock(&table->lock);
	if (n > inode->nlookup) {
		/* The kernel never forgets more than it looked up; a table that
		 * says otherwise is broken, and going on would free a live entry. */
		hy_log(LOG_CRIT, "inode %llu: forget %llu with lookup count %llu",
		       (unsigned long long)inode->ino, (unsigned long long)n,
		       (unsigned long long)inode->nlookup);
		abort();
	}
	inode->nlookup -= n;
	maybe_free(table, inode, &list);
	pthread_mutex_unlock(&table->lock);
	close_all(&list);
}

void hy_inode_hold(struct hy_inode_table *table, struct hy_inode *inode)
{
	pthread_mutex_lock(&table->lock);
	inode->refs++;
	pthread_mutex_unlock(&table->lock);
}

void hy_inode_release(struct hy_inode_table *table, struct hy_inode *inode)
{
	struct close_list list = {.count = 0};

	pthread_mutex_lock(&table->lock);
	inode->refs--;
	maybe_free(table, inode, &list);
	pthread_mutex_unlock(&table->lock);
	close_all(&list);
}

bool hy_inode_forgotten(struct hy_inode_table *table, struct hy_inode *inode)
{
	bool forgotten;

	pthread_mutex_lock(&table->lock);
	forgotten = inode->nlookup == 0;
	pthread_mutex_unlock(&table->lock);
	return forgotten;
}

/* Opens @name in @dirfd as an O_PATH descriptor and checks that it is still
 * the inode the table knows; a name that now leads elsewhere is -ESTALE. */
static int open_checked(int dirfd, const char *name, const struct hy_inode *inode, int *out)
{
	struct stat st;
	int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int err = errno;

		close(fd);
		return -err;
	}
	if (st.st_ino != inode->ino || st.st_dev != inode->dev) {
		close(fd);
		return -ESTALE;
	}
	*out = fd;
	return 0;
}

static void fill_self(struct hy_inode_ref *ref, struct hy_inode *inode)
{
	ref->holder = inode;
	ref->self = true;
	ref->dirfd = inode->fd;
	ref->name_buf[0] = '\0';
	ref->name = ref->name_buf;
	snprintf(ref->path, sizeof(ref->path), "/proc/self/fd/%d", inode->fd);
}

/* Under table->lock: @inode's descriptor is in use by one more request. */
static void fd_use(struct hy_inode *inode)
{
	inode->fd_users++;
	lru_remove(inode);
}

/* Under table->lock: one request less uses @inode's descriptor. */
static void fd_unuse(struct hy_inode_table *table, struct hy_inode *inode)
{
	inode->fd_users--;
	if (inode->fd_users == 0)
		lru_touch(table, inode);
}

/* Entries between the one a request needs a descriptor of and its nearest
 * ancestor that has one, nearest first; each holds a reference (refs),
 * which keeps it and its parent alive while the table is unlocked. */
struct chain {
	struct hy_inode **at;
	size_t n, cap;
	struct hy_inode *inline_at[32];
};

static int chain_push(struct chain *c, struct hy_inode *inode)
{
	if (c->n == c->cap) {
		size_t cap = c->cap * 2;
		struct hy_inode **at = c->at == c->inline_at ? malloc(cap * sizeof(*at))
							     : realloc(c->at, cap * sizeof(*at));

		if (!at)
			return -ENOMEM;
		if (c->at == c->inline_at)
			memcpy(at, c->inline_at, c->n * sizeof(*at));
		c->at = at;
		c->cap = cap;
	}
	inode->refs++;
	c->at[c->n++] = inode;
	return 0;
}

/* Opens the descriptors of @c's entries, from the ancestor @base (whose
 * descriptor the caller uses) down, one level at a time, each checked to
 * be the inode the table knows. A loop, not a recursion: a chain of
 * directories may be far deeper than a path (15,000 levels took 11 MB of
 * stack that way). Returns 0 with the last entry's descriptor in use (and
 * @base's no longer), or a negative errno with none in use. */
static int chain_open(struct hy_inode_table *table, struct chain *c, struct hy_inode *base)
{
	struct close_list list = {.count = 0};
	char name[NAME_MAX + 1];
	int rc = 0;

	for (size_t i = c->n; i-- > 0;) {
		struct hy_inode *child = c->at[i];
		bool opened = false;
		int fd = -1;

		pthread_mutex_lock(&table->lock);
		if (child->fd >= 0) {
			fd_use(child); /* another request opened it meanwhile */
			opened = true;
		} else if (!child->name || child->parent != base) {
			rc = -ESTALE; /* renamed or removed since the chain was taken */
		} else {
			snprintf(name, sizeof(name), "%s", child->name);
		}
		pthread_mutex_unlock(&table->lock);
		/* base->fd stays open: its use count keeps it out of the LRU */
		if (rc == 0 && !opened)
			rc = open_checked(base->fd, name, child, &fd);
		pthread_mutex_lock(&table->lock);
		if (rc == 0 && !opened) {
			table->fd_reopens++;
			if (child->fd < 0) {
				child->fd = fd;
				table->fds_cached++;
			} else {
				close_later(&list, fd);
			}
			fd_use(child);
		}
		fd_unuse(table, base);
		evict_over_cap(table, &list);
		pthread_mutex_unlock(&table->lock);
		close_all(&list);
		if (rc)
			return rc;
		base = child;
	}
	return 0;
}

int hy_inode_pin(struct hy_inode_table *table, struct hy_inode *inode, bool want_fd,
		 struct hy_inode_ref *ref)
{
	struct close_list list = {.count = 0};
	struct chain c = {.n = 0, .cap = 32};
	struct hy_inode *need, *base;
	int rc = 0;

	c.at = c.inline_at;
	pthread_mutex_lock(&table->lock);
	if (inode->fd >= 0) {
		fd_use(inode);
		fill_self(ref, inode);
		pthread_mutex_unlock(&table->lock);
		return 0;
	}
	if (!inode->name || !inode->parent) {
		pthread_mutex_unlock(&table->lock);
		return -ESTALE;
	}
	/* without want_fd the parent's descriptor and the name will do */
	snprintf(ref->name_buf, sizeof(ref->name_buf), "%s", inode->name);
	need = want_fd ? inode : inode->parent;
	for (base = need; base->fd < 0; base = base->parent) {
		if (!base->name || !base->parent) {
			rc = -ESTALE;
			break;
		}
		rc = chain_push(&c, base);
		if (rc)
			break;
	}
	if (rc == 0)
		fd_use(base);
	pthread_mutex_unlock(&table->lock);

	if (rc == 0)
		rc = chain_open(table, &c, base);
	if (rc == 0 && want_fd) {
		pthread_mutex_lock(&table->lock);
		fill_self(ref, inode);
		pthread_mutex_unlock(&table->lock);
	} else if (rc == 0) {
		ref->holder = need;
		ref->self = false;
		ref->dirfd = need->fd;
		ref->name = ref->name_buf;
		snprintf(ref->path, sizeof(ref->path), "/proc/self/fd/%d/%s", ref->dirfd,
			 ref->name_buf);
	}
	pthread_mutex_lock(&table->lock);
	for (size_t i = 0; i < c.n; i++) {
		c.at[i]->refs--;
		maybe_free(table, c.at[i], &list);
	}
	pthread_mutex_unlock(&table->lock);
	close_all(&list);
	if (c.at != c.inline_at)
		free(c.at);
	return rc;
}

void hy_inode_unpin(struct hy_inode_table *table, struct hy_inode_ref *ref)
{
	struct hy_inode *holder = ref->holder;

	if (!holder)
		return;
	pthread_mutex_lock(&table->lock);
	holder->fd_users--;
	if (holder->fd_users == 0)
		lru_touch(table, holder);
	pthread_mutex_unlock(&table->lock);
	ref->holder = NULL;
}

struct hy_inode *hy_inode_pin_child(struct hy_inode_table *table, struct hy_inode *parent,
				    const char *name)
{
	struct close_list list = {.count = 0};
	struct hy_inode_ref parent_ref;
	struct hy_inode *child;
	struct stat st;
	int fd = -1, rc;

	if (hy_inode_pin(table, parent, true, &parent_ref))
		return NULL;
	if (fstatat(parent_ref.dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		goto none;
	pthread_mutex_lock(&table->lock);
	child = hash_find(table, st.st_dev, st.st_ino);
	if (!child || child->parent != parent || !child->name || strcmp(child->name, name) != 0) {
		pthread_mutex_unlock(&table->lock);
		goto none;
	}
	child->refs++;
	if (child->fd < 0) {
		pthread_mutex_unlock(&table->lock);
		rc = open_checked(parent_ref.dirfd, name, child, &fd);
		pthread_mutex_lock(&table->lock);
		if (rc) {
			child->refs--;
			maybe_free(table, child, &list);
			pthread_mutex_unlock(&table->lock);
			close_all(&list);
			goto none;
		}
		if (child->fd < 0) {
			child->fd = fd;
			table->fds_cached++;
		} else {
			close_later(&list, fd);
		}
	}
	child->fd_users++;
	lru_remove(child);
	evict_over_cap(table, &list);
	pthread_mutex_unlock(&table->lock);
	close_all(&list);
	hy_inode_unpin(table, &parent_ref);
	return child;
none:
	hy_inode_unpin(table, &parent_ref);
	return NULL;
}

void hy_inode_unpin_child(struct hy_inode_table *table, struct hy_inode *child, bool gone)
{
	struct close_list list = {.count = 0};
	struct hy_inode *parent = NULL;

	if (!child)
		return;
	pthread_mutex_lock(&table->lock);
	if (gone && child->name) {
		/* Without a name the descriptor is the only way back to the
		 * inode, so it is kept (never in the LRU) until the kernel
		 * forgets the inode. */
		free(child->name);
		child->name = NULL;
		parent = child->parent;
		child->parent = NULL;
	}
	child->fd_users--;
	child->refs--;
	if (child->fd_users == 0)
		lru_touch(table, child);
	if (parent) {
		parent->refs--;
		maybe_free(table, parent, &list);
	}
	maybe_free(table, child, &list);
	pthread_mutex_unlock(&table->lock);
	close_all(&list);
}

int hy_inode_moved(struct hy_inode_table *table, struct hy_inode *child,
		   struct hy_inode *new_parent, const char *new_name)
{
	struct close_list list = {.count = 0};
	char *copy = strdup(new_name);

	if (!copy)
		return -ENOMEM;
	pthread_mutex_lock(&table->lock);
	set_name(table, child, new_parent, copy, &list);
	pthread_mutex_unlock(&table->lock);
	close_all(&list);
	return 0;
}

void hy_inode_get_name(struct hy_inode_table *table, struct hy_inode *inode, char *buf, size_t size)
{
	pthread_mutex_lock(&table->lock);
	snprintf(buf, size, "%s", inode->name ? inode->name : "");
	pthread_mutex_unlock(&table->lock);
}
