/*
 * mount_name.h - a person's name for a mount known by its uuid.
 *
 * What it is for: the cache store's superblock and the BOPT's header know
 * the mount they belong to by its uuid only, and a refusal that says "the
 * cache store of mount 5e8d..., not of mount 3d9f..." tells nobody which
 * directories those are. hy_mount_name_describe() gives
 *   mount UUID ("BACKING" on "MOUNTPOINT")          it runs (the registry,
 *                                                   runtime.h)
 *   mount UUID ("BACKING", not mounted; state in "DIR")
 *                      its state folder is the folder of @near (a file's
 *                      path, or NULL: a default store or BOPT lies in its
 *                      mount's state folder) or one of the default state
 *                      folders, whose database says the uuid
 *   mount UUID (not mounted; its state folder is not in "ROOT")
 *
 * Who calls it: nobody directly: fs/main.c installs it as the mount namer
 * of lib/ondisk.c (hy_ondisk_set_mount_namer), through which the cache
 * store's, the BOPT's and ondisk.c's refusals name mounts. Programs that
 * do not install it (the unit tests, the fuzz targets) keep "mount UUID",
 * and never reach the registry or another mount's database.
 *
 * Cost: it reads the registry and at most each default state folder's
 * database, read-only: for refusals, never for a request.
 * Memory: nothing is kept. Locks: none (SQLite's own, read-only).
 */
#ifndef HYBRIDFS_MOUNT_NAME_H
#define HYBRIDFS_MOUNT_NAME_H

#include <stddef.h>

void hy_mount_name_describe(const char *uuid, const char *near, char *out, size_t size);

#endif
