/* fuzz_bopt.c - libFuzzer target for the BOPT header (borg/bopt.c), the
 * first block of BORG's optimized region, as a mount reads it.
 *
 * An input is the start of a BOPT file (seeds in
 * tests/fuzz/corpus/fuzz_bopt/ are real headers made by the code). Each is
 *
 *   1. decoded (hy_bopt_decode()); a good header must encode and decode to
 *      the same, and its regions must fit the total;
 *   2. written to a file and opened for no mount and for a mount's uuid
 *      (hy_bopt_open()); an open BOPT gets a new generation and the clean
 *      flag written (the header updates a mount makes) and must still
 *      open after them;
 *   3. written again and made a new BOPT over (hy_bopt_create() for a
 *      mount, not forced): what is there decides, refused or made.
 *
 * As for the cache store, byte 4095 of the header block (zero in the
 * format, not read by the decoder) tells this target to help past the
 * checksum: bit 0 recomputes it before the file is written, bit 1 extends
 * the file (sparse) to the size the header claims, when at most 64 MiB.
 *
 * Files live in a private folder (fuzz_common.h), removed after each
 * input. Built and run by tests/fuzz/run.sh.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "hybridfs/bopt.h"
#include "hybridfs/log.h"
#include "hybridfs/ondisk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_UUID    "0f6b1a52-8a3e-4c7e-9d51-2b7c4e1d9a01"
#define CTL	     4095
#define FIX_SUM	     0x01
#define EXTEND	     0x02
#define EXTEND_MAX   (64ull << 20)
#define OFF_TOTAL    64
#define OFF_CHECKSUM 96

static char path[300];

static void check_decode(const unsigned char *block)
{
	unsigned char again[HY_BOPT_BLOCK];
	struct hy_bopt_header h, h2;
	char why[256];

	why[0] = '\0';
	if (hy_bopt_decode(block, &h, why, sizeof(why)) < 0) {
		if (!why[0])
			abort();
		return;
	}
	if (h.read_blocks < 1 || h.write_blocks < 1 ||
	    h.total_blocks != 1 + h.read_blocks + h.write_blocks || !h.uuid[0])
		abort();
	hy_bopt_encode(&h, again);
	if (hy_bopt_decode(again, &h2, why, sizeof(why)) < 0 || memcmp(&h, &h2, sizeof(h)) != 0)
		abort();
}

static void open_and_update(const char *uuid)
{
	struct hy_bopt *b;
	uint64_t gen;
	char why[512];

	why[0] = '\0';
	if (hy_bopt_open(path, uuid, &b, why, sizeof(why)) < 0) {
		if (!why[0])
			abort();
		return;
	}
	if (hy_bopt_write_offset(b, b->header.write_blocks - 1) + HY_BOPT_BLOCK !=
	    b->header.total_blocks * HY_BOPT_BLOCK)
		abort(); /* the last write-buffer block ends the BOPT */
	gen = b->header.generation + 1;
	if (hy_bopt_set_generation(b, gen) < 0 || hy_bopt_set_clean(b, false) < 0)
		abort(); /* a tmpfs file takes a 4096-byte pwrite */
	hy_bopt_close(b);
	/* what was written reads back */
	if (hy_bopt_open(path, uuid, &b, why, sizeof(why)) < 0 || b->header.generation != gen ||
	    b->header.clean_shutdown)
		abort();
	hy_bopt_close(b);
}

/* hy_bopt_create() over the file: refused (it is not this mount's BOPT)
 * with a message, or made (it was, or held nothing). */
static void create_over(void)
{
	char why[512];

	why[0] = '\0';
	if (hy_bopt_create(path, FUZZ_UUID, 3 * HY_BOPT_BLOCK, HY_BOPT_BLOCK, false, why,
			   sizeof(why)) < 0 &&
	    !why[0])
		abort();
}

/* Writes the BOPT file, extended when asked: 0 or -1. */
static int write_bopt(const unsigned char *buf, size_t size)
{
	uint64_t end;

	if (fuzz_write_file(path, buf, size) < 0)
		return -1;
	if (size > CTL && (buf[CTL] & EXTEND)) {
		end = hy_ondisk_get_le64(buf + OFF_TOTAL);
		if (end <= EXTEND_MAX / HY_BOPT_BLOCK && end * HY_BOPT_BLOCK > size &&
		    truncate(path, (off_t)(end * HY_BOPT_BLOCK)) < 0)
			return -1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char block[HY_BOPT_BLOCK];
	unsigned char *buf;

	if (!path[0]) {
		hy_log_init(HY_LOG_STDERR, LOG_CRIT, "fuzz_bopt");
		snprintf(path, sizeof(path), "%s/bopt", fuzz_tmpdir());
	}
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (size > CTL && (buf[CTL] & FIX_SUM))
		hy_ondisk_put_le64(buf + OFF_CHECKSUM, hy_ondisk_fnv1a64(buf, OFF_CHECKSUM));

	/* the decoder takes a whole block: a short input is zero-padded, as a
	 * read past the end of a short file gives it */
	memset(block, 0, sizeof(block));
	memcpy(block, buf, size < sizeof(block) ? size : sizeof(block));
	check_decode(block);

	if (write_bopt(buf, size) == 0)
		open_and_update(NULL);
	/* the open may have updated the file: the input again, for a mount */
	if (write_bopt(buf, size) == 0)
		open_and_update(FUZZ_UUID);
	/* a new BOPT over the input: the look at what is there decides */
	if (write_bopt(buf, size) == 0)
		create_over();
	unlink(path);
	free(buf);
	return 0;
}
