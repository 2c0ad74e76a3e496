/*
 * cache_store.h - the SSD cache store: the on-disk home of the cache's
 * lines (issue 5), on a preallocated file or a whole block device.
 *
 * This module is the format only: create, open and check, the line table
 * and its metadata journal (load = checkpoint + replay, append with group
 * commit, checkpoint), and line I/O by sector mask through the device layer
 * (device.h). What goes in a line and when is the cache's business.
 *
 * Format (all integers little-endian; blocks of 4096 bytes; a line is 4096
 * bytes of 8 sectors of 512, so a sector mask is one byte):
 *
 *   block 0: the superblock
 *     offset  size  field
 *     0       8     magic "HYCACHE\0"
 *     8       4     format version (HY_CACHE_STORE_VERSION)
 *     12      4     header size in bytes (HY_CACHE_STORE_HEADER_SIZE)
 *     16      40    mount uuid, the state database's, as text, NUL-padded;
 *                   empty (all zero) for an unclaimed store, one that
 *                   `hybridctl format-cache` made before any mount: the
 *                   first mount that opens it claims it (writes its uuid
 *                   here, hy_cache_store_claim()) and it is that mount's
 *                   from then on
 *     56      4     line size in bytes (4096)
 *     60      4     flags: bit 0 clean shutdown
 *     64      8     capacity in lines
 *     72      8     generation: random, new at every format; every table
 *                   copy and journal record carries it, so nothing left
 *                   by an older format of the same space is believed
 *     80      8     line table offset (4096)
 *     88      8     line table size (both copies)
 *     96      8     journal offset (table offset + table size)
 *     104     8     journal size (a multiple of 4096)
 *     112     8     data offset (journal offset + journal size)
 *     120     8     data size (capacity * line size)
 *     128     8     FNV-1a 64 of bytes 0..127
 *     136..4095     zero
 *
 *   the line table: two copies, A then B, each one header block, then
 *   ceil(capacity * 32 / 4096) blocks of line records, then (format 3)
 *   ceil(capacity * 48 / 4096) blocks of file stamps
 *     copy header:
 *     0       8     magic "HYCTAB\0\0"
 *     8       8     generation (the superblock's)
 *     16      8     checkpoint sequence: the journal records up to this
 *                   sequence are in this copy
 *     24      8     capacity
 *     32      8     FNV-1a 64 of bytes 0..31
 *     40      8     (format 3) count of file stamps, at most capacity
 *     48      8     (format 3) FNV-1a 64 of bytes 0..47
 *     file stamp (format 3, 48 bytes, records 0 .. count-1, any order):
 *     0       8     file_id (nonzero; one stamp per file)
 *     8       8     ctime in ns (nonzero) \ of the home file, as the
 *     16      8     mtime in ns            > file's lines in this copy
 *     24      8     size in bytes         /  are current for
 *     32      12    reserved, 0
 *     44      4     FNV-1a 32 of bytes 0..43, the record's index (8 bytes
 *                   LE) and the generation (8 bytes LE)
 *   A stamp is written only when it can be believed after a crash at any
 *   later point (cache/cache.c: no dirty block of the file, its ctime
 *   past the clock's tick, read under the file's gate); the next mount
 *   keeps a file's clean lines only with a good stamp of the copy in use
 *   and serves them only once the home file has that ctime, mtime and
 *   size again. Format 1 and 2 stores keep no stamps: a mount writes
 *   their dirty lines home and makes them again (format 3, empty).
 *     line record (32 bytes, record n for line n; all zero = a free line):
 *     0       8     file_id
 *     8       8     block (in lines of the file)
 *     16      1     valid sector mask
 *     17      1     dirty sector mask (a subset of valid)
 *     18      1     flags: bit 0 in use, bit 1 (format 3) data summed
 *     19      1     reserved, 0
 *     20      2     tail (format 2): bytes of the line that lay inside
 *                   the file when the line was last journaled dirty,
 *                   1..4095; 0: the whole line (or, in format 1, unknown).
 *                   The sectors of a write that ended the file hold zeros
 *                   past its end; recovery writes home no byte past the
 *                   tail, so bytes appended to the file outside while it
 *                   was unmounted are never overwritten by those zeros
 *     22      6     format 2: sequence of the checkpoint that wrote the
 *                   record, its low 48 bits (informational). Format 1: 8
 *                   bytes at 20, no tail. Format 3: a 4-byte checksum of
 *                   the line's data (FNV-1a 32 of its 4096 bytes, sectors
 *                   not valid read as zero) when flags bit 1 says so, then
 *                   2 bytes 0: the last checkpoint of a clean unmount
 *                   reads every line back to sum it, and the next mount
 *                   reads every kept line that has one and drops those
 *                   that differ (damage from outside); a crash leaves
 *                   lines without, kept unchecked
 *     28      4     FNV-1a 32 of bytes 0..27, the line number (8 bytes LE)
 *                   and the generation (8 bytes LE): a record copied to
 *                   another slot or left by an older format is damaged
 *
 *   the metadata journal: a linear log of 64-byte records from the start
 *   of the region, restarted at every checkpoint
 *     0       4     magic "HYCJ"
 *     4       1     type: 1 fill (line holds file/block with masks),
 *                   2 free, 3 masks (of a line in use)
 *     5       1     valid sector mask
 *     6       1     dirty sector mask
 *     7       1     reserved, 0
 *     8       8     sequence
 *     16      8     generation
 *     24      8     line
 *     32      8     file_id (fill)
 *     40      8     block (fill)
 *     48      2     tail (fill, masks: as the line record's; format 1
 *                   left it 0)
 *     50      10    reserved, 0
 *     60      4     FNV-1a 32 of bytes 0..59
 *
 *   the data region: capacity lines, line n at data offset + n * 4096
 *
 * A new store has its table and the first journal block zeroed and copy
 * A's header at sequence 0, the superblock written last.
 *
 * Sequences and checkpoints: journal records are numbered without gaps.
 * Replay takes the table copy with a good header of this generation and
 * the higher checkpoint sequence S, then applies journal records 0, 1, ...
 * while each is good and has sequence S+1, S+2, ...; it stops at the first
 * that is not (a torn or damaged record, or one left from before the last
 * checkpoint, whose sequence is lower). A checkpoint writes the whole
 * table into the copy that is not in use and syncs it, then writes that
 * copy's header with the new sequence and syncs it: until that header is
 * durable the old copy and the journal, which is not touched, are what
 * replay uses, so a crash at any point loses nothing. Once it is, the
 * journal's old records have sequences at most S and are ignored, so it
 * restarts at record 0 without being erased. load() ends with such a
 * checkpoint whose sequence skips a journal's worth of numbers, so that no
 * record of before the crash (one written but never made durable) can ever
 * match the sequence expected next.
 * Every checkpoint takes a sequence of its own (one past the last record
 * written): a copy written with no record since the last checkpoint must
 * still be the newer one, since only it has the clean lines and stamps
 * of now.
 *
 * Opening checks everything: magic (not a store: refused, naming what
 * libblkid finds there), version (newer: refused), checksum and field
 * consistency (damaged: refused), uuid (another mount's: refused; an
 * unclaimed store is any mount's to claim), size (truncated: refused).
 * -EUCLEAN, -EPROTO or -EEXIST with a message naming the file and the
 * problem; nothing is written to a store that failed.
 *
 * The lines of a store outlive a mount (issue 19): a clean unmount's last
 * checkpoint leaves every clean line and its file's stamp, and a crash
 * leaves the last checkpoint's with the journal after it. A clean line is
 * not journaled when it is filled, so a line the durable table names is
 * journaled free (a FREE record, durable) before the cache reuses it.
 *
 * Who calls it: the cache (cache/cache.c at mount: open, claim, load;
 * cache/lines.c, cache_io.c and cache_fsync.c: line I/O, appends and
 * checkpoints), fs/cache_glue.c and fs/main.c (hy_cache_store_resolve
 * for cache=), fs/main.c for a mount that leaves the store out
 * (hy_cache_store_left_dirty),
 * `hybridctl format-cache` (ctl/format_cache_cmd.c: create, unclaimed),
 * sim/full.c (a store of its own); the tests and the fuzz target.
 *
 * Memory: struct hy_cache_store owns its descriptor, its device (object 0,
 * offsets in bytes from the start of the store) and, from load() until
 * its owner takes the table over (hy_cache_store_external_table), an
 * in-memory copy of the line table (24 bytes per line) that appends keep
 * current and checkpoints write; likewise the file stamps load() found,
 * until hy_cache_store_external_stamps(). Locks: store->lock, a leaf, protects the journal
 * state and the table copy; it is held across an append's one 64-byte
 * pwrite (so that records reach the file in sequence order, as
 * map_journal.c does) but never during fdatasync. Checkpoint,
 * load, set_clean and close are not concurrent with appends: the caller
 * quiesces the cache. Line reads and writes are pread/pwrite, no lock.
 */
#ifndef HYBRIDFS_CACHE_STORE_H
#define HYBRIDFS_CACHE_STORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hybridfs/group_commit.h"
#include "hybridfs/cache_index.h" /* the line's geometry: HY_CACHE_LINE_SIZE, sectors */

#define HY_CACHE_STORE_MAGIC	   "HYCACHE\0"
#define HY_CACHE_STORE_VERSION	   3 /* 3: file stamps; 2: the tail; 1 is read as tail 0 */
#define HY_CACHE_STORE_HEADER_SIZE 136
#define HY_CACHE_STORE_BLOCK	   4096
#define HY_CACHE_LINE_RECORD	   32
#define HY_CACHE_JOURNAL_RECORD	   64
#define HY_CACHE_STAMP_RECORD	   48

struct hy_device;

struct hy_cache_store_header {
	uint32_t version;
	char uuid[40];
	uint32_t line_size;
	uint64_t capacity;
	uint64_t generation;
	uint64_t table_offset, table_size;
	uint64_t journal_offset, journal_size;
	uint64_t data_offset, data_size;
	bool clean_shutdown;
};

enum hy_cache_journal_type {
	HY_CJ_FILL = 1,
	HY_CJ_FREE = 2,
	HY_CJ_MASKS = 3,
};

struct hy_cache_journal_record {
	enum hy_cache_journal_type type;
	uint64_t line;
	uint64_t file_id; /* fill only */
	uint64_t block;	  /* fill only */
	uint8_t valid, dirty;
	uint16_t tail;	     /* fill, masks: see the line record's tail */
	uint64_t sequence;   /* set by the store on append */
	uint64_t generation; /* set by the store on append */
};

/* A line as the table holds it. */
struct hy_cache_line {
	uint64_t file_id, block;
	uint8_t valid, dirty;
	uint16_t tail; /* see the line record's tail */
	bool used;
	bool summed;  /* format 3: sum holds the data's checksum */
	uint32_t sum; /* FNV-1a 32 of the line's 4096 bytes, invalid sectors zero */
};

/* A file's stamp (format 3): the home file's identity is its file_id (the
 * state database's: filesystem UUID, inode, birth time); the stamp is what
 * the file's lines in the table are current for. */
struct hy_cache_stamp {
	uint64_t file_id;
	int64_t ctime_ns, mtime_ns;
	uint64_t size;
};

/* What load() found. */
struct hy_cache_store_load_stats {
	uint64_t lines;		  /* lines in use reported */
	uint64_t damaged_records; /* line records skipped (their line is free) */
	uint64_t replayed;	  /* journal records applied */
	bool journal_cut;	  /* replay stopped at a torn or damaged record */
	uint64_t cut_at;	  /* ... this one (0-based) */
	uint64_t stamps;	  /* file stamps of the copy in use (format 3) */
	uint64_t damaged_stamps;  /* of those, skipped as damaged */
};

struct hy_cache_store {
	int fd;
	char *path;
	struct hy_cache_store_header header;
	struct hy_device *device;
	uint64_t copy_blocks;	     /* blocks of one table copy, its header included */
	uint64_t journal_capacity;   /* records */
	pthread_mutex_t lock;	     /* protects the fields below */
	struct hy_cache_line *lines; /* capacity entries; NULL until load, or external */
	bool loaded;		     /* load() succeeded: appends and checkpoints may run */
	void (*external)(void *arg, uint64_t line, struct hy_cache_line *out);
	void *external_arg;
	/* file stamps: those load() found (until the owner takes them over,
	 * hy_cache_store_external_stamps), sorted by file id */
	struct hy_cache_stamp *stamps;
	size_t nstamps;
	int (*stamps_fn)(void *arg, struct hy_cache_stamp **out, size_t *n);
	void *stamps_arg;
	bool summing;		 /* this checkpoint sums the lines' data (checkpoint_summed) */
	int active_copy;	 /* 0 (A) or 1 (B): the copy replay uses */
	uint64_t checkpoint_seq; /* of the active copy */
	uint64_t journal_used;	 /* records since the checkpoint */
	/* sequences: the last written, the last known synced */
	struct hy_group_commit commit;
	int error; /* a failed write or sync: sticky -errno */
};

/* Resolves `cache=`'s value: an absolute path, or UUID=, LABEL=, PARTUUID=,
 * PARTLABEL= through libblkid. 0, -EINVAL or -ENOENT with a message. */
int hy_cache_store_resolve(const char *spec, char *buf, size_t size, char *why, size_t why_size);

/* Formats a store at @path for mount @uuid (NULL or "": unclaimed, see
 * the uuid field above): a new file of @size bytes (preallocated), an
 * existing regular file (resized to @size), or a whole block device (@size
 * ignored). Refused (-EEXIST, saying what was found) when libblkid finds a
 * filesystem or other signature there, or when it is another mount's store
 * or a damaged one, unless @force. A mount's format may replace its own
 * store or an unclaimed one; an unclaimed format refuses every good store
 * ("already holds a cache store"), unless @force. @line_size must be
 * HY_CACHE_LINE_SIZE. Every format has a new generation. Returns 0 or a
 * negative errno with a message. */
int hy_cache_store_create(const char *path, const char *uuid, uint64_t size, uint32_t line_size,
			  bool force, char *why, size_t why_size);

/* Opens and checks the store at @path for mount @uuid (NULL: any). An
 * unclaimed store is accepted for any @uuid and stays unclaimed until
 * hy_cache_store_claim(). */
int hy_cache_store_open(const char *path, const char *uuid, struct hy_cache_store **out, char *why,
			size_t why_size);

/* As hy_cache_store_open(), for a store whose file was cut short in its
 * data lines (its superblock, line table and journal whole): opened to
 * load it and read the lines that remain (a line past the end reads as
 * -EIO), so that its dirty lines can go home before it is made again.
 * Anything else open refuses, this refuses too. */
int hy_cache_store_open_truncated(const char *path, const char *uuid, struct hy_cache_store **out,
				  char *why, size_t why_size);

/* Makes an unclaimed store mount @uuid's: writes @uuid into the superblock
 * (the same header re-encoded, block 0 rewritten and fdatasync'd) and into
 * store->header. 0 also when the store is already @uuid's (nothing is
 * written); -EINVAL when it is another mount's or @uuid is empty or too
 * long; or the errno of the failed write or sync (the superblock may then
 * be either; store->header is unchanged). With a message. Like set_clean,
 * not concurrent with appends. */
int hy_cache_store_claim(struct hy_cache_store *store, const char *uuid, char *why,
			 size_t why_size);

/* Reads the line table (the newer good copy) and replays the journal into
 * the store's table, then calls @cb for every line in use, in line order
 * (a nonzero return stops load and is returned), then checkpoints (see
 * above). @stats may be NULL. 0 or a negative errno with a message. */
typedef int (*hy_cache_store_line_cb)(void *arg, uint64_t line, const struct hy_cache_line *l);
int hy_cache_store_load(struct hy_cache_store *store, hy_cache_store_line_cb cb, void *arg,
			struct hy_cache_store_load_stats *stats, char *why, size_t why_size);

/* Appends @r (sequence and generation set by the store), applies it to
 * the table, and returns once it is durable: group commit, one fdatasync for every
 * record written before it began, and it also makes durable the line data
 * written before the append. Only after load(). Returns 0, -EINVAL (a bad
 * record), -ENOSPC (the journal is full: checkpoint, then append again) or
 * the errno of a failed write or sync (sticky: every later append fails). */
int hy_cache_store_journal_append(struct hy_cache_store *store,
				  const struct hy_cache_journal_record *r);

/* As append, in two halves, for a caller that journals many records and
 * waits once: write() puts @r in the journal (and in the table copy) and
 * returns its sequence in *@seq without waiting; wait() returns once every
 * record up to @seq is durable (one fdatasync for all). Same errors. */
int hy_cache_store_journal_write(struct hy_cache_store *store,
				 const struct hy_cache_journal_record *r, uint64_t *seq);
int hy_cache_store_journal_wait(struct hy_cache_store *store, uint64_t seq);

/* Records the journal can still take before a checkpoint is needed. */
uint64_t hy_cache_store_journal_room(struct hy_cache_store *store);

/* Writes the table into the unused copy, then its header (see above);
 * the journal restarts. 0 or a negative errno with a message. */
int hy_cache_store_checkpoint(struct hy_cache_store *store, char *why, size_t why_size);

/* As checkpoint, with every line's data read back and summed into its
 * record (format 3; see the line record): the close of a clean unmount. */
int hy_cache_store_checkpoint_summed(struct hy_cache_store *store, char *why, size_t why_size);

/* The checksum of a line's data as the record keeps it (@buf: 4096 bytes,
 * the sectors not in @valid ignored). */
uint32_t hy_cache_store_line_sum(const void *buf, uint8_t valid);

/* For the tests: the first half of a checkpoint only (the records of the
 * unused copy, not its header), as a crash in the middle leaves it. */
int hy_cache_store_checkpoint_first_half(struct hy_cache_store *store);

/* After load(): the store's owner keeps the line table (the cache does,
 * with the index; 24 bytes a line fewer here). The store frees its own;
 * from then on appends write records without applying them anywhere, and a
 * checkpoint asks @fn for each line's record (@out zeroed: a free line).
 * @fn runs in the checkpoint's thread with no lock of the store's held
 * (appends are quiesced, as for any checkpoint); it reports every line in
 * use, dirty only where the records written so far say dirty (with masks
 * as new as it likes: the checkpoint syncs the data lines before the
 * table copy is in use). A line it reports free must get no MASKS record
 * after the checkpoint: replay takes one as damage and stops there. */
typedef void (*hy_cache_store_table_fn)(void *arg, uint64_t line, struct hy_cache_line *out);
void hy_cache_store_external_table(struct hy_cache_store *store, hy_cache_store_table_fn fn,
				   void *arg);

/* After load(): the file stamps of the copy load() used (format 3; none
 * before), sorted by file id, owned by the store until
 * hy_cache_store_external_stamps(). */
const struct hy_cache_stamp *hy_cache_store_loaded_stamps(struct hy_cache_store *store, size_t *n);

/* As external_table, for the file stamps: a checkpoint asks @fn for them
 * (a malloc'd array the store frees, at most capacity entries kept, in
 * any order; *@out NULL and 0 for none; a negative errno fails the
 * checkpoint). Runs as the table's @fn does. The store frees the stamps
 * load() found. */
typedef int (*hy_cache_store_stamps_fn)(void *arg, struct hy_cache_stamp **out, size_t *n);
void hy_cache_store_external_stamps(struct hy_cache_store *store, hy_cache_store_stamps_fn fn,
				    void *arg);

/* The line table as it is now (after load), or NULL (before, or external). */
const struct hy_cache_line *hy_cache_store_line(struct hy_cache_store *store, uint64_t line);

/* Reads or writes the sectors of @line in @mask (bit n: bytes n*512 ..
 * n*512+511 of the line, at the same place in @buf, a whole line). Not
 * synced: the next journal append (or sync) makes writes durable.
 * 0 or a negative errno (-EINVAL: line out of range). */
int hy_cache_store_read_line(struct hy_cache_store *store, uint64_t line, uint8_t mask, void *buf);
int hy_cache_store_write_line(struct hy_cache_store *store, uint64_t line, uint8_t mask,
			      const void *buf);
int hy_cache_store_sync(struct hy_cache_store *store);

/* Writes the clean-shutdown flag durably. 0 or a negative errno. */
int hy_cache_store_set_clean(struct hy_cache_store *store, bool clean);

/* Closes; NULL is fine. */
void hy_cache_store_close(struct hy_cache_store *store);

/* For a mount that leaves the store at @path out (fs/main.c): the dirty
 * lines a crash left in it (opened for @uuid, loaded, closed), which only a
 * mount that uses it writes home; 0 after a clean shutdown, and for a store
 * that cannot be opened or loaded. */
uint64_t hy_cache_store_left_dirty(const char *path, const char *uuid);

/* Encodings, for the tests and a fuzzer: @buf is HY_CACHE_STORE_BLOCK
 * bytes (superblock) or HY_CACHE_JOURNAL_RECORD bytes. Decoders return 0
 * or -EUCLEAN / -EPROTO (superblock, with a message). */
void hy_cache_store_encode(const struct hy_cache_store_header *h, unsigned char *buf);
int hy_cache_store_decode(const unsigned char *buf, struct hy_cache_store_header *h, char *why,
			  size_t why_size);
void hy_cache_journal_encode(const struct hy_cache_journal_record *r, unsigned char *buf);
int hy_cache_journal_decode(const unsigned char *buf, struct hy_cache_journal_record *r);

#endif
