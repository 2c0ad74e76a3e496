/* home.c - the simulators' home device; see include/hybridfs/sim_home.h. */
#include <stdbool.h>
#include <string.h>

#include "hybridfs/device.h"
#include "hybridfs/devmodel.h"
#include "hybridfs/sim_home.h"

#define DEVICE_SHIFT 40 /* home bytes of one device on the disk: 2^40 */

void hy_sim_disk_serve(struct hy_sim_disk *disk, uint64_t addr, size_t len, bool write)
{
	if (disk->model)
		disk->busy_ms += hy_devmodel_serve(disk->model, addr, len, write);
}

uint64_t hy_sim_home_address(int64_t object, uint64_t off)
{
	return (((uint64_t)object - 1) << DEVICE_SHIFT) + off;
}

static ssize_t home_read(struct hy_device *dev, int64_t object, void *buf, size_t len, off_t off)
{
	hy_sim_disk_serve(dev->priv, hy_sim_home_address(object, (uint64_t)off), len, false);
	memset(buf, 0, len);
	return (ssize_t)len;
}

static ssize_t home_write(struct hy_device *dev, int64_t object, const void *buf, size_t len,
			  off_t off)
{
	(void)buf;
	hy_sim_disk_serve(dev->priv, hy_sim_home_address(object, (uint64_t)off), len, true);
	return (ssize_t)len;
}

static int home_getattr(struct hy_device *dev, int64_t object, struct hy_device_attr *out)
{
	(void)dev;
	(void)object;
	out->stamp = 1;
	out->mtime_ns = 1;
	out->size = UINT64_C(1) << 56; /* every block of a trace lies inside */
	return 0;
}

static int home_set_mtime(struct hy_device *dev, int64_t object, int64_t mtime_ns)
{
	(void)dev;
	(void)object;
	(void)mtime_ns;
	return 0;
}

static int home_sync(struct hy_device *dev, int64_t object, bool data_only)
{
	(void)dev;
	(void)object;
	(void)data_only;
	return 0;
}

static int home_addresses(struct hy_device *dev, int64_t object, const uint64_t *offsets, size_t n,
			  uint64_t *out)
{
	(void)dev;
	for (size_t i = 0; i < n; i++)
		out[i] = hy_sim_home_address(object, offsets[i]);
	return 0;
}

/* No writable(), hold() or close_object(): an object is a number, its own
 * writer, and nothing to close; no destroy: the disk is the caller's. */
static const struct hy_device_ops home_ops = {
	.read = home_read,
	.write = home_write,
	.getattr = home_getattr,
	.set_mtime = home_set_mtime,
	.sync = home_sync,
	.addresses = home_addresses,
};

int hy_sim_home_new(struct hy_sim_disk *disk, struct hy_device **out)
{
	return hy_device_new("sim-home", &home_ops, disk, out);
}
