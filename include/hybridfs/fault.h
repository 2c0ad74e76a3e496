/*
 * fault.h - fault injection: device errors and crash points, for the
 * reliability tests (issue 8; SQLite's test6.c and e2fsprogs' test_io.c
 * are the models).
 *
 * What it is for: showing that hybridfs keeps its promises (DESIGN.md
 * invariants 1-4) when a device fails or the daemon dies at the worst
 * moment. A spec, given in the environment variable HYBRIDFS_FAULTS when
 * the daemon starts, names what goes wrong:
 *
 *   HYBRIDFS_FAULTS="RULE;RULE;..."      (at most HY_FAULT_MAX_RULES)
 *   RULE   = dev=DEVICE:op=OP:err=ERR:WHEN
 *          | point=POINT:nth=N
 *          | point=POINT:nth=N:stall=FIFO
 *   DEVICE = backing | bopt | cache      (struct hy_device's name)
 *   OP     = read | write | sync
 *   ERR    = EIO | ENOSPC | short        (short: read and write only; the
 *            operation moves half the bytes, at least one, and says so;
 *            the device layer's loop asks again for the rest)
 *   WHEN   = nth=N      the Nth call of that operation only (N >= 1)
 *          | every=N    the Nth, 2Nth, 3Nth... calls (N >= 1)
 *          | after=N    every call after the Nth (N >= 0: after=0 is all)
 *   POINT  = one of the names below; nth=N: the Nth time any thread reaches
 *            it, the daemon kills itself with SIGKILL (as kill -9 does: no
 *            handler, no flush, no unmount), after one line on stderr.
 *   FIFO   = the absolute path of a FIFO (no ':' or ';' in it): instead of
 *            crashing, the thread that reaches the point the Nth time
 *            opens it to read and reads it to its end, so it waits until
 *            a test has opened the FIFO to write (its open returns once
 *            the daemon is there) and closed it again. A test holds a
 *            request where it wants it without depending on timing.
 *
 * Keys may come in any order; each once. Anything else (an unknown key,
 * device, operation, error or point, a count that is not a number, a
 * missing key, short on sync) is refused, and the daemon does not start:
 * a misspelled spec that injected nothing would make a test pass for
 * nothing. Counts are per rule, over the whole daemon (all devices of that
 * name, all threads); a device operation counts once per call of its
 * table's function (hy_device_read() may call it more than once for one
 * request: a short read, then the rest).
 *
 * The crash points, placed where a crash is most likely to break a
 * promise (the tests in tests/integration/faults.sh reach each):
 *   cache.journal.before  the cache store's journal: before a record is
 *                         written (it never reaches the file: as a power
 *                         cut before the record's sync leaves it)
 *   cache.journal.after   ... after records are durable, before the
 *                         caller (an fsync, the cleaner) goes on
 *   cache.clean.mid       the cache cleaner, between two blocks of one
 *                         file's write-back (one home, the next not)
 *   cache.migrate.mid     a cache line size migration, between two lines
 *                         filled
 *   reorg.copy.mid        a reorganization, after a chunk is written into
 *                         the BOPT and before its batch is committed
 *   map.journal.before    the indirection map's journal: before a record
 *                         is written
 *   map.journal.after     ... after records are durable, before the caller
 *                         (a commit, a write into the BOPT) goes on
 *   control.flush         the "flush" control request, before it starts
 *                         (tests/integration/ctlbusy.sh stalls it there,
 *                         to ask "status" while it runs)
 *
 * Cost without a spec: no device is wrapped (its table is the plain one),
 * and a crash point is one test of a global flag that is always false, a
 * branch the processor predicts (hy_fault_point() is inline).
 *
 * Who calls it: fs/main.c once at start (hy_fault_init_env(), before any
 * thread and before any device is made); hy_device_new() for every device
 * (hy_fault_attach()); the crash points in cache/ (cache_store.c,
 * cleaner.c, cache_reconfig.c), borg/map_journal.c, reconfig/borg_reconfig.c and
 * fs/borg_handlers.c; the unit tests (hy_fault_init(), hy_fault_reset()).
 *
 * Memory: the parsed spec is a static table (no allocation); a wrapped
 * device owns a small struct (its table and the inner one), freed by the
 * device's destroy. Locks: none; the rules are written only by init and
 * reset, which run before (or, in tests, between) any concurrent use, and
 * the counters are atomics.
 */
#ifndef HYBRIDFS_FAULT_H
#define HYBRIDFS_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hy_device;

#define HY_FAULT_ENV	   "HYBRIDFS_FAULTS"
#define HY_FAULT_MAX_RULES 16

/* True once a spec with at least one rule is in force. Written by
 * hy_fault_init() and hy_fault_reset() only. */
extern bool hy_fault_enabled;

/* Parses @spec and puts it in force (replacing any earlier one); NULL or
 * "" turns everything off. 0, or -EINVAL with the bad part named in @why
 * (then nothing is in force). Not concurrent with anything else here. */
int hy_fault_init(const char *spec, char *why, size_t why_size);

/* hy_fault_init() of the environment's HY_FAULT_ENV (unset: off). On
 * success with rules, logs what is in force (LOG_WARNING: a daemon that
 * fails on purpose should say so). */
int hy_fault_init_env(char *why, size_t why_size);

/* Everything off, counts forgotten (tests). */
void hy_fault_reset(void);

/* The spec in force as text (for messages), "" when off. */
const char *hy_fault_spec(void);

/* Wraps @dev's operations table when a rule names its device (called by
 * hy_device_new(), after the device is set up): read, write and sync then
 * go through the rules; everything else goes to the inner table as it
 * was. 0 (also when nothing names it) or -ENOMEM. */
int hy_fault_attach(struct hy_device *dev);

/* How many device faults the rules have injected so far (tests). */
uint64_t hy_fault_injected(void);

/* A crash point: see above. */
void hy_fault_point_hit(const char *name);
static inline void hy_fault_point(const char *name)
{
	if (__builtin_expect(hy_fault_enabled, 0))
		hy_fault_point_hit(name);
}

/* For tests: how many times point @name was reached (0 if no rule names
 * it: only points with a rule are counted). */
uint64_t hy_fault_point_count(const char *name);

/* Tests only: a point that is due calls this instead of killing the
 * process (NULL: kill). */
void hy_fault_set_crash_hook(void (*hook)(const char *name));

#endif
