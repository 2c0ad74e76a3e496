# The nightly reorganization: a cron.d file and a systemd service and timer
# that run `hybridctl reorganize --all --quiet` at 03:30. They are made from
# their .in templates here, at make time, so that @bindir@ is the installed
# hybridctl's folder (configure would leave it as ${exec_prefix}/bin).
contrib_files = contrib/hybridfs-reorganize.cron \
	contrib/hybridfs-reorganize.service contrib/hybridfs-reorganize.timer
contrib_edit = sed -e 's|@bindir[@]|$(bindir)|g' -e 's|@crondir[@]|$(crondir)|g'

contrib/hybridfs-reorganize.cron: $(srcdir)/contrib/hybridfs-reorganize.cron.in Makefile
	$(AM_V_GEN)$(MKDIR_P) contrib && rm -f $@ $@.tmp && \
	$(contrib_edit) $(srcdir)/contrib/hybridfs-reorganize.cron.in > $@.tmp && mv $@.tmp $@
contrib/hybridfs-reorganize.service: $(srcdir)/contrib/hybridfs-reorganize.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) contrib && rm -f $@ $@.tmp && \
	$(contrib_edit) $(srcdir)/contrib/hybridfs-reorganize.service.in > $@.tmp && mv $@.tmp $@
contrib/hybridfs-reorganize.timer: $(srcdir)/contrib/hybridfs-reorganize.timer.in Makefile
	$(AM_V_GEN)$(MKDIR_P) contrib && rm -f $@ $@.tmp && \
	$(contrib_edit) $(srcdir)/contrib/hybridfs-reorganize.timer.in > $@.tmp && mv $@.tmp $@

CLEANFILES += $(contrib_files)
EXTRA_DIST += contrib/hybridfs-reorganize.cron.in \
	contrib/hybridfs-reorganize.service.in contrib/hybridfs-reorganize.timer.in

# The units go to --with-systemdsystemunitdir (none with "no"; they are
# still built, for the test below).
noinst_DATA = contrib/hybridfs-reorganize.cron
if INSTALL_SYSTEMD_UNITS
systemdsystemunit_DATA = contrib/hybridfs-reorganize.service contrib/hybridfs-reorganize.timer
else
noinst_DATA += contrib/hybridfs-reorganize.service contrib/hybridfs-reorganize.timer
endif

# Debian's cron(8) ignores cron.d files whose names have a dot: installed
# without the .cron suffix, into --with-crondir (default /etc/cron.d,
# whatever the prefix: cron reads no other folder; empty with "no").
install-data-local: contrib/hybridfs-reorganize.cron
	@if test -n "$(crondir)"; then \
	  echo " $(MKDIR_P) '$(DESTDIR)$(crondir)'"; \
	  $(MKDIR_P) "$(DESTDIR)$(crondir)" || exit 1; \
	  echo " $(INSTALL_DATA) contrib/hybridfs-reorganize.cron '$(DESTDIR)$(crondir)/hybridfs-reorganize'"; \
	  $(INSTALL_DATA) contrib/hybridfs-reorganize.cron "$(DESTDIR)$(crondir)/hybridfs-reorganize"; \
	fi

uninstall-local:
	@if test -n "$(crondir)"; then \
	  echo " rm -f '$(DESTDIR)$(crondir)/hybridfs-reorganize'"; \
	  rm -f "$(DESTDIR)$(crondir)/hybridfs-reorganize"; \
	fi

# The generated files are checked: cron syntax, root, the installed hybridctl.
TESTS += tests/contrib-lint.sh
EXTRA_DIST += tests/contrib-lint.sh
AM_TESTS_ENVIRONMENT += HY_BUILDDIR='$(abs_top_builddir)' HY_BINDIR='$(bindir)'; \
	export HY_BUILDDIR HY_BINDIR;
