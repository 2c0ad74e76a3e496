/* engine.c - see include/hybridfs/engine.h. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "hybridfs/device.h"
#include "hybridfs/engine.h"

int hy_engine_new(struct hy_device *backing, struct hy_engine **out)
{
	struct hy_engine *engine = calloc(1, sizeof(*engine));

	*out = NULL;
	if (!engine)
		return -ENOMEM;
	engine->backing = backing;
	*out = engine;
	return 0;
}

void hy_engine_free(struct hy_engine *engine)
{
	free(engine);
}

void hy_engine_file_init(struct hy_engine *engine, struct hy_engine_file *file, int backing_fd)
{
	file->backing_fd = backing_fd;
}

ssize_t hy_engine_read(struct hy_engine *engine, struct hy_engine_file *file, void *buf,
		       size_t size, off_t off)
{
	return hy_device_read(engine->backing, file->backing_fd, buf, size, off);
}

ssize_t hy_engine_write(struct hy_engine *engine, struct hy_engine_file *file, const void *buf,
			size_t size, off_t off)
{
	return hy_device_write(engine->backing, file->backing_fd, buf, size, off);
}

int hy_engine_truncate(struct hy_engine *engine, struct hy_engine_file *file, off_t size)
{
	return hy_device_truncate(engine->backing, file->backing_fd, size);
}

int hy_engine_fsync(struct hy_engine *engine, struct hy_engine_file *file, bool data_only)
{
	return hy_device_sync(engine->backing, file->backing_fd, data_only);
}

int hy_engine_fallocate(struct hy_engine *engine, struct hy_engine_file *file, int mode, off_t off,
			off_t len)
{
	return hy_device_allocate(engine->backing, file->backing_fd, mode, off, len);
}

/* Both files are in the backing directory, so the kernel can copy (or
 * share extents) without the data passing through the daemon. */
ssize_t hy_engine_copy_range(struct hy_engine *engine, struct hy_engine_file *in, off_t off_in,
			     struct hy_engine_file *out, off_t off_out, size_t len, int flags)
{
	ssize_t n = copy_file_range(in->backing_fd, &off_in, out->backing_fd, &off_out, len,
				    (unsigned)flags);

	return n < 0 ? -errno : n;
}
