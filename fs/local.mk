noinst_LIBRARIES += fs/libhyfs.a
fs_libhyfs_a_SOURCES = fs/fs_internal.h fs/ops_internal.h fs/inode.c fs/ops.c fs/ops_names.c \
	fs/ops_files.c fs/ops_dirs.c fs/creds.c fs/profiler.c \
	fs/identity.c fs/control_server.c fs/status.c fs/borg_handlers.c fs/cache_glue.c \
	fs/policy_glue.c fs/pin_glue.c fs/metrics_glue.c fs/fuse_channel.c fs/kcache.c fs/kfile.c \
	fs/passthrough.c
fs_libhyfs_a_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS) $(SQLITE_CFLAGS) $(LIBEVENT_CFLAGS) $(JSONC_CFLAGS)

bin_PROGRAMS += hybridfs
hybridfs_SOURCES = fs/main.c
hybridfs_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS)
hybridfs_LDADD = fs/libhyfs.a reconfig/libhyreconfig.a reconfig/libhyreorganize.a \
	analyzer/libhyanalyzer.a planner/libhyplanner.a engine/libhyengine.a cache/libhycache.a borg/libhyborg.a device/libhydevice.a lib/libhycommon.a $(FUSE_LIBS) $(SQLITE_LIBS) \
	$(LIBEVENT_LIBS) $(JSONC_LIBS) $(BLKID_LIBS)

# mount(8) runs /sbin/mount.TYPE for `mount -t hybridfs` and fstab lines.
install-exec-hook:
	$(MKDIR_P) "$(DESTDIR)$(mounthelperdir)"
	rm -f "$(DESTDIR)$(mounthelperdir)/mount.hybridfs"
	$(LN_S) "$(bindir)/hybridfs" "$(DESTDIR)$(mounthelperdir)/mount.hybridfs"

uninstall-hook:
	rm -f "$(DESTDIR)$(mounthelperdir)/mount.hybridfs"
