/* engine.c - see include/hybridfs/engine.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/cache.h"
#include "hybridfs/engine.h"
#include "hybridfs/indirector.h"
#include "hybridfs/reca.h"

int hy_engine_new(struct hy_device *backing, struct hy_engine **out)
{
	struct hy_engine *engine = calloc(1, sizeof(*engine));
	int rc;

	*out = NULL;
	if (!engine)
		return -ENOMEM;
	rc = hy_indirector_new(backing, &engine->indirector);
	if (rc < 0) {
		free(engine);
		return rc;
	}
	engine->backing = backing;
	*out = engine;
	return 0;
}

void hy_engine_free(struct hy_engine *engine)
{
	if (!engine)
		return;
	hy_indirector_free(engine->indirector);
	free(engine);
}

struct hy_indirector *hy_engine_indirector(struct hy_engine *engine)
{
	return engine->indirector;
}

void hy_engine_set_cache(struct hy_engine *engine, struct hy_cache *cache)
{
	engine->cache = cache;
}

void hy_engine_file_init(struct hy_engine *engine, struct hy_engine_file *file, int backing_fd)
{
	(void)engine;
	file->backing_fd = backing_fd;
	file->file_id = 0;
	file->meta_map = file->meta_cache = false;
}

void hy_engine_file_set_id(struct hy_engine_file *file, uint64_t file_id)
{
	file->file_id = file_id;
}

static bool uses_cache(const struct hy_engine *engine, const struct hy_engine_file *file)
{
	return engine->cache && file->file_id;
}

static struct hy_cache_file cache_file(const struct hy_engine_file *file)
{
	return (struct hy_cache_file){file->file_id, file->backing_fd};
}

/* The file's BOPT writes home from outside the cache: the writes home move
 * the ctime, which the cache's stamp must follow (they are the mount's
 * own), so the file's cache gate is held across them as for a metadata
 * change (cache gate, then the indirector's). */
static int64_t sync_home_gated(struct hy_engine *engine, struct hy_engine_file *file)
{
	struct hy_cache_file f = cache_file(file);
	bool fresh;
	int64_t rc;

	if (!hy_indirector_uses_map(engine->indirector, file->file_id) || !uses_cache(engine, file))
		return hy_indirector_sync_home(engine->indirector, file->file_id, file->backing_fd);
	fresh = hy_cache_meta_begin(engine->cache, &f);
	rc = hy_indirector_sync_home(engine->indirector, file->file_id, file->backing_fd);
	hy_cache_meta_end(engine->cache, &f, fresh);
	return rc;
}

int64_t hy_engine_sync_home(struct hy_engine *engine, struct hy_engine_file *file)
{
	return sync_home_gated(engine, file);
}

ssize_t hy_engine_read(struct hy_engine *engine, struct hy_engine_file *file, void *buf,
		       size_t size, off_t off)
{
	return hy_engine_read_hinted(engine, file, NULL, buf, size, off);
}

ssize_t hy_engine_read_hinted(struct hy_engine *engine, struct hy_engine_file *file,
			      const struct hy_cache_hint *hint, void *buf, size_t size, off_t off)
{
	struct hy_cache_file f = cache_file(file);

	if (uses_cache(engine, file))
		return hy_cache_read_hinted(engine->cache, &f, hint, buf, size, off);
	return hy_indirector_read(engine->indirector, file->file_id, file->backing_fd, buf, size,
				  off);
}

ssize_t hy_engine_write(struct hy_engine *engine, struct hy_engine_file *file, const void *buf,
			size_t size, off_t off)
{
	return hy_engine_write_hinted(engine, file, NULL, buf, size, off);
}

ssize_t hy_engine_write_hinted(struct hy_engine *engine, struct hy_engine_file *file,
			       const struct hy_cache_hint *hint, const void *buf, size_t size,
			       off_t off)
{
	struct hy_cache_file f = cache_file(file);

	if (uses_cache(engine, file))
		return hy_cache_write_hinted(engine->cache, &f, hint, buf, size, off);
	return hy_indirector_write(engine->indirector, file->file_id, file->backing_fd, buf, size,
				   off);
}

void hy_engine_set_reca(struct hy_engine *engine, struct hy_reca *reca)
{
	engine->reca = reca;
}

/* ReCA's word on one request, asked once: the hint for the cache, or NULL. */
static const struct hy_cache_hint *reca_hint(struct hy_engine *engine,
					     const struct hy_engine_file *file,
					     struct hy_engine_request *req, bool write, size_t size,
					     off_t off)
{
	struct hy_reca_request rr;

	if (!req)
		return NULL;
	memset(&req->answer, 0, sizeof(req->answer));
	if (!engine->reca || size == 0 || off < 0)
		return NULL;
	rr = (struct hy_reca_request){
		.pid = req->pid,
		.file_id = file->file_id,
		.offset = (uint64_t)off,
		.length = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size,
		.write = write,
	};
	rr.file_size = rr.offset + rr.length;
	hy_reca_request(engine->reca, &rr, &req->answer);
	return req->answer.hinted ? &req->answer.hint : NULL;
}

ssize_t hy_engine_read_as(struct hy_engine *engine, struct hy_engine_file *file,
			  struct hy_engine_request *req, void *buf, size_t size, off_t off)
{
	return hy_engine_read_hinted(engine, file, reca_hint(engine, file, req, false, size, off),
				     buf, size, off);
}

int hy_engine_read_direct_as(struct hy_engine *engine, struct hy_engine_file *file,
			     struct hy_engine_request *req, size_t size, off_t off)
{
	/* with a cache in the path the cache decides where each block comes
	 * from, and what it takes in */
	int fd = uses_cache(engine, file) ? -1
					  : hy_indirector_home_fd(engine->indirector, file->file_id,
								  file->backing_fd, size, off);

	if (fd >= 0)
		reca_hint(engine, file, req, false, size, off); /* its answer; no cache to hint */
	return fd;
}

void hy_engine_read_direct_done(struct hy_engine *engine, struct hy_engine_file *file, off_t off,
				ssize_t done)
{
	hy_indirector_home_read_done(engine->indirector, file->backing_fd, off, done);
}

ssize_t hy_engine_write_as(struct hy_engine *engine, struct hy_engine_file *file,
			   struct hy_engine_request *req, const void *buf, size_t size, off_t off)
{
	return hy_engine_write_hinted(engine, file, reca_hint(engine, file, req, true, size, off),
				      buf, size, off);
}

int hy_engine_truncate(struct hy_engine *engine, struct hy_engine_file *file, off_t size)
{
	struct hy_cache_file f = cache_file(file);
	bool cached = uses_cache(engine, file) && size >= 0;
	/* the cache's gate is held across the change, so no read caches the
	 * old bytes past the new end meanwhile */
	int rc = cached ? hy_cache_change_begin(engine->cache, &f, (uint64_t)size, UINT64_MAX) : 0;

	if (rc == 0)
		rc = hy_indirector_truncate(engine->indirector, file->file_id, file->backing_fd,
					    size);
	if (cached)
		hy_cache_change_end(engine->cache, &f);
	return rc;
}

int hy_engine_fallocate(struct hy_engine *engine, struct hy_engine_file *file, int mode, off_t off,
			off_t len)
{
	struct hy_cache_file f = cache_file(file);
	bool cached = uses_cache(engine, file) && off >= 0 && len > 0;
	/* plain allocation (which may grow the file) changes no data: nothing
	 * leaves the cache, but it moves the ctime (and maybe the size), so
	 * it goes under the gate all the same and the stamp follows it */
	uint64_t n = (mode & ~FALLOC_FL_KEEP_SIZE) == 0				    ? 0
		     : (mode & (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE)) ? UINT64_MAX
										    : (uint64_t)len;
	int rc = cached ? hy_cache_change_begin(engine->cache, &f, (uint64_t)off, n) : 0;

	if (rc == 0)
		rc = hy_indirector_fallocate(engine->indirector, file->file_id, file->backing_fd,
					     mode, off, len);
	if (cached)
		hy_cache_change_end(engine->cache, &f);
	return rc;
}

ssize_t hy_engine_copy_range(struct hy_engine *engine, struct hy_engine_file *in, off_t off_in,
			     struct hy_engine_file *out, off_t off_out, size_t len, int flags)
{
	struct hy_cache_file fi = cache_file(in), fo = cache_file(out);
	bool cached = uses_cache(engine, out) && off_out >= 0 && len > 0;
	ssize_t rc = 0;

	/* the kernel copies home to home: the source's cached writes go home
	 * first, and the destination's range leaves the cache */
	if (uses_cache(engine, in) && off_in >= 0 && len > 0)
		rc = hy_cache_write_home(engine->cache, &fi, (uint64_t)off_in, len);
	if (rc < 0)
		return rc;
	if (cached)
		rc = hy_cache_change_begin(engine->cache, &fo, (uint64_t)off_out, len);
	if (rc == 0)
		rc = hy_indirector_copy_range(engine->indirector, in->file_id, in->backing_fd,
					      off_in, out->file_id, out->backing_fd, off_out, len,
					      flags);
	if (cached)
		hy_cache_change_end(engine->cache, &fo);
	return rc;
}

int hy_engine_fsync(struct hy_engine *engine, struct hy_engine_file *file, bool data_only)
{
	struct hy_cache_file f = cache_file(file);
	uint64_t token = 0;
	int64_t home = 0;
	int rc = uses_cache(engine, file) ? hy_cache_fsync(engine->cache, &f, &token) : 0;

	if (rc < 0)
		return rc;
	/* the cache made the writes durable in its store, and home has
	 * nothing of the cache's to sync (nor BORG's copies): done, as an
	 * SSD write-back cache is meant to */
	if (rc == 1 && !hy_indirector_has_copies(engine->indirector, file->file_id))
		return 0;
	/* BOPT copies written through the mount go home: fsync'd data is
	 * where a plain directory would have it (DESIGN.md invariant 1) */
	if (hy_indirector_has_copies(engine->indirector, file->file_id))
		home = sync_home_gated(engine, file);
	rc = home < 0 ? (int)home
		      : hy_indirector_fsync(engine->indirector, file->file_id, file->backing_fd,
					    data_only);
	if (rc == 0 && uses_cache(engine, file))
		hy_cache_home_synced(engine->cache, &f, token);
	return rc;
}

int hy_engine_close(struct hy_engine *engine, struct hy_engine_file *file)
{
	struct hy_cache_file f = cache_file(file);
	int64_t rc = 0;

	if (uses_cache(engine, file))
		hy_cache_close_file(engine->cache, &f);
	/* FusionCache's session write-back: a closed file's BOPT writes go home */
	if (hy_indirector_has_copies(engine->indirector, file->file_id))
		rc = sync_home_gated(engine, file);
	return rc < 0 ? (int)rc : 0;
}

int hy_engine_forget_file(struct hy_engine *engine, uint64_t file_id)
{
	return engine->cache && file_id ? hy_cache_forget_file(engine->cache, file_id) : 0;
}

void hy_engine_home_changed(struct hy_engine *engine, uint64_t file_id)
{
	if (engine->cache && file_id)
		hy_cache_home_changed(engine->cache, file_id);
}

bool hy_engine_has_copies(struct hy_engine *engine, uint64_t file_id)
{
	return hy_indirector_has_copies(engine->indirector, file_id) ||
	       (engine->cache && file_id && hy_cache_has_blocks(engine->cache, file_id));
}

bool hy_engine_meta_begin(struct hy_engine *engine, struct hy_engine_file *file)
{
	struct hy_cache_file f = cache_file(file);

	file->meta_map =
		hy_indirector_meta_begin(engine->indirector, file->file_id, file->backing_fd);
	file->meta_cache = uses_cache(engine, file) && hy_cache_meta_begin(engine->cache, &f);
	return file->meta_map || file->meta_cache;
}

void hy_engine_meta_end(struct hy_engine *engine, struct hy_engine_file *file, bool fresh)
{
	struct hy_cache_file f = cache_file(file);

	if (fresh && file->meta_map)
		hy_indirector_meta_end(engine->indirector, file->file_id, file->backing_fd);
	if (uses_cache(engine, file))
		hy_cache_meta_end(engine->cache, &f, fresh && file->meta_cache);
}

int hy_engine_prepare_seek(struct hy_engine *engine, struct hy_engine_file *file)
{
	struct hy_cache_file f = cache_file(file);

	return uses_cache(engine, file) ? hy_cache_write_home(engine->cache, &f, 0, UINT64_MAX) : 0;
}

/* The open truncates the home file itself, outside every write path: both
 * gates are held across it (the cache's first, as everywhere), so that
 * neither the cache's cleaner nor BORG's write-back of dirty BOPT blocks,
 * each clipping to a size it read before, writes old blocks home past the
 * new end; and the indirector counts it as a change, so that a copy of
 * the file into the BOPT in progress is not committed. */
bool hy_engine_truncate_open_begin(struct hy_engine *engine, uint64_t file_id)
{
	bool held;

	if (!file_id)
		return false;
	if (engine->cache)
		hy_cache_truncate_open_begin(engine->cache, file_id);
	held = hy_indirector_truncate_open_begin(engine->indirector, file_id);
	return engine->cache || held;
}

void hy_engine_truncate_open_end(struct hy_engine *engine, uint64_t file_id, int fd)
{
	struct hy_cache_file f = {file_id, fd};

	if (hy_indirector_uses_map(engine->indirector, file_id))
		hy_indirector_truncate_open_end(engine->indirector, file_id, fd);
	if (engine->cache)
		hy_cache_truncate_open_end(engine->cache, &f);
}
