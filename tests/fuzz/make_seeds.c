/* make_seeds.c - makes the binary seeds of the cache store and BOPT fuzz
 * targets with the code itself (hy_cache_store_create(), hy_bopt_create()
 * and their journal and header updates), so that the seeds are real
 * stores and headers, not hand-made bytes.
 *
 * Run once by hand when a format changes, and the output committed:
 *
 *   tests/fuzz/run.sh --make-seeds BUILD_DIR
 *
 * (which builds this with the same sources as the targets and writes into
 * tests/fuzz/corpus/). Made stores are shrunk to keep the corpus small:
 * the journal is cut to one block (64 records, the superblock rewritten to
 * say so) and the file ends after it, before the data lines; the targets
 * extend it again when a seed's control byte asks (see fuzz_cache_store.c).
 * Generations are random, so two runs make different bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "hybridfs/bopt.h"
#include "hybridfs/cache_store.h"
#include "hybridfs/log.h"
#include "hybridfs/ondisk.h"

#define UUID	"0f6b1a52-8a3e-4c7e-9d51-2b7c4e1d9a01"
#define CTL	4095
#define FIX_ALL 0x1f /* fuzz_cache_store.c: every checksum, and extend */

static const char *out_dir;

static void die(const char *what, const char *why) __attribute__((noreturn));

static void die(const char *what, const char *why)
{
	fprintf(stderr, "make_seeds: %s: %s\n", what, why);
	exit(1);
}

static unsigned char *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf;
	long n;

	if (!f || fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0)
		die(path, "cannot read");
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		die(path, "cannot read");
	fclose(f);
	*size = (size_t)n;
	return buf;
}

static void emit(const char *target, const char *name, const unsigned char *buf, size_t size)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s/%s", out_dir, target, name);
	if (fuzz_write_file(path, buf, size) < 0)
		die(path, "cannot write");
	printf("%s: %zu bytes\n", path, size);
}

/* The store at @path, its journal cut to one block and its data lines
 * dropped, with control byte @ctl, as seed @name. */
static void emit_store(const char *path, const char *name, unsigned char ctl)
{
	struct hy_cache_store_header h;
	unsigned char *buf;
	char why[256];
	size_t size;

	buf = slurp(path, &size);
	if (hy_cache_store_decode(buf, &h, why, sizeof(why)) < 0)
		die(path, why);
	h.journal_size = HY_CACHE_STORE_BLOCK;
	h.data_offset = h.journal_offset + h.journal_size;
	hy_cache_store_encode(&h, buf);
	buf[CTL] = ctl;
	emit("fuzz_cache_store", name, buf, (size_t)h.data_offset);
	free(buf);
}

static int no_lines(void *arg, uint64_t line, const struct hy_cache_line *l)
{
	(void)arg, (void)line, (void)l;
	return 0;
}

static void append(struct hy_cache_store *s, enum hy_cache_journal_type type, uint64_t line,
		   uint8_t valid, uint8_t dirty)
{
	struct hy_cache_journal_record r = {
		.type = type,
		.line = line,
		.file_id = 40 + line,
		.block = line * 3,
		.valid = valid,
		.dirty = dirty,
		.tail = dirty ? (uint16_t)(100 * line % HY_CACHE_LINE_SIZE) : 0,
	};

	if (hy_cache_store_journal_append(s, &r) < 0)
		die("append", "failed");
}

static void cache_seeds(const char *dir)
{
	struct hy_cache_store *s;
	char path[512], why[512];

	snprintf(path, sizeof(path), "%s/store", dir);
	/* 128 KiB: 11 lines beside a 64 KiB journal */
	if (hy_cache_store_create(path, "", 128 * 1024, HY_CACHE_LINE_SIZE, false, why,
				  sizeof(why)) < 0)
		die("create", why);
	emit_store(path, "new-unclaimed", 0);

	if (hy_cache_store_open(path, NULL, &s, why, sizeof(why)) < 0 ||
	    hy_cache_store_claim(s, UUID, why, sizeof(why)) < 0 ||
	    hy_cache_store_load(s, no_lines, NULL, NULL, why, sizeof(why)) < 0)
		die("open", why);
	append(s, HY_CJ_FILL, 0, 0xff, 0x0f);
	append(s, HY_CJ_FILL, 3, 0x01, 0x01);
	append(s, HY_CJ_FILL, 10, 0xf0, 0x00);
	append(s, HY_CJ_MASKS, 3, 0x03, 0x00);
	append(s, HY_CJ_FREE, 10, 0, 0);
	hy_cache_store_close(s);
	emit_store(path, "journal", FIX_ALL);

	/* a checkpoint: copy B in use, line records written, then more records */
	if (hy_cache_store_open(path, UUID, &s, why, sizeof(why)) < 0 ||
	    hy_cache_store_load(s, no_lines, NULL, NULL, why, sizeof(why)) < 0)
		die("reopen", why);
	append(s, HY_CJ_FILL, 5, 0xff, 0xff);
	if (hy_cache_store_checkpoint(s, why, sizeof(why)) < 0)
		die("checkpoint", why);
	append(s, HY_CJ_MASKS, 5, 0xff, 0x00);
	append(s, HY_CJ_FILL, 1, 0x80, 0x80);
	if (hy_cache_store_set_clean(s, false) < 0)
		die("set_clean", "failed");
	hy_cache_store_close(s);
	emit_store(path, "checkpointed", FIX_ALL);
	unlink(path);
}

static void bopt_seeds(const char *dir)
{
	struct hy_bopt *b;
	unsigned char *buf;
	char path[512], why[512];
	size_t size;

	snprintf(path, sizeof(path), "%s/bopt", dir);
	/* the smallest: header, one read block, one write block */
	if (hy_bopt_create(path, UUID, 3 * HY_BOPT_BLOCK, HY_BOPT_BLOCK, false, why, sizeof(why)) <
	    0)
		die("bopt create", why);
	buf = slurp(path, &size);
	emit("fuzz_bopt", "new-whole", buf, size);
	buf[CTL] = 0x03; /* fuzz_bopt.c: fix the checksum, extend */
	emit("fuzz_bopt", "new-header", buf, HY_BOPT_BLOCK);
	free(buf);

	if (hy_bopt_open(path, UUID, &b, why, sizeof(why)) < 0)
		die("bopt open", why);
	if (hy_bopt_set_generation(b, 5) < 0 || hy_bopt_set_clean(b, false) < 0)
		die("bopt update", "failed");
	hy_bopt_close(b);
	buf = slurp(path, &size);
	buf[CTL] = 0x03;
	emit("fuzz_bopt", "used-header", buf, HY_BOPT_BLOCK);
	emit("fuzz_bopt", "short", buf, HY_BOPT_HEADER_SIZE);
	free(buf);
	unlink(path);
}

int main(int argc, char **argv)
{
	const char *dir;

	if (argc != 2) {
		fprintf(stderr, "usage: make_seeds CORPUS_DIR\n");
		return 2;
	}
	out_dir = argv[1];
	hy_log_init(HY_LOG_STDERR, LOG_ERR, "make_seeds");
	dir = fuzz_tmpdir();
	cache_seeds(dir);
	bopt_seeds(dir);
	return 0;
}
