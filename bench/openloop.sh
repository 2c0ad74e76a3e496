#!/bin/bash
# openloop.sh - closed loop against open loop (issue 7) on every trace of
# ../shared/traces that has timestamps: LRU, LARC and LRU3 at 10% of the
# footprint over the HDD model, each request served one after the other
# (closed loop: response = service) and at its timestamp (open loop: it
# waits for the disk when the requests before it keep it busy). Response
# mean and 99th percentile, the mean wait, the requests that waited, the
# disk's utilization over the trace's span. Open loop is where a cache's
# hits show as shorter queues, not only shorter service.
#
# Usage: bench/openloop.sh [BUILD_DIR] [--traces DIR] [--out FILE]
# Defaults: BUILD_DIR /work/build (else _build), --traces ../shared/traces
# beside the source tree. About a minute.
set -u
set -o pipefail

. "$(dirname "$0")/script.sh"
bench_trace_args "$@"

mapfile -t FILES < <(find "$TRACES" -maxdepth 1 -type f ! -name '*.md' ! -name 'LICENSE*' | sort)
{
	echo "### Closed loop and open loop (bench/openloop.sh)"
	echo
	echo "HDD model, 10% of the footprint, first 2 M accesses; ms."
	echo
	echo "| trace | policy | closed mean / p99 | open mean / p99 | open wait mean | waited | HDD utilization |"
	echo "|---|---|---:|---:|---:|---:|---:|"
	for f in "${FILES[@]}"; do
		n=$(basename "$f")
		args=(--policy lru,larc,lru3 --cache-size 10% --device hdd --cap 2000000 --json)
		closed=$("$HYBRIDCTL" simulate "$f" "${args[@]}") || die "simulate $n failed"
		if ! open=$("$HYBRIDCTL" simulate "$f" "${args[@]}" --open-loop 2>/dev/null); then
			echo "| $n | (no timestamps) | | | | | |"
			continue
		fi
		for i in 0 1 2; do
			jq -r --arg n "$n" --argjson i "$i" --argjson c "$closed" '
				.results[$i] as $o | $c.results[$i] as $k |
				"| \($n) | \($o.policy) | \($k.response.mean_ms * 100 | round / 100) / \($k.response.p99_ms * 100 | round / 100) | \($o.response.mean_ms * 100 | round / 100) / \($o.response.p99_ms * 100 | round / 100) | \($o.wait_mean_ms * 100 | round / 100) | \($o.requests_waited) of \($o.response.requests) | \($o.backing_utilization * 1000 | round / 10)% |"' <<<"$open"
		done
	done
} | bench_output
