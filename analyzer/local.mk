# BORG's analyzer: the access log into the master access graph (analyzer.c,
# its parts analyzer_graph.c and analyzer_db.c, analyzer_internal.h).
noinst_LIBRARIES += analyzer/libhyanalyzer.a
analyzer_libhyanalyzer_a_SOURCES = analyzer/analyzer.c analyzer/analyzer_graph.c analyzer/analyzer_db.c \
	analyzer/analyzer_internal.h
analyzer_libhyanalyzer_a_CFLAGS = $(AM_CFLAGS) $(SQLITE_CFLAGS)
