/* test_fuse_channel.c - the daemon's end of /dev/fuse (fs/fuse_channel.c),
 * driven over pipes in place of the device: INIT's reply gets
 * FUSE_HANDLE_KILLPRIV_V2 only when the kernel offered it and the mount
 * wants it, and only the reply to INIT's unique; each request's kill flag
 * is kept for the thread that read it; requests are counted by opcode;
 * read's result and errno are the system call's; FUSE_PASSTHROUGH is
 * asked for in INIT's reply only when wanted, offered and without the
 * write-back cache, and an OPEN or CREATE reply carries the backing id its
 * handler named (FOPEN_PASSTHROUGH), that reply only. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <linux/fuse.h>

#include "hybridfs/fuse_channel.h"
#include "suites.h"

#define KILLPRIV_V2 (1u << 28)
/* protocol 7.40 (the kernel's include/uapi/linux/fuse.h) */
#define INIT_EXT	       (1u << 30)
#define WRITEBACK_CACHE	       (1u << 16)
#define PASSTHROUGH_FLAGS2     (1u << 5) /* FUSE_PASSTHROUGH, 1ULL << 37 */
#define FOPEN_PASSTHROUGH_FLAG (1u << 7)

/* One request, as the kernel writes it, through a pipe into the
 * channel's read; returns what the read returned. */
static ssize_t feed(struct hy_fuse_channel *ch, uint32_t opcode, uint64_t unique, const void *arg,
		    size_t arg_len)
{
	char msg[512], buf[512];
	struct fuse_in_header in;
	int p[2];
	ssize_t n;

	memset(&in, 0, sizeof(in));
	in.len = (uint32_t)(sizeof(in) + arg_len);
	in.opcode = opcode;
	in.unique = unique;
	memcpy(msg, &in, sizeof(in));
	memcpy(msg + sizeof(in), arg, arg_len);
	if (pipe(p) < 0)
		return -2;
	if (write(p[1], msg, in.len) != (ssize_t)in.len) {
		close(p[0]);
		close(p[1]);
		return -2;
	}
	n = hy_fuse_channel_read(ch, p[0], buf, sizeof(buf));
	close(p[0]);
	close(p[1]);
	return n;
}

static ssize_t feed_init2(struct hy_fuse_channel *ch, uint64_t unique, uint32_t flags,
			  uint32_t flags2)
{
	struct fuse_init_in init;

	memset(&init, 0, sizeof(init));
	init.major = 7;
	init.minor = 45;
	init.flags = flags;
	init.flags2 = flags2;
	return feed(ch, FUSE_INIT, unique, &init, sizeof(init));
}

static ssize_t feed_init(struct hy_fuse_channel *ch, uint64_t unique, uint32_t flags)
{
	return feed_init2(ch, unique, flags, 0);
}

/* A reply, as libfuse 3.14 sends INIT's (header, then the struct), through
 * the channel's writev; *@flags_out: the flags the "kernel" read. */
static ssize_t reply_init(struct hy_fuse_channel *ch, uint64_t unique, uint32_t flags,
			  uint32_t *flags_out)
{
	struct fuse_out_header head = {
		.len = sizeof(head) + sizeof(struct fuse_init_out), .error = 0, .unique = unique};
	struct fuse_init_out out;
	char back[256];
	struct iovec iov[2];
	ssize_t n;
	int p[2];

	memset(&out, 0, sizeof(out));
	out.major = 7;
	out.minor = 31;
	out.flags = flags;
	out.max_write = 1 << 20;
	iov[0].iov_base = &head;
	iov[0].iov_len = sizeof(head);
	iov[1].iov_base = &out;
	iov[1].iov_len = sizeof(out);
	if (pipe(p) < 0)
		return -2;
	n = hy_fuse_channel_writev(ch, p[1], iov, 2);
	if (n == (ssize_t)(sizeof(head) + sizeof(out)) && read(p[0], back, sizeof(back)) == n) {
		memcpy(&out, back + sizeof(head), sizeof(out));
		*flags_out = out.flags;
		/* the rest of libfuse's struct passes as it was */
		CU_ASSERT_EQUAL(out.max_write, 1u << 20);
		CU_ASSERT_EQUAL(out.minor, 31);
	}
	close(p[0]);
	close(p[1]);
	return n;
}

/* INIT's reply as reply_init() sends it, the whole struct the "kernel"
 * read back in *@back. */
static ssize_t reply_init_full(struct hy_fuse_channel *ch, uint64_t unique, uint32_t flags,
			       struct fuse_init_out *back)
{
	struct fuse_out_header head = {
		.len = sizeof(head) + sizeof(struct fuse_init_out), .error = 0, .unique = unique};
	struct fuse_init_out out;
	char buf[256];
	struct iovec iov[2];
	ssize_t n;
	int p[2];

	memset(&out, 0, sizeof(out));
	out.major = 7;
	out.minor = 31;
	out.flags = flags;
	out.max_write = 1 << 20;
	iov[0].iov_base = &head;
	iov[0].iov_len = sizeof(head);
	iov[1].iov_base = &out;
	iov[1].iov_len = sizeof(out);
	memset(back, 0, sizeof(*back));
	if (pipe(p) < 0)
		return -2;
	n = hy_fuse_channel_writev(ch, p[1], iov, 2);
	if (n == (ssize_t)(sizeof(head) + sizeof(out)) && read(p[0], buf, sizeof(buf)) == n)
		memcpy(back, buf + sizeof(head), sizeof(*back));
	close(p[0]);
	close(p[1]);
	return n;
}

/* max_stack_depth: the 32-bit field after flags2 (7.40) */
static uint32_t max_stack_depth(const struct fuse_init_out *out)
{
	uint32_t v;

	memcpy(&v, (const char *)out + offsetof(struct fuse_init_out, flags2) + 4, sizeof(v));
	return v;
}

static void test_passthrough_init(void)
{
	struct hy_fuse_channel *ch;
	struct fuse_init_out out;

	/* not asked for (the default): flags2 as libfuse wrote it */
	CU_ASSERT_EQUAL_FATAL(hy_fuse_channel_new(true, &ch), 0);
	CU_ASSERT(feed_init2(ch, 2, 0x73fffffb | INIT_EXT, PASSTHROUGH_FLAGS2) > 0);
	CU_ASSERT(reply_init_full(ch, 2, 0x40c0f069, &out) > 0);
	CU_ASSERT_EQUAL(out.flags, 0x40c0f069u | KILLPRIV_V2);
	CU_ASSERT_EQUAL(out.flags2, 0);
	CU_ASSERT_EQUAL(max_stack_depth(&out), 0);
	CU_ASSERT_FALSE(hy_fuse_channel_passthrough(ch));
	CU_ASSERT_PTR_NOT_NULL_FATAL(hy_fuse_channel_passthrough_why(ch));
	CU_ASSERT_STRING_EQUAL(hy_fuse_channel_passthrough_why(ch), "passthrough=off");
	hy_fuse_channel_free(ch);

	/* asked for and offered: FUSE_INIT_EXT, the flag and the depth;
	 * killpriv_v2=off changes nothing to it */
	CU_ASSERT_EQUAL_FATAL(hy_fuse_channel_new(false, &ch), 0);
	hy_fuse_channel_want_passthrough(ch, 1, NULL);
	CU_ASSERT_PTR_NULL(hy_fuse_channel_passthrough_why(ch));
	CU_ASSERT(feed_init2(ch, 2, 0x73fffffb | INIT_EXT, PASSTHROUGH_FLAGS2 | 0x2) > 0);
	CU_ASSERT(reply_init_full(ch, 2, 0x40c0f069 & ~INIT_EXT, &out) > 0);
	CU_ASSERT_EQUAL(out.flags, (0x40c0f069u & ~INIT_EXT) | INIT_EXT);
	CU_ASSERT_EQUAL(out.flags2, PASSTHROUGH_FLAGS2);
	CU_ASSERT_EQUAL(max_stack_depth(&out), 1);
	CU_ASSERT_EQUAL(out.max_write, 1u << 20);
	CU_ASSERT_TRUE(hy_fuse_channel_passthrough(ch));
	CU_ASSERT_FALSE(hy_fuse_channel_killpriv_v2(ch));
	CU_ASSERT_PTR_NULL(hy_fuse_channel_passthrough_why(ch));
	/* not installed: no device for the ioctls */
	CU_ASSERT_EQUAL(hy_fuse_channel_backing_open(ch, 0), -ENOTCONN);
	CU_ASSERT_EQUAL(hy_fuse_channel_backing_close(ch, 1), -ENOTCONN);
	hy_fuse_channel_free(ch);

	/* asked for, not offered: flags2 without the bit, or no FUSE_INIT_EXT */
	for (int i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL_FATAL(hy_fuse_channel_new(true, &ch), 0);
		hy_fuse_channel_want_passthrough(ch, 2, NULL);
		CU_ASSERT(feed_init2(ch, 2, i ? 0x73fffffb & ~INIT_EXT : 0x73fffffb | INIT_EXT,
				     i ? PASSTHROUGH_FLAGS2 : 0x2) > 0);
		CU_ASSERT(reply_init_full(ch, 2, 0x40c0f069, &out) > 0);
		CU_ASSERT_EQUAL(out.flags, 0x40c0f069u | KILLPRIV_V2);
		CU_ASSERT_EQUAL(out.flags2, 0);
		CU_ASSERT_EQUAL(max_stack_depth(&out), 0);
		CU_ASSERT_FALSE(hy_fuse_channel_passthrough(ch));
		CU_ASSERT_PTR_NOT_NULL_FATAL(hy_fuse_channel_passthrough_why(ch));
		CU_ASSERT_PTR_NOT_NULL(strstr(hy_fuse_channel_passthrough_why(ch),
					      "does not offer FUSE_PASSTHROUGH"));
		hy_fuse_channel_free(ch);
	}

	/* the write-back cache in libfuse's reply: no passthrough, said why */
	CU_ASSERT_EQUAL_FATAL(hy_fuse_channel_new(true, &ch), 0);
	hy_fuse_channel_want_passthrough(ch, 1, NULL);
	CU_ASSERT(feed_init2(ch, 2, 0x73fffffb | INIT_EXT, PASSTHROUGH_FLAGS2) > 0);
	CU_ASSERT(reply_init_full(ch, 2, 0x40c0f069 | WRITEBACK_CACHE, &out) > 0);
	CU_ASSERT_EQUAL(out.flags, 0x40c0f069u | WRITEBACK_CACHE | KILLPRIV_V2);
	CU_ASSERT_EQUAL(out.flags2, 0);
	CU_ASSERT_FALSE(hy_fuse_channel_passthrough(ch));
	CU_ASSERT_PTR_NOT_NULL_FATAL(hy_fuse_channel_passthrough_why(ch));
	CU_ASSERT_PTR_NOT_NULL(strstr(hy_fuse_channel_passthrough_why(ch), "writeback_cache"));
	hy_fuse_channel_free(ch);

	/* the mount's own reason (not root) is what status shows */
	CU_ASSERT_EQUAL_FATAL(hy_fuse_channel_new(true, &ch), 0);
	hy_fuse_channel_want_passthrough(ch, 0, "the daemon is not root");
	CU_ASSERT(feed_init2(ch, 2, 0x73fffffb | INIT_EXT, PASSTHROUGH_FLAGS2) > 0);
	CU_ASSERT(reply_init_full(ch, 2, 0x40c0f069, &out) > 0);
	CU_ASSERT_EQUAL(out.flags2, 0);
	CU_ASSERT_FALSE(hy_fuse_channel_passthrough(ch));
	CU_ASSERT_STRING_EQUAL(hy_fuse_channel_passthrough_why(ch), "the daemon is not root");
	hy_fuse_channel_free(ch);
	CU_ASSERT_FALSE(hy_fuse_channel_passthrough(NULL));
	CU_ASSERT_PTR_NOT_NULL(hy_fuse_channel_passthrough_why(NULL));
}

/* A reply as libfuse 3.14 writes it (header, then one argument of
 * @arg_len bytes) through the channel's writev; the argument the
 * "kernel" read back in @back. */
static ssize_t reply_arg(struct hy_fuse_channel *ch, uint64_t unique, int error, const void *arg,
			 size_t arg_len, void *back)
{
	struct fuse_out_header head = {
		.len = (uint32_t)(sizeof(head) + arg_len), .error = error, .unique = unique};
	char buf[512];
	struct iovec iov[2] = {{&head, sizeof(head)}, {(void *)arg, arg_len}};
	ssize_t n;
	int p[2];

	if (pipe(p) < 0)
		return -2;
	n = hy_fuse_channel_writev(ch, p[1], iov, arg_len ? 2 : 1);
	if (n == (ssize_t)(sizeof(head) + arg_len) && read(p[0], buf, sizeof(buf)) == n)
		memcpy(back, buf + sizeof(head), arg_len);
	close(p[0]);
	close(p[1]);
	return n;
}

/* fuse_open_out as the kernel reads it: fh, open_flags, backing_id */
struct open_out {
	uint64_t fh;
	uint32_t open_flags;
	int32_t backing_id;
};

static void test_passthrough_open_reply(void)
{
	struct hy_fuse_channel *ch;
	struct fuse_open_in op;
	struct fuse_create_in cr;
	struct open_out out = {.fh = 0x1234, .open_flags = FOPEN_DIRECT_IO}, back;
	char create[sizeof(cr) + 2], entry[sizeof(struct fuse_entry_out) + sizeof(out)],
		entry_back[sizeof(entry)];

	_Static_assert(sizeof(struct open_out) == sizeof(struct fuse_open_out), "16 bytes");
	CU_ASSERT_EQUAL_FATAL(hy_fuse_channel_new(true, &ch), 0);
	memset(&op, 0, sizeof(op));
	op.flags = O_RDWR;
	CU_ASSERT(feed(ch, FUSE_OPEN, 30, &op, sizeof(op)) > 0);
	hy_fuse_channel_reply_passthrough(7);
	/* a notification the handler sends first passes as it is */
	memset(&back, 0, sizeof(back));
	CU_ASSERT(reply_arg(ch, 0, FUSE_NOTIFY_INVAL_INODE, &out, sizeof(out), &back) > 0);
	CU_ASSERT_EQUAL(back.open_flags, FOPEN_DIRECT_IO);
	CU_ASSERT_EQUAL(back.backing_id, 0);
	/* the reply: FOPEN_PASSTHROUGH and the id, the rest as it was */
	CU_ASSERT(reply_arg(ch, 30, 0, &out, sizeof(out), &back) > 0);
	CU_ASSERT_EQUAL(back.fh, 0x1234);
	CU_ASSERT_EQUAL(back.open_flags, FOPEN_DIRECT_IO | FOPEN_PASSTHROUGH_FLAG);
	CU_ASSERT_EQUAL(back.backing_id, 7);
	CU_ASSERT_EQUAL(out.open_flags, FOPEN_DIRECT_IO); /* libfuse's copy untouched */
	/* once: the next reply with that unique goes as it is */
	CU_ASSERT(reply_arg(ch, 30, 0, &out, sizeof(out), &back) > 0);
	CU_ASSERT_EQUAL(back.open_flags, FOPEN_DIRECT_IO);
	CU_ASSERT_EQUAL(back.backing_id, 0);

	/* no id named: nothing changes */
	CU_ASSERT(feed(ch, FUSE_OPEN, 32, &op, sizeof(op)) > 0);
	hy_fuse_channel_reply_passthrough(0);
	CU_ASSERT(reply_arg(ch, 32, 0, &out, sizeof(out), &back) > 0);
	CU_ASSERT_EQUAL(back.open_flags, FOPEN_DIRECT_IO);
	CU_ASSERT_EQUAL(back.backing_id, 0);

	/* an id named for a request read before is forgotten at the next read */
	hy_fuse_channel_reply_passthrough(9);
	CU_ASSERT(feed(ch, FUSE_OPEN, 34, &op, sizeof(op)) > 0);
	CU_ASSERT(reply_arg(ch, 34, 0, &out, sizeof(out), &back) > 0);
	CU_ASSERT_EQUAL(back.backing_id, 0);

	/* an error reply carries nothing to patch */
	CU_ASSERT(feed(ch, FUSE_OPEN, 36, &op, sizeof(op)) > 0);
	hy_fuse_channel_reply_passthrough(7);
	CU_ASSERT(reply_arg(ch, 36, -EACCES, NULL, 0, &back) ==
		  (ssize_t)sizeof(struct fuse_out_header));
	/* OPENDIR's reply is fuse_open_out too, and is never patched */
	CU_ASSERT(feed(ch, FUSE_OPENDIR, 38, &op, sizeof(op)) > 0);
	hy_fuse_channel_reply_passthrough(7);
	CU_ASSERT(reply_arg(ch, 38, 0, &out, sizeof(out), &back) > 0);
	CU_ASSERT_EQUAL(back.open_flags, FOPEN_DIRECT_IO);
	CU_ASSERT_EQUAL(back.backing_id, 0);

	/* CREATE: fuse_entry_out, then fuse_open_out, patched at the end */
	memset(&cr, 0, sizeof(cr));
	cr.flags = O_WRONLY | O_CREAT;
	memcpy(create, &cr, sizeof(cr));
	memcpy(create + sizeof(cr), "f", 2);
	CU_ASSERT(feed(ch, FUSE_CREATE, 40, create, sizeof(create)) > 0);
	memset(entry, 0x5a, sizeof(struct fuse_entry_out));
	memcpy(entry + sizeof(struct fuse_entry_out), &out, sizeof(out));
	hy_fuse_channel_reply_passthrough(11);
	CU_ASSERT(reply_arg(ch, 40, 0, entry, sizeof(entry), entry_back) > 0);
	CU_ASSERT_EQUAL(memcmp(entry_back, entry, sizeof(struct fuse_entry_out)), 0);
	memcpy(&back, entry_back + sizeof(struct fuse_entry_out), sizeof(back));
	CU_ASSERT_EQUAL(back.fh, 0x1234);
	CU_ASSERT_EQUAL(back.open_flags, FOPEN_DIRECT_IO | FOPEN_PASSTHROUGH_FLAG);
	CU_ASSERT_EQUAL(back.backing_id, 11);
	hy_fuse_channel_free(ch);
}

static void test_killpriv_taken(void)
{
	struct hy_fuse_channel *ch;
	uint32_t flags = 0;

	CU_ASSERT_EQUAL_FATAL(hy_fuse_channel_new(true, &ch), 0);
	CU_ASSERT_FALSE(hy_fuse_channel_killpriv_v2(ch));
	CU_ASSERT_EQUAL(feed_init(ch, 2, 0x73fffffb),
			(ssize_t)(sizeof(struct fuse_in_header) + sizeof(struct fuse_init_in)));
	/* a notification or another reply before INIT's is passed on as is */
	CU_ASSERT(reply_init(ch, 0, 0x40c0f069, &flags) > 0);
	CU_ASSERT_EQUAL(flags, 0x40c0f069u);
	CU_ASSERT_FALSE(hy_fuse_channel_killpriv_v2(ch));
	CU_ASSERT(reply_init(ch, 2, 0x40c0f069, &flags) > 0);
	CU_ASSERT_EQUAL(flags, 0x40c0f069u | KILLPRIV_V2);
	CU_ASSERT_TRUE(hy_fuse_channel_killpriv_v2(ch));
	CU_ASSERT_PTR_NULL(hy_fuse_channel_why(ch));
	/* once: a later reply with that unique (reused by the kernel) is
	 * left alone */
	CU_ASSERT(reply_init(ch, 2, 0x1, &flags) > 0);
	CU_ASSERT_EQUAL(flags, 0x1u);
	CU_ASSERT_EQUAL(hy_fuse_channel_count(ch, FUSE_INIT), 1);
	hy_fuse_channel_free(ch);
}

static void test_killpriv_fallback(void)
{
	struct hy_fuse_channel *ch;
	uint32_t flags = 0;

	/* the kernel does not offer it */
	CU_ASSERT_EQUAL_FATAL(hy_fuse_channel_new(true, &ch), 0);
	CU_ASSERT(feed_init(ch, 2, 0x73fffffb & ~KILLPRIV_V2) > 0);
	CU_ASSERT(reply_init(ch, 2, 0x40c0f069, &flags) > 0);
	CU_ASSERT_EQUAL(flags, 0x40c0f069u);
	CU_ASSERT_FALSE(hy_fuse_channel_killpriv_v2(ch));
	CU_ASSERT_PTR_NOT_NULL_FATAL(hy_fuse_channel_why(ch));
	CU_ASSERT_PTR_NOT_NULL(strstr(hy_fuse_channel_why(ch), "does not offer"));
	hy_fuse_channel_free(ch);

	/* killpriv_v2=off */
	CU_ASSERT_EQUAL_FATAL(hy_fuse_channel_new(false, &ch), 0);
	CU_ASSERT(feed_init(ch, 2, 0x73fffffb) > 0);
	CU_ASSERT(reply_init(ch, 2, 0x40c0f069, &flags) > 0);
	CU_ASSERT_EQUAL(flags, 0x40c0f069u);
	CU_ASSERT_FALSE(hy_fuse_channel_killpriv_v2(ch));
	CU_ASSERT_PTR_NOT_NULL_FATAL(hy_fuse_channel_why(ch));
	CU_ASSERT_PTR_NOT_NULL(strstr(hy_fuse_channel_why(ch), "killpriv_v2=off"));
	hy_fuse_channel_free(ch);

	/* an INIT too short to hold its flags */
	CU_ASSERT_EQUAL_FATAL(hy_fuse_channel_new(true, &ch), 0);
	CU_ASSERT(feed(ch, FUSE_INIT, 2, "\7\0\0\0", 4) > 0);
	CU_ASSERT(reply_init(ch, 2, 0x40c0f069, &flags) > 0);
	CU_ASSERT_EQUAL(flags, 0x40c0f069u);
	CU_ASSERT_FALSE(hy_fuse_channel_killpriv_v2(ch));
	CU_ASSERT_PTR_NOT_NULL(hy_fuse_channel_why(ch));
	hy_fuse_channel_free(ch);
}

static void test_kill_flags(void)
{
	struct hy_fuse_channel *ch;
	struct fuse_write_in w;
	struct fuse_setattr_in sa;
	struct fuse_open_in op;
	struct fuse_create_in cr;
	char create[sizeof(cr) + 2];

	CU_ASSERT_EQUAL_FATAL(hy_fuse_channel_new(true, &ch), 0);
	memset(&w, 0, sizeof(w));
	w.write_flags = FUSE_WRITE_KILL_SUIDGID;
	CU_ASSERT(feed(ch, FUSE_WRITE, 10, &w, sizeof(w)) > 0);
	CU_ASSERT_TRUE(hy_fuse_channel_kill_suidgid());
	w.write_flags = FUSE_WRITE_CACHE;
	CU_ASSERT(feed(ch, FUSE_WRITE, 12, &w, sizeof(w)) > 0);
	CU_ASSERT_FALSE(hy_fuse_channel_kill_suidgid());

	memset(&sa, 0, sizeof(sa));
	sa.valid = FATTR_SIZE | FATTR_KILL_SUIDGID;
	CU_ASSERT(feed(ch, FUSE_SETATTR, 14, &sa, sizeof(sa)) > 0);
	CU_ASSERT_TRUE(hy_fuse_channel_kill_suidgid());
	/* the flag belongs to the request: the next one without it clears it */
	CU_ASSERT(feed(ch, FUSE_GETATTR, 16, "", 0) > 0);
	CU_ASSERT_FALSE(hy_fuse_channel_kill_suidgid());

	memset(&op, 0, sizeof(op));
	op.flags = O_WRONLY | O_TRUNC;
	op.open_flags = FUSE_OPEN_KILL_SUIDGID;
	CU_ASSERT(feed(ch, FUSE_OPEN, 18, &op, sizeof(op)) > 0);
	CU_ASSERT_TRUE(hy_fuse_channel_kill_suidgid());
	/* the same bit in another opcode's argument means nothing */
	CU_ASSERT(feed(ch, FUSE_OPENDIR, 20, &op, sizeof(op)) > 0);
	CU_ASSERT_FALSE(hy_fuse_channel_kill_suidgid());

	memset(&cr, 0, sizeof(cr));
	cr.flags = O_WRONLY | O_CREAT | O_TRUNC;
	cr.open_flags = FUSE_OPEN_KILL_SUIDGID;
	memcpy(create, &cr, sizeof(cr));
	memcpy(create + sizeof(cr), "f", 2);
	CU_ASSERT(feed(ch, FUSE_CREATE, 22, create, sizeof(create)) > 0);
	CU_ASSERT_TRUE(hy_fuse_channel_kill_suidgid());

	/* a request cut short of its flags carries none */
	CU_ASSERT(feed(ch, FUSE_WRITE, 24, &w, 8) > 0);
	CU_ASSERT_FALSE(hy_fuse_channel_kill_suidgid());

	CU_ASSERT_EQUAL(hy_fuse_channel_count(ch, FUSE_WRITE), 3);
	CU_ASSERT_EQUAL(hy_fuse_channel_count(ch, FUSE_SETATTR), 1);
	CU_ASSERT_EQUAL(hy_fuse_channel_count(ch, FUSE_GETXATTR), 0);
	hy_fuse_channel_free(ch);
}

static void test_counts_and_errors(void)
{
	struct hy_fuse_channel *ch;
	char buf[64];
	int p[2];

	CU_ASSERT_EQUAL_FATAL(hy_fuse_channel_new(true, &ch), 0);
	/* CUSE_INIT and opcodes past the table go to slot 0, "other" */
	CU_ASSERT(feed(ch, 4096, 2, "", 0) > 0);
	CU_ASSERT(feed(ch, HY_FUSE_CHANNEL_OPCODES, 4, "", 0) > 0);
	CU_ASSERT_EQUAL(hy_fuse_channel_count(ch, 0), 2);
	CU_ASSERT_EQUAL(hy_fuse_channel_count(ch, HY_FUSE_CHANNEL_OPCODES), 0);
	CU_ASSERT_EQUAL(hy_fuse_channel_count(NULL, FUSE_WRITE), 0);
	CU_ASSERT_STRING_EQUAL(hy_fuse_channel_opcode_name(0), "other");
	CU_ASSERT_STRING_EQUAL(hy_fuse_channel_opcode_name(FUSE_GETXATTR), "getxattr");
	CU_ASSERT_STRING_EQUAL(hy_fuse_channel_opcode_name(FUSE_READDIRPLUS), "readdirplus");
	CU_ASSERT_PTR_NULL(hy_fuse_channel_opcode_name(HY_FUSE_CHANNEL_OPCODES - 1));
	CU_ASSERT_PTR_NULL(hy_fuse_channel_opcode_name(4096));

	/* a failed read: the system call's result and errno, nothing noted */
	CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
	close(p[1]);
	close(p[0]);
	errno = 0;
	CU_ASSERT_EQUAL(hy_fuse_channel_read(ch, p[0], buf, sizeof(buf)), -1);
	CU_ASSERT_EQUAL(errno, EBADF);
	CU_ASSERT_FALSE(hy_fuse_channel_kill_suidgid());
	/* a read shorter than a header is libfuse's to report, not counted */
	CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
	CU_ASSERT_EQUAL(write(p[1], "abc", 3), 3);
	CU_ASSERT_EQUAL(hy_fuse_channel_read(ch, p[0], buf, sizeof(buf)), 3);
	close(p[0]);
	close(p[1]);
	CU_ASSERT_EQUAL(hy_fuse_channel_count(ch, 0), 2);
	/* not installed: nothing to notify */
	CU_ASSERT_EQUAL(hy_fuse_channel_invalidate(ch, 1), -ENOTCONN);
	hy_fuse_channel_free(ch);
	hy_fuse_channel_free(NULL);
}

int hy_test_add_fuse_channel(void)
{
	CU_pSuite s = CU_add_suite("fuse_channel", NULL, NULL);

	if (!s || !CU_add_test(s, "INIT's reply takes KILLPRIV_V2", test_killpriv_taken) ||
	    !CU_add_test(s, "no KILLPRIV_V2: not offered, off, short INIT",
			 test_killpriv_fallback) ||
	    !CU_add_test(s, "kill flags per request and thread", test_kill_flags) ||
	    !CU_add_test(s, "counts, names, failed reads", test_counts_and_errors) ||
	    !CU_add_test(s, "INIT's reply takes FUSE_PASSTHROUGH when it may",
			 test_passthrough_init) ||
	    !CU_add_test(s, "OPEN and CREATE replies carry the backing id",
			 test_passthrough_open_reply))
		return -1;
	return 0;
}
