/*
 * units.h - sizes as people write them, for options and commands.
 *
 * What it is for: mount options (bopt_size=, reorg_rate=) and hybridctl
 * arguments (--capacity) take sizes in one syntax: a whole number of
 * bytes, or with a binary suffix K, M, G or T (either case).
 *
 * Who calls it: lib/options.c, device/devmodel.c (model settings), ctl/;
 * the unit tests.
 * Memory and locks: none.
 */
#ifndef HYBRIDFS_UNITS_H
#define HYBRIDFS_UNITS_H

#include <stdbool.h>
#include <stdint.h>

/* "1G", "512M", "4096K", "1073741824" (0 only with @allow_zero): bytes in
 * @out. Returns 0, or -EINVAL for anything else (signs, spaces, other
 * suffixes, overflow). */
int hy_units_parse_size(const char *text, bool allow_zero, uint64_t *out);

#endif
