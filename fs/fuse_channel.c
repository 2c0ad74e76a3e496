/* fuse_channel.c - the daemon's end of /dev/fuse; see include/hybridfs/fuse_channel.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fuse_lowlevel.h>
#include <linux/fuse.h>

#include "hybridfs/fuse_channel.h"
#include "hybridfs/log.h"

/* Not in every <linux/fuse.h>: the bits this module reads and writes, with
 * the values the kernel gave them in protocol 7.33. */
#ifndef FUSE_HANDLE_KILLPRIV_V2
#define FUSE_HANDLE_KILLPRIV_V2 (1u << 28)
#endif
#ifndef FUSE_WRITE_KILL_SUIDGID
#define FUSE_WRITE_KILL_SUIDGID (1u << 2)
#endif
#ifndef FATTR_KILL_SUIDGID
#define FATTR_KILL_SUIDGID (1u << 11)
#endif
#ifndef FUSE_OPEN_KILL_SUIDGID
#define FUSE_OPEN_KILL_SUIDGID (1u << 0)
#endif

/* FUSE passthrough, protocol 7.40 (Linux 6.9): Debian 12's <linux/fuse.h>
 * (7.38) has none of it, so the values are the kernel's
 * include/uapi/linux/fuse.h of 6.9 and later (unchanged to 6.18):
 * FUSE_PASSTHROUGH is bit 37 of the 64 init flags, so bit 5 of flags2,
 * which the kernel reads only with FUSE_INIT_EXT in flags (7.36);
 * fuse_init_out.max_stack_depth is the 32-bit field after flags2 (padding,
 * unused[0], in 7.38 and in libfuse 3.14's copy); fuse_open_out.backing_id
 * the 32-bit field after open_flags (padding there); the two device
 * ioctls and their argument as the kernel declares them. */
#define HY_FUSE_INIT_EXT	   (1u << 30)
#define HY_FUSE_WRITEBACK_CACHE	   (1u << 16)
#define HY_FUSE_PASSTHROUGH_FLAGS2 (1u << (37 - 32))
#define HY_FOPEN_PASSTHROUGH	   (1u << 7)
#define HY_FUSE_INIT_IN_FLAGS2	   16 /* offsetof(struct fuse_init_in, flags2) */
#define HY_FUSE_INIT_OUT_FLAGS2	   32 /* offsetof(struct fuse_init_out, flags2) */
#define HY_FUSE_INIT_OUT_MAX_STACK 36 /* offsetof(struct fuse_init_out, max_stack_depth) */
#define HY_FUSE_OPEN_OUT_FLAGS	   8  /* offsetof(struct fuse_open_out, open_flags) */
#define HY_FUSE_OPEN_OUT_BACKING   12 /* offsetof(struct fuse_open_out, backing_id) */
struct hy_fuse_backing_map {
	int32_t fd;
	uint32_t flags;
	uint64_t padding;
};
#define HY_FUSE_DEV_IOC_BACKING_OPEN  _IOW(229, 1, struct hy_fuse_backing_map)
#define HY_FUSE_DEV_IOC_BACKING_CLOSE _IOW(229, 2, uint32_t)

/* libfuse 3.14's reply and the kernel's struct have one size (see the
 * header); a reply of another length is passed on untouched. */
_Static_assert(sizeof(struct fuse_init_out) == 64, "struct fuse_init_out is 64 bytes");
_Static_assert(offsetof(struct fuse_init_in, flags2) == HY_FUSE_INIT_IN_FLAGS2,
	       "fuse_init_in.flags2 where the kernel has it");
_Static_assert(offsetof(struct fuse_init_out, flags2) == HY_FUSE_INIT_OUT_FLAGS2,
	       "fuse_init_out.flags2 where the kernel has it");
_Static_assert(sizeof(struct fuse_open_out) == 16 &&
		       offsetof(struct fuse_open_out, open_flags) == HY_FUSE_OPEN_OUT_FLAGS,
	       "struct fuse_open_out as the kernel has it");

enum init_state {
	INIT_NONE,    /* no INIT read yet */
	INIT_OFFERED, /* INIT read, the kernel offers a flag wanted: its reply gets it */
	INIT_DONE,    /* the reply went out (with the flags or not) */
};

struct hy_fuse_channel {
	bool want_killpriv_v2;
	unsigned passthrough_depth;   /* max_stack_depth asked for; 0: passthrough not asked */
	bool passthrough_quiet;	      /* not asked for at all (passthrough=off): nothing logged */
	struct fuse_session *se;      /* once installed; for notifications */
	_Atomic int init;	      /* enum init_state */
	_Atomic uint64_t init_unique; /* the INIT request's, while INIT_OFFERED */
	/* what INIT offered and is wanted: set before init becomes INIT_OFFERED */
	bool offer_killpriv_v2, offer_passthrough;
	_Atomic bool killpriv_v2;  /* told the kernel; see hy_fuse_channel_killpriv_v2() */
	_Atomic bool passthrough;  /* told the kernel; see hy_fuse_channel_passthrough() */
	_Atomic(const char *) why; /* points into why_text once written */
	char why_text[200];	   /* written once, before why is published */
	_Atomic(const char *) passthrough_why; /* the same for passthrough */
	char passthrough_why_text[200];
	_Atomic uint64_t requests[HY_FUSE_CHANNEL_OPCODES];
};

/* The channel libfuse's calls reach: one session per process. */
static struct hy_fuse_channel *installed;

/* The request this thread read last: its kill flag, unique and opcode;
 * and the backing id its OPEN or CREATE reply is to carry (0: none), set
 * by the handler (hy_fuse_channel_reply_passthrough) and taken by the
 * reply's writev. */
static __thread bool request_kills;
static __thread uint64_t request_unique;
static __thread uint32_t request_opcode;
static __thread int reply_backing_id;

static const char *const opcode_names[HY_FUSE_CHANNEL_OPCODES] = {
	[0] = "other",
	[FUSE_LOOKUP] = "lookup",
	[FUSE_FORGET] = "forget",
	[FUSE_GETATTR] = "getattr",
	[FUSE_SETATTR] = "setattr",
	[FUSE_READLINK] = "readlink",
	[FUSE_SYMLINK] = "symlink",
	[FUSE_MKNOD] = "mknod",
	[FUSE_MKDIR] = "mkdir",
	[FUSE_UNLINK] = "unlink",
	[FUSE_RMDIR] = "rmdir",
	[FUSE_RENAME] = "rename",
	[FUSE_LINK] = "link",
	[FUSE_OPEN] = "open",
	[FUSE_READ] = "read",
	[FUSE_WRITE] = "write",
	[FUSE_STATFS] = "statfs",
	[FUSE_RELEASE] = "release",
	[FUSE_FSYNC] = "fsync",
	[FUSE_SETXATTR] = "setxattr",
	[FUSE_GETXATTR] = "getxattr",
	[FUSE_LISTXATTR] = "listxattr",
	[FUSE_REMOVEXATTR] = "removexattr",
	[FUSE_FLUSH] = "flush",
	[FUSE_INIT] = "init",
	[FUSE_OPENDIR] = "opendir",
	[FUSE_READDIR] = "readdir",
	[FUSE_RELEASEDIR] = "releasedir",
	[FUSE_FSYNCDIR] = "fsyncdir",
	[FUSE_GETLK] = "getlk",
	[FUSE_SETLK] = "setlk",
	[FUSE_SETLKW] = "setlkw",
	[FUSE_ACCESS] = "access",
	[FUSE_CREATE] = "create",
	[FUSE_INTERRUPT] = "interrupt",
	[FUSE_BMAP] = "bmap",
	[FUSE_DESTROY] = "destroy",
	[FUSE_IOCTL] = "ioctl",
	[FUSE_POLL] = "poll",
	[FUSE_NOTIFY_REPLY] = "notify_reply",
	[FUSE_BATCH_FORGET] = "batch_forget",
	[FUSE_FALLOCATE] = "fallocate",
	[FUSE_READDIRPLUS] = "readdirplus",
	[FUSE_RENAME2] = "rename2",
	[FUSE_LSEEK] = "lseek",
	[FUSE_COPY_FILE_RANGE] = "copy_file_range",
	[48] = "setupmapping",
	[49] = "removemapping",
	[50] = "syncfs",
	[51] = "tmpfile",
	[52] = "statx",
};

int hy_fuse_channel_new(bool want_killpriv_v2, struct hy_fuse_channel **out)
{
	struct hy_fuse_channel *channel = calloc(1, sizeof(*channel));

	*out = NULL;
	if (!channel)
		return -ENOMEM;
	channel->want_killpriv_v2 = want_killpriv_v2;
	atomic_init(&channel->init, INIT_NONE);
	/* until hy_fuse_channel_want_passthrough() asks for it */
	hy_fuse_channel_want_passthrough(channel, 0, NULL);
	*out = channel;
	return 0;
}

void hy_fuse_channel_free(struct hy_fuse_channel *channel)
{
	if (channel && installed == channel)
		installed = NULL;
	free(channel);
}

/* Once, by the thread that handles INIT: the text, then the pointer. */
static void set_why(struct hy_fuse_channel *channel, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void set_why(struct hy_fuse_channel *channel, const char *fmt, ...)
{
	va_list ap;

	if (atomic_load_explicit(&channel->why, memory_order_relaxed))
		return;
	va_start(ap, fmt);
	vsnprintf(channel->why_text, sizeof(channel->why_text), fmt, ap);
	va_end(ap);
	atomic_store_explicit(&channel->why, channel->why_text, memory_order_release);
	hy_log(LOG_NOTICE,
	       "fuse: the kernel clears setuid, setgid and security.capability itself, asking "
	       "for security.capability before every write: %s",
	       channel->why_text);
}

/* The same for passthrough: once, before the flag it explains is
 * published (or never published). */
static void set_passthrough_why(struct hy_fuse_channel *channel, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void set_passthrough_why(struct hy_fuse_channel *channel, const char *fmt, ...)
{
	va_list ap;

	if (atomic_load_explicit(&channel->passthrough_why, memory_order_relaxed))
		return;
	va_start(ap, fmt);
	vsnprintf(channel->passthrough_why_text, sizeof(channel->passthrough_why_text), fmt, ap);
	va_end(ap);
	atomic_store_explicit(&channel->passthrough_why, channel->passthrough_why_text,
			      memory_order_release);
	/* passthrough=off, the default, is nothing to report */
	if (!channel->passthrough_quiet)
		hy_log(LOG_NOTICE,
		       "fuse: no passthrough, every file's data goes through the daemon: %s",
		       channel->passthrough_why_text);
}

static void note_init(struct hy_fuse_channel *channel, const struct fuse_in_header *in,
		      const void *arg, size_t arg_len)
{
	struct fuse_init_in init;
	uint32_t flags2 = 0;

	if (atomic_load_explicit(&channel->init, memory_order_relaxed) != INIT_NONE)
		return;
	/* the fields every protocol version has: major, minor, max_readahead, flags */
	if (arg_len < offsetof(struct fuse_init_in, flags) + sizeof(init.flags)) {
		set_why(channel, "the kernel's INIT request is too short (%zu bytes)", arg_len);
		set_passthrough_why(channel, "the kernel's INIT request is too short (%zu bytes)",
				    arg_len);
		atomic_store_explicit(&channel->init, INIT_DONE, memory_order_release);
		return;
	}
	memset(&init, 0, sizeof(init));
	memcpy(&init, arg, offsetof(struct fuse_init_in, flags) + sizeof(init.flags));
	if ((init.flags & HY_FUSE_INIT_EXT) && arg_len >= HY_FUSE_INIT_IN_FLAGS2 + sizeof(flags2))
		memcpy(&flags2, (const char *)arg + HY_FUSE_INIT_IN_FLAGS2, sizeof(flags2));
	if (!channel->want_killpriv_v2)
		set_why(channel, "killpriv_v2=off");
	else if (init.major != FUSE_KERNEL_VERSION || !(init.flags & FUSE_HANDLE_KILLPRIV_V2))
		set_why(channel,
			"the kernel (FUSE %u.%u) does not offer FUSE_HANDLE_KILLPRIV_V2 (Linux "
			"5.11 and later do)",
			init.major, init.minor);
	else
		channel->offer_killpriv_v2 = true;
	/* passthrough_depth 0: the why was given with the wish */
	if (channel->passthrough_depth &&
	    (init.major != FUSE_KERNEL_VERSION || !(flags2 & HY_FUSE_PASSTHROUGH_FLAGS2)))
		set_passthrough_why(
			channel,
			"the kernel (FUSE %u.%u) does not offer FUSE_PASSTHROUGH (Linux "
			"6.9 and later built with CONFIG_FUSE_PASSTHROUGH do)",
			init.major, init.minor);
	else if (channel->passthrough_depth)
		channel->offer_passthrough = true;
	if (channel->offer_killpriv_v2 || channel->offer_passthrough) {
		atomic_store_explicit(&channel->init_unique, in->unique, memory_order_relaxed);
		atomic_store_explicit(&channel->init, INIT_OFFERED, memory_order_release);
		return;
	}
	atomic_store_explicit(&channel->init, INIT_DONE, memory_order_release);
}

/* What the kernel marks in a request whose caller lacks CAP_FSETID. */
static bool kills(uint32_t opcode, const void *arg, size_t arg_len)
{
	uint32_t v;

	switch (opcode) {
	case FUSE_WRITE:
		if (arg_len < offsetof(struct fuse_write_in, write_flags) + sizeof(v))
			return false;
		memcpy(&v, (const char *)arg + offsetof(struct fuse_write_in, write_flags),
		       sizeof(v));
		return v & FUSE_WRITE_KILL_SUIDGID;
	case FUSE_SETATTR:
		if (arg_len < offsetof(struct fuse_setattr_in, valid) + sizeof(v))
			return false;
		memcpy(&v, (const char *)arg + offsetof(struct fuse_setattr_in, valid), sizeof(v));
		return v & FATTR_KILL_SUIDGID;
	case FUSE_OPEN:
		if (arg_len < offsetof(struct fuse_open_in, open_flags) + sizeof(v))
			return false;
		memcpy(&v, (const char *)arg + offsetof(struct fuse_open_in, open_flags),
		       sizeof(v));
		return v & FUSE_OPEN_KILL_SUIDGID;
	case FUSE_CREATE:
		if (arg_len < offsetof(struct fuse_create_in, open_flags) + sizeof(v))
			return false;
		memcpy(&v, (const char *)arg + offsetof(struct fuse_create_in, open_flags),
		       sizeof(v));
		return v & FUSE_OPEN_KILL_SUIDGID;
	default:
		return false;
	}
}

ssize_t hy_fuse_channel_read(struct hy_fuse_channel *channel, int fd, void *buf, size_t len)
{
	ssize_t n = read(fd, buf, len);
	int saved = errno;
	struct fuse_in_header in;
	const char *arg;
	size_t arg_len;

	request_kills = false;
	request_unique = 0;
	request_opcode = 0;
	reply_backing_id = 0;
	if (n < (ssize_t)sizeof(in)) /* libfuse reports a short read itself */
		goto out;
	memcpy(&in, buf, sizeof(in));
	request_unique = in.unique;
	request_opcode = in.opcode;
	arg = (const char *)buf + sizeof(in);
	arg_len = (size_t)n - sizeof(in);
	atomic_fetch_add_explicit(
		&channel->requests[in.opcode < HY_FUSE_CHANNEL_OPCODES ? in.opcode : 0], 1,
		memory_order_relaxed);
	if (in.opcode == FUSE_INIT)
		note_init(channel, &in, arg, arg_len);
	else
		request_kills = kills(in.opcode, arg, arg_len);
out:
	errno = saved;
	return n;
}

/* Fails every flag the INIT reply was to carry, with @fmt's reason. */
static void init_refused(struct hy_fuse_channel *channel, const char *text)
{
	if (channel->offer_killpriv_v2)
		set_why(channel, "%s", text);
	if (channel->offer_passthrough)
		set_passthrough_why(channel, "%s", text);
}

/* The INIT reply, if @iov is it: the flags ORed into a copy of libfuse's
 * struct, in @patched (which @out points into). Returns false to send
 * @iov as it is; *@killpriv and *@passthrough say what the copy asks. */
static bool patch_init_reply(struct hy_fuse_channel *channel, const struct iovec *iov, int count,
			     struct iovec out[2], struct fuse_init_out *patched, bool *killpriv,
			     bool *passthrough)
{
	struct fuse_out_header head;
	char text[160];
	uint32_t flags2, depth;

	*killpriv = *passthrough = false;
	if (count < 1 || iov[0].iov_len != sizeof(head))
		return false;
	memcpy(&head, iov[0].iov_base, sizeof(head));
	if (head.unique != atomic_load_explicit(&channel->init_unique, memory_order_relaxed))
		return false;
	/* the reply to INIT, whatever comes of it */
	atomic_store_explicit(&channel->init, INIT_DONE, memory_order_relaxed);
	if (head.error != 0) {
		snprintf(text, sizeof(text), "libfuse refused the kernel's INIT (error %d)",
			 head.error);
		init_refused(channel, text);
		return false;
	}
	if (count != 2 || iov[1].iov_len != sizeof(*patched)) {
		snprintf(text, sizeof(text),
			 "libfuse's INIT reply has a form this daemon does not know (%d parts, "
			 "%zu bytes)",
			 count, count == 2 ? iov[1].iov_len : (size_t)0);
		init_refused(channel, text);
		return false;
	}
	memcpy(patched, iov[1].iov_base, sizeof(*patched));
	if (patched->major != FUSE_KERNEL_VERSION) {
		snprintf(text, sizeof(text), "libfuse answered INIT with FUSE %u.%u",
			 patched->major, patched->minor);
		init_refused(channel, text);
		return false;
	}
	if (channel->offer_killpriv_v2) {
		patched->flags |= FUSE_HANDLE_KILLPRIV_V2;
		*killpriv = true;
	}
	/* The kernel takes passthrough only without its write-back cache
	 * (process_init_reply), which hy_init() asked for or not: a request
	 * for both would leave FOPEN_PASSTHROUGH failing every open with EIO. */
	if (channel->offer_passthrough && (patched->flags & HY_FUSE_WRITEBACK_CACHE)) {
		set_passthrough_why(channel, "writeback_cache=on: the kernel takes no passthrough "
					     "with its write-back cache");
	} else if (channel->offer_passthrough) {
		patched->flags |= HY_FUSE_INIT_EXT;
		memcpy(&flags2, (char *)patched + HY_FUSE_INIT_OUT_FLAGS2, sizeof(flags2));
		flags2 |= HY_FUSE_PASSTHROUGH_FLAGS2;
		memcpy((char *)patched + HY_FUSE_INIT_OUT_FLAGS2, &flags2, sizeof(flags2));
		depth = channel->passthrough_depth;
		memcpy((char *)patched + HY_FUSE_INIT_OUT_MAX_STACK, &depth, sizeof(depth));
		*passthrough = true;
	}
	if (!*killpriv && !*passthrough)
		return false;
	out[0] = iov[0];
	out[1].iov_base = patched;
	out[1].iov_len = sizeof(*patched);
	return true;
}

/* The reply to this thread's OPEN or CREATE, if @iov is it and its
 * handler asked for passthrough: a copy of its fuse_open_out (the whole
 * argument for OPEN, the last 16 bytes of CREATE's, after its
 * fuse_entry_out) with FOPEN_PASSTHROUGH and the backing id, in @copy.
 * Returns false to send @iov as it is. */
static bool patch_open_reply(const struct iovec *iov, int count, struct iovec out[2], char *copy,
			     size_t copy_size)
{
	struct fuse_out_header head;
	uint32_t open_flags;
	int32_t id = reply_backing_id;
	size_t at;

	if (count != 2 || iov[0].iov_len != sizeof(head))
		return false;
	memcpy(&head, iov[0].iov_base, sizeof(head));
	if (head.unique != request_unique || head.error != 0)
		return false;
	if (request_opcode == FUSE_OPEN && iov[1].iov_len == sizeof(struct fuse_open_out))
		at = 0;
	else if (request_opcode == FUSE_CREATE && iov[1].iov_len > sizeof(struct fuse_open_out) &&
		 iov[1].iov_len <= copy_size)
		at = iov[1].iov_len - sizeof(struct fuse_open_out);
	else
		return false;
	memcpy(copy, iov[1].iov_base, iov[1].iov_len);
	memcpy(&open_flags, copy + at + HY_FUSE_OPEN_OUT_FLAGS, sizeof(open_flags));
	open_flags |= HY_FOPEN_PASSTHROUGH;
	memcpy(copy + at + HY_FUSE_OPEN_OUT_FLAGS, &open_flags, sizeof(open_flags));
	memcpy(copy + at + HY_FUSE_OPEN_OUT_BACKING, &id, sizeof(id));
	out[0] = iov[0];
	out[1].iov_base = copy;
	out[1].iov_len = iov[1].iov_len;
	return true;
}

/* An OPEN or CREATE reply that is to carry a backing id. */
static ssize_t write_open_reply(int fd, const struct iovec *iov, int count)
{
	/* CREATE's: fuse_entry_out (128 bytes at 7.31) and fuse_open_out */
	char copy[256];
	struct iovec out[2];

	if (!patch_open_reply(iov, count, out, copy, sizeof(copy))) {
		/* the caller checked the header; an error reply (the open
		 * failed after all) is as it should be */
		if (((const struct fuse_out_header *)iov[0].iov_base)->error == 0)
			hy_log(LOG_ERR,
			       "fuse: the reply to request %llu has a form this daemon does not "
			       "know: sent without passthrough",
			       (unsigned long long)request_unique);
		return writev(fd, iov, count);
	}
	return writev(fd, out, 2);
}

ssize_t hy_fuse_channel_writev(struct hy_fuse_channel *channel, int fd, const struct iovec *iov,
			       int count)
{
	struct fuse_init_out patched;
	struct iovec out[2];
	bool killpriv, passthrough;
	ssize_t n;
	int saved;

	/* the reply to this thread's request (not a notification it sends
	 * first) */
	if (reply_backing_id && count >= 1 && iov[0].iov_len == sizeof(struct fuse_out_header) &&
	    ((const struct fuse_out_header *)iov[0].iov_base)->unique == request_unique) {
		ssize_t sent = write_open_reply(fd, iov, count);

		reply_backing_id = 0; /* its one reply */
		return sent;
	}
	/* one load per reply once INIT is past */
	if (atomic_load_explicit(&channel->init, memory_order_acquire) != INIT_OFFERED ||
	    !patch_init_reply(channel, iov, count, out, &patched, &killpriv, &passthrough))
		return writev(fd, iov, count);
	/* before the write: the kernel may send the first flagged request to
	 * another worker as soon as it has the reply */
	if (killpriv)
		atomic_store_explicit(&channel->killpriv_v2, true, memory_order_release);
	if (passthrough)
		atomic_store_explicit(&channel->passthrough, true, memory_order_release);
	n = writev(fd, out, 2);
	saved = errno;
	if (n < 0) {
		char text[160];

		atomic_store_explicit(&channel->killpriv_v2, false, memory_order_release);
		atomic_store_explicit(&channel->passthrough, false, memory_order_release);
		snprintf(text, sizeof(text), "the INIT reply could not be written: %s",
			 strerror(saved));
		init_refused(channel, text);
	} else {
		if (killpriv)
			hy_log(LOG_INFO, "fuse: FUSE_HANDLE_KILLPRIV_V2 taken: the daemon clears "
					 "setuid, setgid and security.capability itself");
		if (passthrough)
			hy_log(LOG_INFO, "fuse: FUSE_PASSTHROUGH taken (max_stack_depth %u)",
			       channel->passthrough_depth);
	}
	errno = saved;
	return n;
}

static ssize_t channel_read(int fd, void *buf, size_t len, void *userdata)
{
	(void)userdata; /* the session's userdata is the filesystem's */
	return hy_fuse_channel_read(installed, fd, buf, len);
}

static ssize_t channel_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	(void)userdata;
	return hy_fuse_channel_writev(installed, fd, iov, count);
}

/* A reply spliced from a pipe (fuse_reply_data(): READ's, fs/ops_files.c):
 * none the channel changes (INIT's and OPEN's are written), so it goes to
 * the device as it is, through the channel's calls like every other. */
static ssize_t channel_splice_send(int pipe_out, off_t *pipe_off, int fd, off_t *fd_off, size_t len,
				   unsigned flags, void *userdata)
{
	(void)userdata;
	return splice(pipe_out, pipe_off, fd, fd_off, len, flags);
}

int hy_fuse_channel_install(struct hy_fuse_channel *channel, struct fuse_session *se, char *why,
			    size_t why_size)
{
	static const struct fuse_custom_io io = {
		.read = channel_read, .writev = channel_writev, .splice_send = channel_splice_send,
		/* no splice_receive: every request must pass channel_read */
	};
	int fd = fuse_session_fd(se), rc;

	if (installed && installed != channel)
		return hy_log_why(-EBUSY, why, why_size, "fuse: a channel is installed already");
	if (fd < 0)
		return hy_log_why(-EBADF, why, why_size, "fuse: the session has no device yet");
	installed = channel;
	channel->se = se;
	/* the same descriptor: libfuse keeps closing it at unmount and destroy */
	rc = fuse_session_custom_io(se, &io, fd);
	if (rc < 0) {
		installed = NULL;
		channel->se = NULL;
		return hy_log_why(rc, why, why_size, "fuse: libfuse refused the channel: %s",
				  strerror(-rc));
	}
	return 0;
}

int hy_fuse_channel_invalidate(struct hy_fuse_channel *channel, uint64_t nodeid)
{
	int rc;

	if (!channel || !channel->se)
		return -ENOTCONN;
	/* a negative offset: the attributes only, which never waits for the
	 * inode's lock or its pages, so it may be sent from the handler of a
	 * request the kernel holds that lock for */
	rc = fuse_lowlevel_notify_inval_inode(channel->se, (fuse_ino_t)nodeid, -1, 0);
	/* -ENOENT: the kernel holds no inode, so no attributes, to forget */
	return rc == -ENOENT ? 0 : rc;
}

bool hy_fuse_channel_killpriv_v2(const struct hy_fuse_channel *channel)
{
	return channel && atomic_load_explicit(&channel->killpriv_v2, memory_order_acquire);
}

const char *hy_fuse_channel_why(const struct hy_fuse_channel *channel)
{
	return channel ? atomic_load_explicit(&channel->why, memory_order_acquire) : NULL;
}

void hy_fuse_channel_want_passthrough(struct hy_fuse_channel *channel, unsigned max_stack_depth,
				      const char *why_not)
{
	channel->passthrough_depth = max_stack_depth;
	channel->passthrough_quiet = !max_stack_depth && !why_not;
	/* before the session: no reader yet, the text may be written again */
	atomic_store_explicit(&channel->passthrough_why, NULL, memory_order_relaxed);
	if (!max_stack_depth)
		set_passthrough_why(channel, "%s", why_not ? why_not : "passthrough=off");
}

bool hy_fuse_channel_passthrough(const struct hy_fuse_channel *channel)
{
	return channel && atomic_load_explicit(&channel->passthrough, memory_order_acquire);
}

const char *hy_fuse_channel_passthrough_why(const struct hy_fuse_channel *channel)
{
	if (!channel)
		return "the daemon does not read /dev/fuse itself (see its log)";
	return atomic_load_explicit(&channel->passthrough_why, memory_order_acquire);
}

int hy_fuse_channel_backing_open(struct hy_fuse_channel *channel, int fd)
{
	struct hy_fuse_backing_map map = {.fd = fd};
	int id;

	if (!hy_fuse_channel_passthrough(channel) || !channel->se)
		return -ENOTCONN;
	id = ioctl(fuse_session_fd(channel->se), HY_FUSE_DEV_IOC_BACKING_OPEN, &map);
	if (id < 0)
		return -errno;
	return id > 0 ? id : -EPROTO; /* the kernel's ids start at 1 */
}

int hy_fuse_channel_backing_close(struct hy_fuse_channel *channel, int backing_id)
{
	uint32_t id = (uint32_t)backing_id;

	if (!channel || !channel->se)
		return -ENOTCONN;
	return ioctl(fuse_session_fd(channel->se), HY_FUSE_DEV_IOC_BACKING_CLOSE, &id) < 0 ? -errno
											   : 0;
}

void hy_fuse_channel_reply_passthrough(int backing_id)
{
	reply_backing_id = backing_id > 0 ? backing_id : 0;
}

bool hy_fuse_channel_kill_suidgid(void)
{
	return request_kills;
}

uint64_t hy_fuse_channel_count(const struct hy_fuse_channel *channel, unsigned opcode)
{
	if (!channel || opcode >= HY_FUSE_CHANNEL_OPCODES)
		return 0;
	return atomic_load_explicit(&channel->requests[opcode], memory_order_relaxed);
}

const char *hy_fuse_channel_opcode_name(unsigned opcode)
{
	return opcode < HY_FUSE_CHANNEL_OPCODES ? opcode_names[opcode] : NULL;
}
