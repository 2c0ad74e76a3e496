/*
 * emuvfs.h - the daemon's SQLite databases on the emulated disk (emulate=).
 *
 * What it is for: on a real disk the daemon's own state I/O (the
 * profiler's access log, the state database, their write-ahead logs and
 * journals, in the state folder) seeks like the files' does, and competes
 * with it for the head. Under emulate= this SQLite VFS shim, registered as
 * the process's default, forwards every call to the VFS that was the
 * default before (fs/main.c's "hybridfs-fd") and charges each file read and
 * write to the mount's emulation (device.h, hy_device_emulation_charge())
 * at the file's real place, as a backing file's request is: a read the page
 * cache serves whole costs nothing. Temporary files and the -shm index
 * (memory SQLite maps, not read or written through the VFS) are not
 * charged. A shim, rather than charging inside the connections' callers,
 * because every database of the daemon (lib/state.c, fs/profiler.c,
 * fs/identity.c, fs/policy_glue.c, reconfig/, analyzer/) opens through the
 * default VFS, and the page reads that matter happen inside SQLite.
 *
 * Each charged file has a read-only descriptor of the shim's own, for its
 * FIEMAP map and the page-cache probe (SQLite's is not reachable through
 * the VFS interface). A main database's is kept until the process ends
 * and shared by its connections: closing any descriptor of a file drops
 * the process's POSIX locks on it, which SQLite holds on main databases
 * (never on journals and write-ahead logs, whose descriptors are closed
 * with them).
 *
 * Who calls it: fs/main.c, hy_emuvfs_install() once after its own VFS and
 * before any database is opened, hy_emuvfs_detach() before the emulation is
 * freed; the unit tests. Memory: static (the VFS, the descriptors of main
 * databases); each open file's part lies in SQLite's sqlite3_file. Locks:
 * one mutex for the main databases' descriptors, taken at open.
 */
#ifndef HYBRIDFS_EMUVFS_H
#define HYBRIDFS_EMUVFS_H

#include <stddef.h>

struct hy_device_emulation;

/* Registers the shim over the current default VFS as the new default,
 * charging @emulation. Once a process. 0, or -ENOSYS / -ENOMEM with @why. */
int hy_emuvfs_install(struct hy_device_emulation *emulation, char *why, size_t why_size);
/* No more charges (the connections still work): before @emulation is
 * freed, once no request is served. */
void hy_emuvfs_detach(void);

#endif
