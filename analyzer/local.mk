# BORG's analyzer: the access log into the master access graph.
noinst_LIBRARIES += analyzer/libhyanalyzer.a
analyzer_libhyanalyzer_a_SOURCES = analyzer/analyzer.c
analyzer_libhyanalyzer_a_CFLAGS = $(AM_CFLAGS) $(SQLITE_CFLAGS)
