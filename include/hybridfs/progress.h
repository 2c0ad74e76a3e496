/*
 * progress.h - the one progress line hybridctl's long commands draw on a
 * terminal: a bar, the share done, the amount, the rate, the time left
 * (ETA) and "step i of n".
 *
 *   step 3 of 4  copying  [#########.........]  52%  104.0/200.0 MiB  12.5 MiB/s  ETA 0:08
 *   pass 1 of 9  footprint  1.20M requests  410.0k/s  0:03
 *
 * The step comes first and the bar takes the room left, so that a narrow
 * terminal cuts the time left rather than the step.
 *
 * What it is for: reorganize (the daemon's copy), simulate (a bar per pass
 * over the trace), flush (the dirty blocks going home) and tune (a bar per
 * replay) each had, or lacked, a bar of their own; this is the one they
 * share. It draws only when its stream (standard error) is a terminal and
 * the caller is not asked to be quiet: through a pipe or into a file
 * nothing is written, so scripts and logs see only the commands' results.
 * A line is redrawn at most five times a second, and not before half a
 * second has passed since hy_progress_begin(), so that a quick step does
 * not flicker; hy_progress_end() wipes it.
 *
 * Who calls it: ctl/reorganize_cmd.c, ctl/simulate_cmd.c,
 * ctl/flush_cmd.c, ctl/tune_cmd.c; tests/unit/test_progress.c
 * (hy_progress_format, which is pure).
 *
 * Memory: the caller owns struct hy_progress (on its stack); nothing is
 * allocated. Locks: none; one thread draws.
 */
#ifndef HYBRIDFS_PROGRESS_H
#define HYBRIDFS_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum hy_progress_unit {
	HY_PROGRESS_BYTES, /* amounts shown as 12.5 MiB, rates as MiB/s */
	HY_PROGRESS_ITEMS, /* amounts as "1200 requests" (the noun given) */
};

struct hy_progress {
	FILE *out;
	bool on;    /* drawing at all: a terminal, not quiet */
	bool drawn; /* a line is on the screen */
	enum hy_progress_unit unit;
	const char *noun;      /* HY_PROGRESS_ITEMS: "requests" */
	const char *step_word; /* "step", "pass", "mount" */
	unsigned step, steps;  /* step of steps; steps 0: not shown */
	char label[40];
	uint64_t total; /* 0: not known (no bar, no share, no ETA) */
	uint64_t done;
	double start, last; /* seconds (CLOCK_MONOTONIC): begun, drawn */
};

/* Ready to draw on @out when it is a terminal and not @quiet. */
void hy_progress_init(struct hy_progress *p, FILE *out, bool quiet, enum hy_progress_unit unit,
		      const char *noun, const char *step_word);

/* A new bar: @label, step @step of @steps (0 steps: none), @total
 * (0: not known); the clock restarts for the rate and the ETA. */
void hy_progress_begin(struct hy_progress *p, const char *label, unsigned step, unsigned steps,
		       uint64_t total);

/* @done of the total now (and the total, when it grew known or changed:
 * 0 keeps it); redraws when it is time to. */
void hy_progress_update(struct hy_progress *p, uint64_t done, uint64_t total);

/* Wipes the line, if one is drawn; the next output starts clean. */
void hy_progress_end(struct hy_progress *p);

/* The line for @p at @now (seconds, the clock of p->start), at most
 * @width columns, into @buf: its length. */
size_t hy_progress_format(const struct hy_progress *p, double now, int width, char *buf,
			  size_t size);

#endif
