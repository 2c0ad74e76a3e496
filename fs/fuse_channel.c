/* fuse_channel.c - the daemon's end of /dev/fuse; see include/hybridfs/fuse_channel.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* libfuse 3.14's reply and the kernel's struct have one size (see the
 * header); a reply of another length is passed on untouched. */
_Static_assert(sizeof(struct fuse_init_out) == 64, "struct fuse_init_out is 64 bytes");

enum init_state {
	INIT_NONE,    /* no INIT read yet */
	INIT_OFFERED, /* INIT read, the kernel offers the flag: its reply gets it */
	INIT_DONE,    /* the reply went out (with the flag or not) */
};

struct hy_fuse_channel {
	bool want_killpriv_v2;
	struct fuse_session *se;      /* once installed; for notifications */
	_Atomic int init;	      /* enum init_state */
	_Atomic uint64_t init_unique; /* the INIT request's, while INIT_OFFERED */
	_Atomic bool killpriv_v2;     /* told the kernel; see hy_fuse_channel_killpriv_v2() */
	_Atomic(const char *) why;    /* points into why_text once written */
	char why_text[200];	      /* written once, before why is published */
	_Atomic uint64_t requests[HY_FUSE_CHANNEL_OPCODES];
};

/* The channel libfuse's calls reach: one session per process. */
static struct hy_fuse_channel *installed;

/* The kill flag of the request this thread read last. */
static __thread bool request_kills;

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

static void note_init(struct hy_fuse_channel *channel, const struct fuse_in_header *in,
		      const void *arg, size_t arg_len)
{
	struct fuse_init_in init;

	if (atomic_load_explicit(&channel->init, memory_order_relaxed) != INIT_NONE)
		return;
	/* the fields every protocol version has: major, minor, max_readahead, flags */
	if (arg_len < offsetof(struct fuse_init_in, flags) + sizeof(init.flags)) {
		set_why(channel, "the kernel's INIT request is too short (%zu bytes)", arg_len);
		atomic_store_explicit(&channel->init, INIT_DONE, memory_order_release);
		return;
	}
	memset(&init, 0, sizeof(init));
	memcpy(&init, arg, offsetof(struct fuse_init_in, flags) + sizeof(init.flags));
	if (!channel->want_killpriv_v2) {
		set_why(channel, "killpriv_v2=off");
	} else if (init.major != FUSE_KERNEL_VERSION || !(init.flags & FUSE_HANDLE_KILLPRIV_V2)) {
		set_why(channel,
			"the kernel (FUSE %u.%u) does not offer FUSE_HANDLE_KILLPRIV_V2 (Linux "
			"5.11 and later do)",
			init.major, init.minor);
	} else {
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
	if (n < (ssize_t)sizeof(in)) /* libfuse reports a short read itself */
		goto out;
	memcpy(&in, buf, sizeof(in));
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

/* The INIT reply, if @iov is it: the flag ORed into a copy of libfuse's
 * struct, in @patched (which @out points into). Returns false to send
 * @iov as it is. */
static bool patch_init_reply(struct hy_fuse_channel *channel, const struct iovec *iov, int count,
			     struct iovec out[2], struct fuse_init_out *patched)
{
	struct fuse_out_header head;

	if (count < 1 || iov[0].iov_len != sizeof(head))
		return false;
	memcpy(&head, iov[0].iov_base, sizeof(head));
	if (head.unique != atomic_load_explicit(&channel->init_unique, memory_order_relaxed))
		return false;
	/* the reply to INIT, whatever comes of it */
	atomic_store_explicit(&channel->init, INIT_DONE, memory_order_relaxed);
	if (head.error != 0) {
		set_why(channel, "libfuse refused the kernel's INIT (error %d)", head.error);
		return false;
	}
	if (count != 2 || iov[1].iov_len != sizeof(*patched)) {
		set_why(channel,
			"libfuse's INIT reply has a form this daemon does not know (%d parts, "
			"%zu bytes)",
			count, count == 2 ? iov[1].iov_len : (size_t)0);
		return false;
	}
	memcpy(patched, iov[1].iov_base, sizeof(*patched));
	if (patched->major != FUSE_KERNEL_VERSION) {
		set_why(channel, "libfuse answered INIT with FUSE %u.%u", patched->major,
			patched->minor);
		return false;
	}
	patched->flags |= FUSE_HANDLE_KILLPRIV_V2;
	out[0] = iov[0];
	out[1].iov_base = patched;
	out[1].iov_len = sizeof(*patched);
	return true;
}

ssize_t hy_fuse_channel_writev(struct hy_fuse_channel *channel, int fd, const struct iovec *iov,
			       int count)
{
	struct fuse_init_out patched;
	struct iovec out[2];
	ssize_t n;
	int saved;

	/* one load per reply once INIT is past */
	if (atomic_load_explicit(&channel->init, memory_order_acquire) != INIT_OFFERED ||
	    !patch_init_reply(channel, iov, count, out, &patched))
		return writev(fd, iov, count);
	/* before the write: the kernel may send the first flagged request to
	 * another worker as soon as it has the reply */
	atomic_store_explicit(&channel->killpriv_v2, true, memory_order_release);
	n = writev(fd, out, 2);
	saved = errno;
	if (n < 0) {
		atomic_store_explicit(&channel->killpriv_v2, false, memory_order_release);
		set_why(channel, "the INIT reply could not be written: %s", strerror(saved));
	} else {
		hy_log(LOG_INFO, "fuse: FUSE_HANDLE_KILLPRIV_V2 taken: the daemon clears setuid, "
				 "setgid and security.capability itself");
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

int hy_fuse_channel_install(struct hy_fuse_channel *channel, struct fuse_session *se, char *why,
			    size_t why_size)
{
	static const struct fuse_custom_io io = {
		.read = channel_read, .writev = channel_writev,
		/* no splice: every request must pass channel_read */
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
