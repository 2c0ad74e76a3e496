/* emuvfs.c - see include/hybridfs/emuvfs.h. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hybridfs/device.h"
#include "hybridfs/emuvfs.h"

#define MAIN_DBS 32 /* main databases whose descriptors are kept */

struct emu_file {
	sqlite3_file base;  /* pMethods: emu_methods */
	int fd;		    /* the shim's own, or -1: not charged */
	bool own;	    /* fd closes with the file (not a main database's) */
	sqlite3_file *real; /* the wrapped VFS's file, right after this struct */
};

static sqlite3_vfs emu_vfs;
static sqlite3_vfs *below;
static struct hy_device_emulation *_Atomic charged;

static pthread_mutex_t dbs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	dev_t dev;
	ino_t ino;
	int fd;
} dbs[MAIN_DBS];
static size_t ndbs;

static struct hy_device_emulation *emulation(void)
{
	return atomic_load_explicit(&charged, memory_order_acquire);
}

static sqlite3_file *real_of(sqlite3_file *f)
{
	return ((struct emu_file *)f)->real;
}

static int emu_close(sqlite3_file *f)
{
	struct emu_file *ef = (struct emu_file *)f;
	int rc = ef->real->pMethods ? ef->real->pMethods->xClose(ef->real) : SQLITE_OK;

	if (ef->own && ef->fd >= 0)
		close(ef->fd);
	ef->fd = -1;
	return rc;
}

/* The bytes the file holds of [@off, @off + @amt): what a read gave. */
static uint64_t held(int fd, sqlite3_int64 off, int amt)
{
	struct stat st;

	if (fstat(fd, &st) != 0 || st.st_size <= off)
		return 0;
	return (uint64_t)(st.st_size - off) < (uint64_t)amt ? (uint64_t)(st.st_size - off)
							    : (uint64_t)amt;
}

static int emu_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off)
{
	struct emu_file *ef = (struct emu_file *)f;
	struct hy_device_emulation *e = emulation();
	ssize_t cached = 0;
	uint64_t got;
	int rc;

	if (!e || ef->fd < 0 || amt <= 0)
		return ef->real->pMethods->xRead(ef->real, buf, amt, off);
	/* the page cache first: what it holds whole needs no disk (the same
	 * file's bytes SQLite's own read would give) */
	cached = hy_device_emulation_probe(ef->fd, buf, (size_t)amt, (off_t)off);
	if (cached == amt) {
		hy_device_emulation_charge(e, ef->fd, (uint64_t)off, (uint64_t)amt, (uint64_t)amt,
					   false);
		return SQLITE_OK;
	}
	rc = ef->real->pMethods->xRead(ef->real, buf, amt, off);
	got = rc == SQLITE_OK ? (uint64_t)amt : held(ef->fd, off, amt);
	if (rc == SQLITE_OK || rc == SQLITE_IOERR_SHORT_READ)
		hy_device_emulation_charge(e, ef->fd, (uint64_t)off, got,
					   cached > 0 ? (uint64_t)cached : 0, false);
	return rc;
}

static int emu_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off)
{
	struct emu_file *ef = (struct emu_file *)f;
	struct hy_device_emulation *e = emulation();
	int rc = ef->real->pMethods->xWrite(ef->real, buf, amt, off);

	if (rc == SQLITE_OK && e && ef->fd >= 0 && amt > 0)
		hy_device_emulation_charge(e, ef->fd, (uint64_t)off, (uint64_t)amt, 0, true);
	return rc;
}

static int emu_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	return real_of(f)->pMethods->xTruncate(real_of(f), size);
}

static int emu_sync(sqlite3_file *f, int flags)
{
	return real_of(f)->pMethods->xSync(real_of(f), flags);
}

static int emu_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
	return real_of(f)->pMethods->xFileSize(real_of(f), size);
}

static int emu_lock(sqlite3_file *f, int level)
{
	return real_of(f)->pMethods->xLock(real_of(f), level);
}

static int emu_unlock(sqlite3_file *f, int level)
{
	return real_of(f)->pMethods->xUnlock(real_of(f), level);
}

static int emu_check_reserved(sqlite3_file *f, int *out)
{
	return real_of(f)->pMethods->xCheckReservedLock(real_of(f), out);
}

static int emu_file_control(sqlite3_file *f, int op, void *arg)
{
	return real_of(f)->pMethods->xFileControl(real_of(f), op, arg);
}

static int emu_sector_size(sqlite3_file *f)
{
	return real_of(f)->pMethods->xSectorSize(real_of(f));
}

static int emu_device_characteristics(sqlite3_file *f)
{
	return real_of(f)->pMethods->xDeviceCharacteristics(real_of(f));
}

static int emu_shm_map(sqlite3_file *f, int page, int size, int extend, void volatile **out)
{
	const sqlite3_io_methods *m = real_of(f)->pMethods;

	return m->iVersion >= 2 && m->xShmMap ? m->xShmMap(real_of(f), page, size, extend, out)
					      : SQLITE_IOERR_SHMMAP;
}

static int emu_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
	const sqlite3_io_methods *m = real_of(f)->pMethods;

	return m->iVersion >= 2 && m->xShmLock ? m->xShmLock(real_of(f), offset, n, flags)
					       : SQLITE_IOERR_SHMLOCK;
}

static void emu_shm_barrier(sqlite3_file *f)
{
	const sqlite3_io_methods *m = real_of(f)->pMethods;

	if (m->iVersion >= 2 && m->xShmBarrier)
		m->xShmBarrier(real_of(f));
}

static int emu_shm_unmap(sqlite3_file *f, int delete_flag)
{
	const sqlite3_io_methods *m = real_of(f)->pMethods;

	return m->iVersion >= 2 && m->xShmUnmap ? m->xShmUnmap(real_of(f), delete_flag) : SQLITE_OK;
}

/* Memory-mapped pages are read without the VFS; none are offered, so every
 * read comes through emu_read (SQLite falls back to xRead). */
static int emu_fetch(sqlite3_file *f, sqlite3_int64 off, int amt, void **out)
{
	(void)f;
	(void)off;
	(void)amt;
	*out = NULL;
	return SQLITE_OK;
}

static int emu_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
	(void)f;
	(void)off;
	(void)p;
	return SQLITE_OK;
}

static const sqlite3_io_methods emu_methods = {
	.iVersion = 3,
	.xClose = emu_close,
	.xRead = emu_read,
	.xWrite = emu_write,
	.xTruncate = emu_truncate,
	.xSync = emu_sync,
	.xFileSize = emu_file_size,
	.xLock = emu_lock,
	.xUnlock = emu_unlock,
	.xCheckReservedLock = emu_check_reserved,
	.xFileControl = emu_file_control,
	.xSectorSize = emu_sector_size,
	.xDeviceCharacteristics = emu_device_characteristics,
	.xShmMap = emu_shm_map,
	.xShmLock = emu_shm_lock,
	.xShmBarrier = emu_shm_barrier,
	.xShmUnmap = emu_shm_unmap,
	.xFetch = emu_fetch,
	.xUnfetch = emu_unfetch,
};

/* A main database's descriptor: the one kept for its inode, or a new one
 * kept from now on (-1: none, and the file is not charged). */
static int main_db_fd(const char *name)
{
	struct stat st;
	int fd = -1;

	if (stat(name, &st) != 0)
		return -1;
	pthread_mutex_lock(&dbs_lock);
	for (size_t i = 0; i < ndbs; i++)
		if (dbs[i].dev == st.st_dev && dbs[i].ino == st.st_ino) {
			fd = dbs[i].fd;
			break;
		}
	if (fd < 0 && ndbs < MAIN_DBS) {
		fd = open(name, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			dbs[ndbs++] = (typeof(dbs[0])){st.st_dev, st.st_ino, fd};
	}
	pthread_mutex_unlock(&dbs_lock);
	return fd;
}

static int emu_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags,
		    int *out_flags)
{
	struct emu_file *ef = (struct emu_file *)f;
	int rc;

	(void)vfs;
	memset(ef, 0, sizeof(*ef));
	ef->fd = -1;
	ef->real = (sqlite3_file *)(ef + 1);
	rc = below->xOpen(below, name, ef->real, flags, out_flags);
	/* a file that did not open has no methods, unless the wrapped VFS
	 * left some for SQLite to close it with */
	if (ef->real->pMethods)
		ef->base.pMethods = &emu_methods;
	if (rc != SQLITE_OK)
		return rc;
	if (!name)
		return SQLITE_OK; /* a temporary file */
	if (flags & SQLITE_OPEN_MAIN_DB) {
		ef->fd = main_db_fd(name);
	} else if (flags & (SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_SUBJOURNAL |
			    SQLITE_OPEN_SUPER_JOURNAL)) {
		/* SQLite takes no POSIX lock on these: closing ours is harmless */
		ef->fd = open(name, O_RDONLY | O_CLOEXEC);
		ef->own = ef->fd >= 0;
	}
	return SQLITE_OK;
}

int hy_emuvfs_install(struct hy_device_emulation *e, char *why, size_t why_size)
{
	int rc;

	if (below) {
		atomic_store_explicit(&charged, e, memory_order_release);
		return 0;
	}
	below = sqlite3_vfs_find(NULL);
	if (!below) {
		snprintf(why, why_size, "emulate: SQLite has no file system layer");
		return -ENOSYS;
	}
	emu_vfs = *below;
	emu_vfs.zName = "hybridfs-emulate";
	emu_vfs.szOsFile = (int)sizeof(struct emu_file) + below->szOsFile;
	emu_vfs.xOpen = emu_open;
	emu_vfs.pNext = NULL;
	atomic_store_explicit(&charged, e, memory_order_release);
	rc = sqlite3_vfs_register(&emu_vfs, 1);
	if (rc != SQLITE_OK) {
		snprintf(why, why_size, "emulate: cannot set up SQLite's file layer: %s",
			 sqlite3_errstr(rc));
		below = NULL;
		return -ENOMEM;
	}
	return 0;
}

void hy_emuvfs_detach(void)
{
	atomic_store_explicit(&charged, NULL, memory_order_release);
}
