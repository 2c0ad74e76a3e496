/* test_bopt.c - the BOPT: header encoding and its byte layout, creation and
 * opening, offsets, I/O through its device, durable header updates, every
 * refusal, and resolution of bopt= values. Only regular files in a
 * temporary directory are used: no block device is ever opened. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hybridfs/bopt.h"
#include "hybridfs/device.h"
#include "suites.h"

#define UUID_A "0f6b1a52-8a3e-4c7e-9d51-2b7c4e1d9a01"
#define UUID_B "7d2e9c40-1b5f-4e8a-a3c6-5f0d8e2b7c12"
#define MIB    (1024 * 1024)

static char why[1024];

static uint64_t le(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t fnv(const unsigned char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

static void sample_header(struct hy_bopt_header *h)
{
	memset(h, 0, sizeof(*h));
	h->version = HY_BOPT_VERSION;
	snprintf(h->uuid, sizeof(h->uuid), "%s", UUID_A);
	h->generation = 0x0102030405060708ULL;
	h->total_blocks = 100;
	h->read_blocks = 60;
	h->write_blocks = 39;
	h->clean_shutdown = true;
}

static int write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int ok;

	if (fd < 0)
		return -1;
	ok = write(fd, data, len) == (ssize_t)len;
	return close(fd) == 0 && ok ? 0 : -1;
}

static void test_encode_layout(void)
{
	static unsigned char buf[HY_BOPT_BLOCK];
	struct hy_bopt_header h, back;

	sample_header(&h);
	memset(buf, 0xaa, sizeof(buf));
	hy_bopt_encode(&h, buf);
	CU_ASSERT_EQUAL(memcmp(buf, "HYBOPT\0\1", 8), 0);
	CU_ASSERT_EQUAL(le(buf + 8, 4), HY_BOPT_VERSION);
	CU_ASSERT_EQUAL(le(buf + 12, 4), HY_BOPT_HEADER_SIZE);
	CU_ASSERT_EQUAL(memcmp(buf + 16, UUID_A, strlen(UUID_A)), 0);
	for (size_t i = 16 + strlen(UUID_A); i < 56; i++)
		CU_ASSERT_EQUAL(buf[i], 0);
	/* little-endian whatever the host */
	CU_ASSERT_EQUAL(buf[56], 0x08);
	CU_ASSERT_EQUAL(buf[63], 0x01);
	CU_ASSERT_EQUAL(le(buf + 56, 8), 0x0102030405060708ULL);
	CU_ASSERT_EQUAL(le(buf + 64, 8), 100);
	CU_ASSERT_EQUAL(le(buf + 72, 8), 60);
	CU_ASSERT_EQUAL(le(buf + 80, 8), 39);
	CU_ASSERT_EQUAL(le(buf + 88, 4), 1);
	CU_ASSERT_EQUAL(le(buf + 92, 4), 0);
	CU_ASSERT_EQUAL(le(buf + 96, 8), fnv(buf, 96));
	for (size_t i = HY_BOPT_HEADER_SIZE; i < HY_BOPT_BLOCK; i++)
		CU_ASSERT_EQUAL_FATAL(buf[i], 0);

	CU_ASSERT_EQUAL(hy_bopt_decode(buf, &back, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(back.version, h.version);
	CU_ASSERT_STRING_EQUAL(back.uuid, UUID_A);
	CU_ASSERT_EQUAL(back.generation, h.generation);
	CU_ASSERT_EQUAL(back.total_blocks, 100);
	CU_ASSERT_EQUAL(back.read_blocks, 60);
	CU_ASSERT_EQUAL(back.write_blocks, 39);
	CU_ASSERT_TRUE(back.clean_shutdown);

	h.clean_shutdown = false;
	hy_bopt_encode(&h, buf);
	CU_ASSERT_EQUAL(le(buf + 88, 4), 0);
	CU_ASSERT_EQUAL(hy_bopt_decode(buf, &back, why, sizeof(why)), 0);
	CU_ASSERT_FALSE(back.clean_shutdown);
}

static void test_decode_refusals(void)
{
	static unsigned char buf[HY_BOPT_BLOCK];
	struct hy_bopt_header h, back;

	sample_header(&h);
	/* every byte of the checksummed part matters */
	for (size_t i = 8; i < 104; i++) {
		hy_bopt_encode(&h, buf);
		buf[i] ^= 0x40;
		if (i >= 8 && i < 12)
			continue; /* the version: see below */
		CU_ASSERT_EQUAL(hy_bopt_decode(buf, &back, why, sizeof(why)), -EUCLEAN);
		CU_ASSERT_PTR_NOT_NULL(strstr(why, "damaged"));
	}
	memset(buf, 0, sizeof(buf));
	CU_ASSERT_EQUAL(hy_bopt_decode(buf, &back, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "not a hybridfs BOPT"));
	h.version = 2;
	hy_bopt_encode(&h, buf);
	CU_ASSERT_EQUAL(hy_bopt_decode(buf, &back, why, sizeof(why)), -EPROTO);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "version 2"));
	/* sizes that do not add up, with a valid checksum */
	sample_header(&h);
	h.write_blocks = 40;
	hy_bopt_encode(&h, buf);
	CU_ASSERT_EQUAL(hy_bopt_decode(buf, &back, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "do not add up"));
	sample_header(&h);
	h.read_blocks = 0;
	h.write_blocks = 99;
	hy_bopt_encode(&h, buf);
	CU_ASSERT_EQUAL(hy_bopt_decode(buf, &back, why, sizeof(why)), -EUCLEAN);
	sample_header(&h);
	h.total_blocks = UINT64_MAX;
	h.read_blocks = UINT64_MAX - 2;
	h.write_blocks = 1;
	hy_bopt_encode(&h, buf);
	CU_ASSERT_EQUAL(hy_bopt_decode(buf, &back, why, sizeof(why)), -EUCLEAN);
}

static void test_create_open(void)
{
	char *tmp = hy_test_tmpdir(), *path = hy_test_path_in(tmp, "bopt");
	struct hy_bopt *bopt = NULL;
	struct stat st;

	/* 10 MiB and a bit, 4 MiB and a bit of read region: rounded down */
	CU_ASSERT_EQUAL_FATAL(
		hy_bopt_create(path, UUID_A, 10 * MIB + 100, 4 * MIB + 5, false, why, sizeof(why)),
		0);
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 10 * MIB);
	CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
	CU_ASSERT_EQUAL_FATAL(hy_bopt_open(path, UUID_A, &bopt, why, sizeof(why)), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(bopt->device);
	CU_ASSERT_STRING_EQUAL(bopt->path, path);
	CU_ASSERT_TRUE(bopt->fd >= 0);
	CU_ASSERT_EQUAL(bopt->header.version, HY_BOPT_VERSION);
	CU_ASSERT_STRING_EQUAL(bopt->header.uuid, UUID_A);
	CU_ASSERT_EQUAL(bopt->header.generation, 0);
	CU_ASSERT_EQUAL(bopt->header.total_blocks, 2560);
	CU_ASSERT_EQUAL(bopt->header.read_blocks, 1024);
	CU_ASSERT_EQUAL(bopt->header.write_blocks, 2560 - 1 - 1024);
	CU_ASSERT_TRUE(bopt->header.clean_shutdown);
	CU_ASSERT_EQUAL(hy_bopt_read_offset(bopt, 0), 4096);
	CU_ASSERT_EQUAL(hy_bopt_read_offset(bopt, 7), 8 * 4096);
	CU_ASSERT_EQUAL(hy_bopt_write_offset(bopt, 0), (1 + 1024) * 4096);
	CU_ASSERT_EQUAL(hy_bopt_write_offset(bopt, 3), (1 + 1024 + 3) * 4096ULL);
	hy_bopt_close(bopt);
	hy_bopt_close(NULL);

	/* this mount's BOPT may be made again, at another size */
	CU_ASSERT_EQUAL(hy_bopt_create(path, UUID_A, 2 * MIB, MIB, false, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 2 * MIB);
	CU_ASSERT_EQUAL_FATAL(hy_bopt_open(path, UUID_A, &bopt, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(bopt->header.read_blocks, 256);
	CU_ASSERT_EQUAL(bopt->header.write_blocks, 255);
	hy_bopt_close(bopt);
	/* ... but not another mount's */
	CU_ASSERT_EQUAL(hy_bopt_create(path, UUID_B, 2 * MIB, MIB, false, why, sizeof(why)),
			-EEXIST);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, UUID_A));
	hy_test_rmtree(tmp);
	free(path);
	free(tmp);
}

static void test_create_sizes(void)
{
	char *tmp = hy_test_tmpdir(), *path = hy_test_path_in(tmp, "bopt");
	struct stat st;

	/* no read region */
	CU_ASSERT_EQUAL(hy_bopt_create(path, UUID_A, MIB, 4095, false, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "4095"));
	/* no write buffer */
	CU_ASSERT_EQUAL(hy_bopt_create(path, UUID_A, MIB, MIB - 4096, false, why, sizeof(why)),
			-EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "1048576"));
	CU_ASSERT_EQUAL(hy_bopt_create(path, UUID_A, 3 * 4096 - 1, 4096, false, why, sizeof(why)),
			-EINVAL);
	CU_ASSERT_EQUAL(stat(path, &st), -1);
	/* the smallest: header, one read block, one write block */
	CU_ASSERT_EQUAL(hy_bopt_create(path, UUID_A, 3 * 4096, 4096, false, why, sizeof(why)), 0);
	/* a uuid that does not fit the field */
	CU_ASSERT_EQUAL(hy_bopt_create(path, "0123456789012345678901234567890123456789", MIB, 4096,
				       false, why, sizeof(why)),
			-EINVAL);
	hy_test_rmtree(tmp);
	free(path);
	free(tmp);
}

static void test_device_io(void)
{
	char *tmp = hy_test_tmpdir(), *path = hy_test_path_in(tmp, "bopt");
	static unsigned char out[HY_BOPT_BLOCK], in[HY_BOPT_BLOCK];
	struct hy_device_stats stats;
	struct hy_bopt *bopt;

	CU_ASSERT_EQUAL_FATAL(hy_bopt_create(path, UUID_A, MIB, 64 * 4096, false, why, sizeof(why)),
			      0);
	CU_ASSERT_EQUAL_FATAL(hy_bopt_open(path, UUID_A, &bopt, why, sizeof(why)), 0);
	/* through the device, read back from the file */
	memset(out, 'r', sizeof(out));
	CU_ASSERT_EQUAL(hy_device_write(bopt->device, 0, out, sizeof(out),
					(off_t)hy_bopt_read_offset(bopt, 5)),
			HY_BOPT_BLOCK);
	memset(out, 'w', sizeof(out));
	CU_ASSERT_EQUAL(hy_device_write(bopt->device, 0, out, sizeof(out),
					(off_t)hy_bopt_write_offset(bopt, 2)),
			HY_BOPT_BLOCK);
	CU_ASSERT_EQUAL(hy_device_sync(bopt->device, 0, true), 0);
	CU_ASSERT_EQUAL(hy_test_pread(path, in, sizeof(in), 6 * 4096), 0);
	CU_ASSERT_EQUAL(in[0], 'r');
	CU_ASSERT_EQUAL(in[4095], 'r');
	CU_ASSERT_EQUAL(hy_test_pread(path, in, sizeof(in), (1 + 64 + 2) * 4096), 0);
	CU_ASSERT_EQUAL(in[0], 'w');
	CU_ASSERT_EQUAL(in[4095], 'w');
	/* written to the file, read through the device */
	memset(out, 'x', sizeof(out));
	CU_ASSERT_EQUAL(hy_test_pwrite(path, out, sizeof(out), (1 + 64 + 7) * 4096), 0);
	CU_ASSERT_EQUAL(hy_device_read(bopt->device, 0, in, sizeof(in),
				       (off_t)hy_bopt_write_offset(bopt, 7)),
			HY_BOPT_BLOCK);
	CU_ASSERT_EQUAL(memcmp(in, out, sizeof(in)), 0);
	/* the header is where it was */
	CU_ASSERT_EQUAL(hy_device_read(bopt->device, 0, in, sizeof(in), 0), HY_BOPT_BLOCK);
	CU_ASSERT_EQUAL(memcmp(in, HY_BOPT_MAGIC, 8), 0);
	hy_device_get_stats(bopt->device, &stats);
	CU_ASSERT_EQUAL(stats.writes, 2);
	CU_ASSERT_EQUAL(stats.reads, 2);
	CU_ASSERT_EQUAL(stats.bytes_written, 2 * HY_BOPT_BLOCK);
	CU_ASSERT_EQUAL(stats.errors, 0);
	hy_bopt_close(bopt);
	hy_test_rmtree(tmp);
	free(path);
	free(tmp);
}

static void test_header_updates(void)
{
	char *tmp = hy_test_tmpdir(), *path = hy_test_path_in(tmp, "bopt");
	struct hy_bopt *bopt;

	CU_ASSERT_EQUAL_FATAL(hy_bopt_create(path, UUID_A, MIB, 4096, false, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_bopt_open(path, UUID_A, &bopt, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_bopt_set_generation(bopt, 42), 0);
	CU_ASSERT_EQUAL(bopt->header.generation, 42);
	CU_ASSERT_EQUAL(hy_bopt_set_clean(bopt, false), 0);
	CU_ASSERT_FALSE(bopt->header.clean_shutdown);
	hy_bopt_close(bopt);
	CU_ASSERT_EQUAL_FATAL(hy_bopt_open(path, UUID_A, &bopt, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(bopt->header.generation, 42);
	CU_ASSERT_FALSE(bopt->header.clean_shutdown);
	CU_ASSERT_EQUAL(bopt->header.read_blocks, 1);
	CU_ASSERT_EQUAL(hy_bopt_set_clean(bopt, true), 0);
	CU_ASSERT_EQUAL(hy_bopt_set_generation(bopt, 43), 0);
	hy_bopt_close(bopt);
	CU_ASSERT_EQUAL_FATAL(hy_bopt_open(path, UUID_A, &bopt, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(bopt->header.generation, 43);
	CU_ASSERT_TRUE(bopt->header.clean_shutdown);
	hy_bopt_close(bopt);
	hy_test_rmtree(tmp);
	free(path);
	free(tmp);
}

static void test_open_refusals(void)
{
	char *tmp = hy_test_tmpdir(), *path = hy_test_path_in(tmp, "bopt"),
	     *other = hy_test_path_in(tmp, "other");
	static unsigned char buf[HY_BOPT_BLOCK], zeros[3 * HY_BOPT_BLOCK];
	static const char text[] = "this is a text file, not a BOPT\n";
	struct hy_bopt_header h;
	struct hy_bopt *bopt = NULL;

	CU_ASSERT_EQUAL_FATAL(hy_bopt_create(path, UUID_A, MIB, 4096, false, why, sizeof(why)), 0);
	/* another mount's */
	CU_ASSERT_EQUAL(hy_bopt_open(path, UUID_B, &bopt, why, sizeof(why)), -EEXIST);
	CU_ASSERT_PTR_NULL(bopt);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, UUID_A));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, UUID_B));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, path));
	/* a newer version */
	CU_ASSERT_EQUAL_FATAL(hy_test_pread(path, buf, sizeof(buf), 0), 0);
	CU_ASSERT_EQUAL_FATAL(hy_bopt_decode(buf, &h, why, sizeof(why)), 0);
	h.version = 2;
	hy_bopt_encode(&h, buf);
	CU_ASSERT_EQUAL_FATAL(hy_test_pwrite(path, buf, sizeof(buf), 0), 0);
	CU_ASSERT_EQUAL(hy_bopt_open(path, UUID_A, &bopt, why, sizeof(why)), -EPROTO);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "newer"));
	/* a flipped byte (in the generation) */
	h.version = 1;
	hy_bopt_encode(&h, buf);
	buf[60] ^= 1;
	CU_ASSERT_EQUAL_FATAL(hy_test_pwrite(path, buf, sizeof(buf), 0), 0);
	CU_ASSERT_EQUAL(hy_bopt_open(path, UUID_A, &bopt, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "damaged"));
	/* nothing was written to it: the byte is still flipped */
	CU_ASSERT_EQUAL(hy_test_pread(path, zeros, HY_BOPT_BLOCK, 0), 0);
	CU_ASSERT_EQUAL(memcmp(zeros, buf, HY_BOPT_BLOCK), 0);
	/* a truncated BOPT */
	hy_bopt_encode(&h, buf);
	CU_ASSERT_EQUAL_FATAL(hy_test_pwrite(path, buf, sizeof(buf), 0), 0);
	CU_ASSERT_EQUAL_FATAL(hy_bopt_open(path, UUID_A, &bopt, why, sizeof(why)), 0);
	hy_bopt_close(bopt);
	bopt = NULL;
	CU_ASSERT_EQUAL_FATAL(truncate(path, MIB - 4096), 0);
	CU_ASSERT_EQUAL(hy_bopt_open(path, UUID_A, &bopt, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "truncated"));
	CU_ASSERT_EQUAL_FATAL(truncate(path, 100), 0);
	CU_ASSERT_EQUAL(hy_bopt_open(path, UUID_A, &bopt, why, sizeof(why)), -EUCLEAN);
	/* zeros, text, nothing */
	memset(zeros, 0, sizeof(zeros));
	CU_ASSERT_EQUAL_FATAL(write_file(other, zeros, sizeof(zeros)), 0);
	CU_ASSERT_EQUAL(hy_bopt_open(other, UUID_A, &bopt, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "not a hybridfs BOPT"));
	CU_ASSERT_EQUAL_FATAL(write_file(other, text, strlen(text)), 0);
	CU_ASSERT_EQUAL(hy_bopt_open(other, UUID_A, &bopt, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "not a hybridfs BOPT"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, other));
	CU_ASSERT_EQUAL_FATAL(write_file(other, "", 0), 0);
	CU_ASSERT_EQUAL(hy_bopt_open(other, UUID_A, &bopt, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NULL(bopt);
	unlink(other);
	CU_ASSERT_EQUAL(hy_bopt_open(other, UUID_A, &bopt, why, sizeof(why)), -ENOENT);
	/* a directory */
	CU_ASSERT_TRUE(hy_bopt_open(tmp, UUID_A, &bopt, why, sizeof(why)) < 0);
	CU_ASSERT_PTR_NULL(bopt);
	hy_test_rmtree(tmp);
	free(path);
	free(other);
	free(tmp);
}

static void test_create_refuses_existing(void)
{
	char *tmp = hy_test_tmpdir(), *path = hy_test_path_in(tmp, "notes.txt");
	static const char text[] = "precious notes\n";
	char back[64];
	struct stat st;

	CU_ASSERT_EQUAL_FATAL(write_file(path, text, strlen(text)), 0);
	CU_ASSERT_EQUAL(hy_bopt_create(path, UUID_A, MIB, 4096, false, why, sizeof(why)), -EEXIST);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, path));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "not a hybridfs BOPT"));
	/* force is for block devices: a file is never replaced */
	CU_ASSERT_EQUAL(hy_bopt_create(path, UUID_A, MIB, 4096, true, why, sizeof(why)), -EEXIST);
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, (off_t)strlen(text));
	memset(back, 0, sizeof(back));
	CU_ASSERT_EQUAL(hy_test_pread(path, back, strlen(text), 0), 0);
	CU_ASSERT_STRING_EQUAL(back, text);
	/* a directory */
	CU_ASSERT_EQUAL(hy_bopt_create(tmp, UUID_A, MIB, 4096, false, why, sizeof(why)), -EEXIST);
	hy_test_rmtree(tmp);
	free(path);
	free(tmp);
}

static void test_create_refuses_ext4(void)
{
	char *tmp = hy_test_tmpdir(), *image = hy_test_path_in(tmp, "ext4.img"),
	     *log = hy_test_path_in(tmp, "mkfs.log");
	const char *mkfs = hy_test_find_mkfs_ext4();
	static unsigned char before[HY_BOPT_BLOCK * 2], after[HY_BOPT_BLOCK * 2];
	struct hy_bopt *bopt = NULL;

	if (!mkfs) {
		fprintf(stderr,
			"\n  (mkfs.ext4 is not installed: the ext4 refusal is not tested) ");
		goto out;
	}
	CU_ASSERT_EQUAL_FATAL(hy_test_make_ext4(mkfs, image, log), 0);
	CU_ASSERT_EQUAL_FATAL(hy_test_pread(image, before, sizeof(before), 0), 0);
	CU_ASSERT_EQUAL(hy_bopt_create(image, UUID_A, MIB, 4096, false, why, sizeof(why)), -EEXIST);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "ext4"));
	CU_ASSERT_EQUAL(hy_bopt_open(image, UUID_A, &bopt, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "not a hybridfs BOPT"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "ext4"));
	CU_ASSERT_EQUAL(hy_test_pread(image, after, sizeof(after), 0), 0);
	CU_ASSERT_EQUAL(memcmp(before, after, sizeof(before)), 0);
out:
	hy_test_rmtree(tmp);
	free(image);
	free(log);
	free(tmp);
}

static void test_resolve(void)
{
	char buf[256], *tmp = hy_test_tmpdir(), *cache = hy_test_path_in(tmp, "blkid.tab");

	/* libblkid's scan saves its cache: into the test's folder, not /run */
	setenv("BLKID_FILE", cache, 1);

	CU_ASSERT_EQUAL(hy_bopt_resolve("/var/lib/x/bopt", buf, sizeof(buf), why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "/var/lib/x/bopt");
	/* a relative path is most likely a mistyped tag: refused by name */
	CU_ASSERT_EQUAL(hy_bopt_resolve("relative/bopt", buf, sizeof(buf), why, sizeof(why)),
			-EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "\"relative/bopt\""));
	CU_ASSERT_EQUAL(hy_bopt_resolve("PARTUUID=00000000-0000-0000-0000-000000000000", buf,
					sizeof(buf), why, sizeof(why)),
			-ENOENT);
	CU_ASSERT_EQUAL(hy_bopt_resolve("/a/long/path", buf, 4, why, sizeof(why)), -ENAMETOOLONG);
	CU_ASSERT_EQUAL(hy_bopt_resolve("", buf, sizeof(buf), why, sizeof(why)), -EINVAL);
	CU_ASSERT_EQUAL(hy_bopt_resolve("UUID=00000000-0000-0000-0000-000000000000", buf,
					sizeof(buf), why, sizeof(why)),
			-ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "UUID=00000000-0000-0000-0000-000000000000"));
	CU_ASSERT_EQUAL(
		hy_bopt_resolve("LABEL=no-such-label-hybridfs", buf, sizeof(buf), why, sizeof(why)),
		-ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "LABEL=no-such-label-hybridfs"));
	unsetenv("BLKID_FILE");
	hy_test_rmtree(tmp);
	free(cache);
	free(tmp);
}

int hy_test_add_bopt(void)
{
	CU_pSuite s = CU_add_suite("bopt", NULL, NULL);

	if (!s)
		return -1;
	if (!CU_add_test(s, "header encoding and byte layout", test_encode_layout) ||
	    !CU_add_test(s, "header decoding refusals", test_decode_refusals) ||
	    !CU_add_test(s, "create and open", test_create_open) ||
	    !CU_add_test(s, "create refuses sizes without room", test_create_sizes) ||
	    !CU_add_test(s, "I/O through the device at the offsets", test_device_io) ||
	    !CU_add_test(s, "header updates survive reopening", test_header_updates) ||
	    !CU_add_test(s, "open refusals", test_open_refusals) ||
	    !CU_add_test(s, "create refuses an existing file", test_create_refuses_existing) ||
	    !CU_add_test(s, "create refuses an ext4 image", test_create_refuses_ext4) ||
	    !CU_add_test(s, "resolve bopt= values", test_resolve))
		return -1;
	return 0;
}
