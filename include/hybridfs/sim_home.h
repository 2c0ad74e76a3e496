/*
 * sim_home.h - the simulators' home: a trace's devices as the files of one
 * backing device over a disk model, keeping no data.
 *
 * What it is for: the daemon's stack (stack.h) runs over hy_device objects;
 * the simulators give it this one as home. Its objects are the trace's
 * devices plus one (so that no object is 0: a file id), device d's byte b
 * lying at d * 2^40 + b on the disk (replay.h's addresses, PORE's zones
 * through its addresses()). Reads return zeros; every read and write is
 * served by the disk model the struct hy_sim_disk holds now (none:
 * untimed), whose busy time it sums. Nobody changes a trace's devices
 * behind the mount: one stamp for ever, and every block inside the size.
 *
 * Who calls it: sim/full.c (the whole cache's home), sim/borg.c (BORG's
 * home; its BOPT device charges the same disk through hy_sim_disk_serve).
 *
 * Memory: the device is hy_device_free()'s; the struct hy_sim_disk is the
 * caller's and must outlive it. Threads: none (the simulators run one).
 */
#ifndef HYBRIDFS_SIM_HOME_H
#define HYBRIDFS_SIM_HOME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hy_device;
struct hy_devmodel;

struct hy_sim_disk {
	struct hy_devmodel *model; /* the disk served over now; NULL: untimed */
	double busy_ms;		   /* service times summed */
};

/* Serves [@addr, @addr + @len) on the disk (nothing without a model). */
void hy_sim_disk_serve(struct hy_sim_disk *disk, uint64_t addr, size_t len, bool write);

/* Where byte @off of home object @object lies on the disk. */
uint64_t hy_sim_home_address(int64_t object, uint64_t off);

/* The home device over @disk: 0 or -ENOMEM. */
int hy_sim_home_new(struct hy_sim_disk *disk, struct hy_device **out);

#endif
