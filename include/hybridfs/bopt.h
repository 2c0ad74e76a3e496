/*
 * bopt.h - the BOPT: BORG's optimized region, one preallocated file or
 * partition that holds hot blocks in access order.
 *
 * Where it is: `bopt=PATH|UUID=...|LABEL=...|PARTUUID=...|PARTLABEL=...`
 * (an absolute path; the tags resolved through libblkid), by default a file
 * in the state folder, beside the backing directory on the same disk, as
 * BORG has it. Its size is `bopt_size=`; a device is used whole.
 *
 * Format (all integers little-endian; blocks of 4096 bytes):
 *
 *   block 0: the header
 *     offset  size  field
 *     0       8     magic "HYBOPT\0\1"
 *     8       4     format version (HY_BOPT_VERSION)
 *     12      4     header size in bytes (HY_BOPT_HEADER_SIZE)
 *     16      40    mount uuid, the state database's, as text, NUL-padded
 *     56      8     generation: the plan the read region holds (0: none)
 *     64      8     total blocks, header included
 *     72      8     read region blocks (they start at block 1)
 *     80      8     write buffer blocks (they follow the read region)
 *     88      4     flags: bit 0 clean shutdown
 *     92      4     reserved, 0
 *     96      8     FNV-1a 64 of bytes 0..95
 *     104..4095     zero
 *   blocks 1 .. R:          the read region, in plan order
 *   blocks R+1 .. R+W:      the write buffer
 *
 * Opening checks everything: magic (not a BOPT: refused, naming what
 * libblkid finds there if anything), version (newer: refused), checksum
 * (damaged: refused), uuid (another mount's: refused), sizes (against the
 * file's or device's size). Each refusal is -EUCLEAN / -EPROTO / -EEXIST
 * with a message naming the file and the problem; nothing is written to a
 * BOPT that failed a check.
 *
 * Who calls it: reconfig/borg.c at mount (and borg_reconfig.c for a plan) (it hands the indirector the
 * BOPT's device); fs/main.c before mounting (hy_bopt_resolve for bopt=,
 * and bopt_force's create, open and new generation); the unit tests and
 * the fuzz target (tests/fuzz/fuzz_bopt.c).
 *
 * Memory: struct hy_bopt owns its descriptor and its device (device.h:
 * object 0, offsets in bytes from the start of the BOPT). Locks: header
 * updates are serialized by the caller (the reconfigurator); reads and
 * writes through the device are pread/pwrite.
 */
#ifndef HYBRIDFS_BOPT_H
#define HYBRIDFS_BOPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HY_BOPT_MAGIC "HYBOPT\0\1"
#define HY_BOPT_VERSION 1
#define HY_BOPT_HEADER_SIZE 104
#define HY_BOPT_BLOCK 4096

struct hy_device;

struct hy_bopt_header {
	uint32_t version;
	char uuid[40];
	uint64_t generation;
	uint64_t total_blocks, read_blocks, write_blocks;
	bool clean_shutdown;
};

struct hy_bopt {
	int fd;
	char *path;
	struct hy_bopt_header header;
	struct hy_device *device;
};

/* Resolves `bopt=`'s value: an absolute path as it is, "UUID=...",
 * "LABEL=...", "PARTUUID=..." or "PARTLABEL=..." through libblkid (the last
 * two name a partition by its table entry, so an empty one can be named).
 * Returns 0 with the path in @buf, -EINVAL for anything else (a relative
 * path: likely a mistyped tag), or -ENOENT naming what was not found. */
int hy_bopt_resolve(const char *spec, char *buf, size_t size, char *why, size_t why_size);

/* Makes a BOPT: a new file of @size bytes (preallocated with fallocate,
 * refusing to replace an existing file unless it is already this mount's
 * BOPT), or a block device's whole size when @path is one (refused if
 * libblkid finds a filesystem or other signature on it, unless @force).
 * @read_bytes of it (0 for a device: all but the header and one block) are
 * the read region, the rest (less the header) the
 * write buffer. Returns 0 or a negative errno with a message. */
int hy_bopt_create(const char *path, const char *uuid, uint64_t size, uint64_t read_bytes,
		   bool force, char *why, size_t why_size);

/* Opens and checks a BOPT (see above) for the mount @uuid. */
int hy_bopt_open(const char *path, const char *uuid, struct hy_bopt **out, char *why,
		 size_t why_size);

/* Writes a new generation (or clean-shutdown flag) into the header durably
 * (pwrite then fdatasync). Returns 0 or a negative errno. */
int hy_bopt_set_generation(struct hy_bopt *bopt, uint64_t generation);
int hy_bopt_set_clean(struct hy_bopt *bopt, bool clean);

/* Byte offset of read-region block @n and write-buffer block @n. */
uint64_t hy_bopt_read_offset(const struct hy_bopt *bopt, uint64_t n);
uint64_t hy_bopt_write_offset(const struct hy_bopt *bopt, uint64_t n);

void hy_bopt_close(struct hy_bopt *bopt);

/* The header's encoding, for the tests and the fuzzer: 0 or -EUCLEAN /
 * -EPROTO with a message. @buf holds HY_BOPT_BLOCK bytes. */
void hy_bopt_encode(const struct hy_bopt_header *h, unsigned char *buf);
int hy_bopt_decode(const unsigned char *buf, struct hy_bopt_header *h, char *why, size_t why_size);

#endif
