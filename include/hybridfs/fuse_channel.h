/*
 * fuse_channel.h - the daemon's end of /dev/fuse: libfuse's session reads
 * requests and writes replies through this module (fuse_session_custom_io,
 * libfuse 3.13+), so the daemon sees each request as the kernel sent it,
 * before libfuse parses it, and the INIT reply before the kernel does.
 *
 * What it is for: three things libfuse 3.14's API cannot do.
 *
 *  1. FUSE_HANDLE_KILLPRIV_V2 (init flag 1 << 28, protocol 7.33, Linux
 *     5.11). A FUSE superblock lacks SB_NOSEC unless the daemon takes it,
 *     so the kernel asks for security.capability (GETXATTR) before every
 *     write(2) to learn whether the write must remove it. With the flag the
 *     kernel sets SB_NOSEC and leaves clearing setuid, setgid and
 *     security.capability to the daemon, marking the requests whose caller
 *     lacks CAP_FSETID: FUSE_WRITE_KILL_SUIDGID (fuse_write_in.write_flags),
 *     FATTR_KILL_SUIDGID (fuse_setattr_in.valid), FUSE_OPEN_KILL_SUIDGID
 *     (fuse_open_in and fuse_create_in .open_flags). libfuse 3.14 has no
 *     capability bit for it and passes none of the three flags to the
 *     handlers. So the channel ORs the flag into libfuse's INIT reply when
 *     the kernel's INIT offered it (the reply is found by the INIT request's
 *     unique; the flag lies in the low 32 bits, so FUSE_INIT_EXT's flags2
 *     is left as libfuse wrote it), and keeps each request's kill flag for
 *     its handler (hy_fuse_channel_kill_suidgid). libfuse 3.14 replies
 *     with its own struct fuse_init_out, 64 bytes, the size the kernel's
 *     has to this day (6.18; a shorter one would do: the kernel takes
 *     INIT's reply at any length), and protocol minor 31: the kernel reads
 *     the flag at any minor from 6 on, and the three kill flags sit in
 *     fields every minor has.
 *  2. Requests counted by opcode, for "status": what an operation costs
 *     in round trips (BENCHMARKS.md, "Requests per operation").
 *  3. FUSE passthrough (protocol 7.40, Linux 6.9; the kernel's
 *     Documentation/filesystems/fuse-passthrough.rst): the kernel reads
 *     and writes an open file's backing file itself, without a READ or
 *     WRITE request (fs/passthrough.c decides which files). At INIT, when
 *     the mount asked (hy_fuse_channel_want_passthrough) and the kernel
 *     offers FUSE_PASSTHROUGH (flags2 bit 5, with FUSE_INIT_EXT), the
 *     reply gets FUSE_INIT_EXT, the flag and max_stack_depth (the field
 *     after flags2, padding in libfuse 3.14's struct, which zeroes it) --
 *     unless libfuse's reply asks for the kernel's write-back cache, with
 *     which the kernel refuses passthrough. Per file, the daemon registers
 *     the backing descriptor (hy_fuse_channel_backing_open, the
 *     FUSE_DEV_IOC_BACKING_OPEN ioctl on the device: CAP_SYS_ADMIN) and
 *     names the id for this thread's OPEN or CREATE reply
 *     (hy_fuse_channel_reply_passthrough); the reply's writev ORs
 *     FOPEN_PASSTHROUGH into a copy of its fuse_open_out and puts the id
 *     in the field after open_flags (padding in libfuse 3.14, whose
 *     fuse_reply_open and fuse_reply_create do not fill it). libfuse 3.14
 *     writes a handler's reply on the handler's thread, inside
 *     fuse_reply_open/_create, so the id is a thread-local, taken by the
 *     one writev whose header has this thread's request's unique (a
 *     notification the handler sends first passes untouched).
 *
 * Fallback: a kernel that does not offer the flag, a daemon started with
 * killpriv_v2=off, or an INIT reply of a form the channel does not know
 * leave the reply as libfuse made it: the kernel keeps clearing the bits
 * itself, with a GETXATTR per write, and hy_fuse_channel_why() says why.
 * Passthrough alike: not asked for (passthrough=off, not root), not
 * offered, the write-back cache, or an unknown reply leave every file's
 * data to the daemon, and hy_fuse_channel_passthrough_why() says why.
 * If the channel cannot be installed at all, the session keeps libfuse's
 * own reads and writes (fs/main.c logs the reason) and nothing is counted.
 *
 * Who calls it: fs/main.c makes the channel and installs it after
 * fuse_session_mount(), before the session loop (the device descriptor is
 * the same whether root's mount(2) or fusermount3 made it); libfuse calls
 * its read and writev; the FUSE handlers (fs/ops*.c) ask
 * hy_fuse_channel_killpriv_v2() and hy_fuse_channel_kill_suidgid();
 * fs/status.c reads the counts; the unit tests drive the read and writev
 * over a pipe.
 *
 * Threads: libfuse 3.14 handles a request on the thread that read it
 * (fuse_loop_mt.c, fuse_do_work: fuse_session_receive_buf_int, then
 * fuse_session_process_buf_int; fuse_session_loop alike), so a request's
 * kill flag is kept in a thread-local variable, set by the read and read by
 * the handler: no table by unique, nothing to clean up. A splice read would
 * bypass the read call; libfuse 3.14 splices only for filesystems with
 * write_buf, which hybridfs has not, and fs/ops.c turns
 * FUSE_CAP_SPLICE_READ off anyway. Replies may be spliced
 * (FUSE_CAP_SPLICE_WRITE: the READ replies of fs/ops_files.c, made from
 * a pipe by fuse_reply_data()); the channel's splice_send passes them to
 * the device as they are, none being a reply it changes.
 *
 * The request's unique and opcode, and an OPEN or CREATE reply's backing
 * id, are thread-locals too, for the same reason.
 *
 * Memory: the caller owns the channel (hy_fuse_channel_new/_free); it must
 * outlive the session (fuse_session_destroy). One session per process: the
 * installed channel is the one the read and writev calls find. Locks: none;
 * the counters and the INIT state are atomics (relaxed counters, one
 * release/acquire pair for the INIT state); the why text is written once,
 * before the flag it explains is published.
 */
#ifndef HYBRIDFS_FUSE_CHANNEL_H
#define HYBRIDFS_FUSE_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct fuse_session;
struct hy_fuse_channel;

/* Opcodes counted one by one are 1 .. HY_FUSE_CHANNEL_OPCODES - 1; slot 0
 * counts the rest (CUSE_INIT, opcodes newer than this table). */
#define HY_FUSE_CHANNEL_OPCODES 64

/* A channel that asks for FUSE_HANDLE_KILLPRIV_V2 when the kernel offers
 * it (@want_killpriv_v2) or never. Returns 0 or -ENOMEM. */
int hy_fuse_channel_new(bool want_killpriv_v2, struct hy_fuse_channel **out);
/* After fuse_session_destroy(). Accepts NULL. */
void hy_fuse_channel_free(struct hy_fuse_channel *channel);

/* Routes @se's reads and writes of its device through @channel. Call after
 * fuse_session_mount() and before the session loop; only one channel per
 * process. Returns 0, or a negative errno with the reason in @why (the
 * session then keeps libfuse's own reads and writes). */
int hy_fuse_channel_install(struct hy_fuse_channel *channel, struct fuse_session *se, char *why,
			    size_t why_size);

/* The read and writev libfuse calls, exposed for the unit tests: read(2)
 * and writev(2) of @fd, with the request noted (counted, its kill flag
 * kept for this thread, INIT's offer and unique recorded) and the INIT
 * reply given the flag. Same return and errno as the system calls. */
ssize_t hy_fuse_channel_read(struct hy_fuse_channel *channel, int fd, void *buf, size_t len);
ssize_t hy_fuse_channel_writev(struct hy_fuse_channel *channel, int fd, const struct iovec *iov,
			       int count);

/* Whether the kernel was told the daemon clears setuid, setgid and
 * security.capability itself. Set before the INIT reply is written (a
 * request may be read on another thread before that writev returns) and
 * cleared again if the write fails. false for NULL. */
bool hy_fuse_channel_killpriv_v2(const struct hy_fuse_channel *channel);
/* Why the kernel still clears them (or NULL once it does not, or before
 * INIT). The text lives as long as the channel. */
const char *hy_fuse_channel_why(const struct hy_fuse_channel *channel);

/* Tells the kernel to forget its copy of @nodeid's attributes (a
 * notification on the device), after the daemon changed its mode while
 * answering a request whose reply carries no attributes (WRITE, OPEN).
 * Safe from that request's handler. Returns 0 or a negative errno
 * (-ENOTCONN when the channel is not installed). */
int hy_fuse_channel_invalidate(struct hy_fuse_channel *channel, uint64_t nodeid);

/* Whether the request this thread read last carries the kernel's kill flag
 * for its opcode (the caller lacks CAP_FSETID): FUSE_WRITE_KILL_SUIDGID on
 * WRITE, FATTR_KILL_SUIDGID on SETATTR, FUSE_OPEN_KILL_SUIDGID on OPEN and
 * CREATE. For the FUSE handlers, on the thread libfuse calls them on. */
bool hy_fuse_channel_kill_suidgid(void);

/* Passthrough: asks for it at INIT with @max_stack_depth (1: the backing
 * files are on a filesystem that stacks on nothing, and the mount itself
 * may lie under an overlayfs; 2: the backing files may be on an overlayfs,
 * the mount may not be under one), or not (0; @why_not the reason shown,
 * NULL for passthrough=off, which is not logged). Before install. */
void hy_fuse_channel_want_passthrough(struct hy_fuse_channel *channel, unsigned max_stack_depth,
				      const char *why_not);
/* Whether the kernel was told FUSE_PASSTHROUGH (set before the INIT reply
 * is written, cleared if that write fails); false for NULL. */
bool hy_fuse_channel_passthrough(const struct hy_fuse_channel *channel);
/* Why not (NULL once it was told, or before INIT); lives as long as the
 * channel. For NULL, a text saying the channel is not in. */
const char *hy_fuse_channel_passthrough_why(const struct hy_fuse_channel *channel);
/* Registers @fd (a descriptor open for reading or writing, not O_PATH)
 * with the kernel as a backing file: its id (> 0) or a negative errno
 * (-ENOTCONN: no passthrough; -EPERM: no CAP_SYS_ADMIN; -ELOOP: @fd's
 * filesystem stacks deeper than max_stack_depth allows). */
int hy_fuse_channel_backing_open(struct hy_fuse_channel *channel, int fd);
/* Lets the kernel drop the id (after the last release of the files
 * opened with it: an open reply still on its way would fail). 0 or a
 * negative errno. */
int hy_fuse_channel_backing_close(struct hy_fuse_channel *channel, int backing_id);
/* For the OPEN or CREATE handler, right before fuse_reply_open/_create:
 * the reply this thread writes for its request carries @backing_id with
 * FOPEN_PASSTHROUGH (0: nothing). A reply of a form the channel does not
 * know goes out without it, logged (libfuse 3.14's never does). */
void hy_fuse_channel_reply_passthrough(int backing_id);

/* Requests read with @opcode (slot 0: the others); 0 for NULL. */
uint64_t hy_fuse_channel_count(const struct hy_fuse_channel *channel, unsigned opcode);
/* "lookup", "getxattr", ... for an opcode below HY_FUSE_CHANNEL_OPCODES
 * ("other" for 0), or NULL for one without a name. */
const char *hy_fuse_channel_opcode_name(unsigned opcode);

#endif
