/*
 * analyzer.h - BORG's analyzer: the access log into the master access graph.
 *
 * What it is for: the profiler (profiler.h) logs every request; the
 * analyzer turns that log into a directed, weighted graph whose vertices
 * are block ranges of files (file id, first 4 KiB block, length) and whose
 * edges say "this range was read right after that one by the same
 * process", weighted by how often; the planner (planner.h) lays the graph
 * out in the BOPT.
 *
 * Building (BORG, "Analyzer"), request by request in log order:
 *   - A request's range is mapped onto the graph: vertices never overlap,
 *     so existing vertices that the range cuts across are split at its
 *     ends, and a gap the range covers becomes a new vertex. The request is
 *     then the ordered run of vertices that covers it; each gets +1 weight.
 *   - Inside the run, consecutive vertices are joined by edges (the request
 *     read them in that order): +1 each.
 *   - If the same process's previous request came no more than gap_ns
 *     earlier, an edge from the last vertex of that request's run to the
 *     first vertex of this one gets +1 (a temporal dependency). The gap: a
 *     process that pauses longer is doing something else; the default,
 *     HY_ANALYZER_DEFAULT_GAP_NS (one second), is far longer than one
 *     request to a disk and far shorter than a person's pause.
 *   - Splitting a vertex V into pieces P1..Pk keeps what was known: every
 *     piece gets V's weight, V's in-edges now end at P1, its out-edges start
 *     at Pk, and P1 -> P2 -> ... -> Pk are joined by edges of V's weight
 *     (whoever read V read its pieces in that order).
 *   Only the process's last request is remembered, so memory is the graph
 *   plus one entry per process, and the cost is linear in the records read
 *   (a split is O(log V) to find the vertex plus its edges).
 *
 * Bounded memory: past max_vertices, the coldest vertices (lowest weight,
 * then least recently used) are cut, with their edges; the cuts are
 * counted in the stats. A cut vertex is only forgotten: a later request
 * makes it again.
 *
 * Modes: cumulative (BORG-C) keeps the graph from run to run, multiplying
 * every weight by a decay factor before each new run (edges and vertices
 * whose weight falls below 1 go); partial (BORG-P) starts from an empty
 * graph and reads only the last period.
 *
 * Persistence (schema 3, state.h): graph_vertices, graph_edges and
 * analyzer_runs (which log rowid the last run read up to). A run reads only
 * the log after that rowid and folds it into the saved graph: an
 * incremental run equals one full run over the same records.
 *
 * Who calls it: reconfig/reorganize.c (for `hybridctl reorganize` and the
 * daemon's reconfigurator), the trace simulator (sim/borg.c), the unit
 * tests; fs/borg_handlers.c reads one file's saved heat for "explain"
 * (hy_analyzer_file_heat(), no analyzer needed).
 *
 * Memory: the analyzer owns its graph; hy_analyzer_export() and
 * hy_analyzer_file_heat() give arrays the caller frees with free(). Locks: none; one thread at a
 * time.
 */
#ifndef HYBRIDFS_ANALYZER_H
#define HYBRIDFS_ANALYZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hybridfs/planner.h"

#define HY_ANALYZER_DEFAULT_GAP_NS	 1000000000LL
#define HY_ANALYZER_DEFAULT_MAX_VERTICES 4000000
/* The written-once window: ten minutes, longer than a build's compile
 * and link of one object, far shorter than the day after (see below). */
#define HY_ANALYZER_DEFAULT_WRITE_ONCE_NS (600 * 1000000000LL)

struct sqlite3;

struct hy_analyzer_config {
	int64_t gap_ns;	     /* 0: HY_ANALYZER_DEFAULT_GAP_NS */
	size_t max_vertices; /* 0: HY_ANALYZER_DEFAULT_MAX_VERTICES */
	/* 0: HY_ANALYZER_DEFAULT_WRITE_ONCE_NS; negative: no file is taken
	 * for written once */
	int64_t write_once_ns;
};

struct hy_analyzer_stats {
	uint64_t requests;     /* requests folded in */
	uint64_t vertices;     /* in the graph now */
	uint64_t edges;	       /* in the graph now */
	uint64_t splits;       /* vertices split */
	uint64_t cut_vertices; /* cut to keep memory bounded */
	uint64_t cut_edges;
};

struct hy_analyzer;

int hy_analyzer_new(const struct hy_analyzer_config *config, struct hy_analyzer **out);
void hy_analyzer_free(struct hy_analyzer *analyzer);

/* Folds one request in (log order). @nblocks >= 1. Returns 0 or -ENOMEM
 * (the graph is unchanged then). */
int hy_analyzer_feed(struct hy_analyzer *analyzer, int64_t ts_ns, uint32_t process,
		     uint64_t file_id, uint64_t block, uint32_t nblocks);

/* Cumulative mode, between runs: every weight times @factor (0 < f <= 1),
 * dropping what falls below 1. Forgets the processes' last requests. */
void hy_analyzer_decay(struct hy_analyzer *analyzer, double factor);

void hy_analyzer_get_stats(const struct hy_analyzer *analyzer, struct hy_analyzer_stats *out);

/* The graph for the planner: vertices sorted by (file_id, block), edges
 * with indexes into that array; @weights (may be NULL) gets each vertex's
 * weight. Returns 0 or -ENOMEM. */
int hy_analyzer_export(const struct hy_analyzer *analyzer, struct hy_plan_vertex **vertices,
		       size_t *nv, uint64_t **weights, struct hy_plan_edge **edges, size_t *ne);

/* Reads access_log rows with rowid > @after (in rowid order) from @db and
 * feeds them, but for the files left out (below); sets @last to the last
 * rowid read. Returns 0, or a negative errno with the database's message
 * in @why. */
int hy_analyzer_feed_log(struct hy_analyzer *analyzer, struct sqlite3 *db, int64_t after,
			 int64_t *last, char *why, size_t why_size);

/*
 * Files left out of the graph (hy_analyzer_feed_log), so that no plan
 * relocates them:
 *   - removed: its files row says its last name went through the mount
 *     (gone_ns, identity.h); its log rows are skipped and the vertices a
 *     loaded graph had of it are cut;
 *   - written once (a build output): over the log rows read, the file was
 *     written, was born (files.birth_ns, else first_seen_ns) at most the
 *     window (write_once_ns) before its first request there, and no read
 *     of it came later than the window after its last write. A compiler's
 *     object read back by the linker at once and removed by the next
 *     clean is such a file; a file read again later (a header generated
 *     once and read every morning) is not, and neither is one made before
 *     the log's window that is rewritten (a source edited and compiled).
 *     Its log rows are skipped.
 * hy_analyzer_save() stores the list (table plan_files, state.h) with the
 * run, for explain.
 */
enum hy_analyzer_left_reason {
	HY_ANALYZER_LEFT_REMOVED = 1,
	HY_ANALYZER_LEFT_WRITTEN_ONCE = 2,
	/* its path matches an exclude (rules.h: cache_rules, exclude=) */
	HY_ANALYZER_LEFT_EXCLUDED = 3,
};

struct hy_analyzer_left {
	uint64_t file_id;
	enum hy_analyzer_left_reason reason;
	uint64_t requests; /* its log rows skipped in this feed */
};

/* What the log says of one file, for the written-once rule (times in ns,
 * CLOCK_REALTIME; 0: none). */
struct hy_analyzer_file_window {
	int64_t born_ns;       /* birth time, else when first seen; 0: unknown */
	int64_t first_ns;      /* its first request among the rows read */
	int64_t last_write_ns; /* its last write there, 0 when none */
	int64_t last_read_ns;  /* its last read there, 0 when none */
};

/* The rule above, pure: whether @w is a written-once file for the window
 * @window_ns (<= 0: never). */
bool hy_analyzer_written_once(const struct hy_analyzer_file_window *w, int64_t window_ns);

/* The files the last hy_analyzer_feed_log() left out, by id (valid until
 * the next feed or the analyzer's free). */
void hy_analyzer_left_out(const struct hy_analyzer *analyzer, const struct hy_analyzer_left **out,
			  size_t *n);

/* Its name in plan_files and explain: "removed", "written-once",
 * "excluded". */
const char *hy_analyzer_left_name(enum hy_analyzer_left_reason reason);

/* Saves the graph (replacing the saved one), the files the last feed left
 * out (plan_files), and records a run reading up to @last_rowid in @mode
 * ("cumulative" or "partial"), in one transaction.
 * hy_analyzer_load() reads the saved graph back and gives the rowid to go
 * on from (0 with no run yet). Both return 0 or a negative errno with a
 * message. */
int hy_analyzer_save(const struct hy_analyzer *analyzer, struct sqlite3 *db, const char *mode,
		     int64_t last_rowid, char *why, size_t why_size);
int hy_analyzer_load(struct hy_analyzer *analyzer, struct sqlite3 *db, int64_t *last_rowid,
		     char *why, size_t why_size);

/* One vertex of the saved graph, as "explain" shows a file's heat. */
struct hy_analyzer_heat {
	uint64_t block, nblocks;
	double weight;
};

/* The saved graph's vertices of file @file_id (as the last run saved them
 * in the state database at @db_path, read on a connection of its own,
 * read-only), sorted by block, in *@out (freed by the caller; NULL when
 * none). Returns 0, or -EIO / -ENOMEM with a message in @why. */
int hy_analyzer_file_heat(const char *db_path, uint64_t file_id, struct hy_analyzer_heat **out,
			  size_t *n, char *why, size_t why_size);

/* What the newest plan says of file @file_id, for explain: whether the
 * run that made it left the file out (plan_files: @left is its reason's
 * name, "" when not), how many of its blocks the plan placed, and the
 * plan's state, capacity and blocks placed (have_plan false: no plan
 * yet). Read as hy_analyzer_file_heat() reads. 0, or -EIO with a message. */
struct hy_analyzer_file_plan {
	char left[16];
	uint64_t planned_blocks;
	bool have_plan;
	uint64_t generation;
	char state[16]; /* planned, copying, done, failed */
	uint64_t capacity_blocks, plan_blocks;
};
int hy_analyzer_file_plan(const char *db_path, uint64_t file_id, struct hy_analyzer_file_plan *out,
			  char *why, size_t why_size);

#endif
