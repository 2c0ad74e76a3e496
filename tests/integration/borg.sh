#!/usr/bin/env bash
# BORG's analyzer and planner on a real mount's access log, through
# `hybridctl reorganize --dry-run`: scattered blocks that one process reads
# again and again are planned first, in the order it reads them.
#
# The plan worked out by hand (analyzer.h and planner.h): a 128 KiB file
# made outside the mount is read whole in one request (one vertex, blocks
# 0-31; not a write through the mount, since a file written and only read
# back at once is written once and left out of plans), then one process reads
# blocks 10, 2, 20, three times over. The reads split the written vertex;
# the hot vertices (2), (10), (20) get weight 4 and edges 10->2 (3),
# 2->20 (3), 20->10 (2), plus the weight-1 chain edges of the split.
# Connectivity: (2) 8, (10) 7, (20) 7, so (2) is placed first; (10) and (20)
# tie on connection to it (3), the lower index (10) goes next, in front
# (its edge leads into the placed set); (20) follows at the back. With room
# for three blocks the plan is exactly: 10, 2, 20.
. "$(dirname "$0")/lib.sh"
hy_setup
bin=${HY_TESTBIN:-$(dirname "$0")}
HYBRIDCTL=${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}
m=$HY_TMP/m

mkdir -p "$HY_TMP/b"
head -c 131072 /dev/urandom >"$HY_TMP/b/f"
hy_mount "$HY_TMP/b" "$m" -o writeback_cache=off,state="$HY_TMP/state"
"$bin/hy-iogen" whole "$m/f" r:0:131072 || hy_die "reading the file whole failed"
"$bin/hy-iogen" reader "$m/f" r:40960:4096 r:8192:4096 r:81920:4096 \
	r:40960:4096 r:8192:4096 r:81920:4096 r:40960:4096 r:8192:4096 r:81920:4096 ||
	hy_die "the reads failed"

# --gap 3600: the reads count as one sequence however slowly they ran
out=$("$HYBRIDCTL" reorganize "$m" --dry-run --gap 3600 --capacity 12K --top 5 2>&1)
rc=$?
echo "$out" >&2
[ $rc = 0 ] || hy_fail "reorganize --dry-run exited $rc"
grep -q "analyzed  10 requests" <<<"$out" || hy_fail "not every logged request was analyzed"
grep -q "plan      3 ranges, 12 KiB of 12 KiB" <<<"$out" || hy_fail "the plan does not hold three ranges"
# the plan's rows: BOPT block, file, first block, blocks, name
rows=$(awk '$1 ~ /^[0-9]+$/ && NF >= 4 { print $1, $3, $4 }' <<<"$out")
expected=$'0 10 1\n1 2 1\n2 20 1'
if [ "$rows" != "$expected" ]; then
	hy_fail "the plan is not blocks 10, 2, 20 in that order; got:"$'\n'"$rows"
fi

# partial mode over the same log gives the same plan (one run, no saved graph)
rows=$("$HYBRIDCTL" reorganize "$m" --dry-run --gap 3600 --mode partial --capacity 12K 2>/dev/null |
	awk '$1 ~ /^[0-9]+$/ && NF >= 4 { print $1, $3, $4 }')
[ "$rows" = "$expected" ] || hy_fail "partial mode planned differently:"$'\n'"$rows"

# nothing was changed: no analyzer run was recorded, the data is intact
runs=$(sqlite3 "$HY_TMP/state/hybridfs.db" "SELECT count(*) FROM analyzer_runs" 2>&1)
[ "$runs" = 0 ] || hy_fail "a dry run recorded an analyzer run ($runs)"
cmp -s "$m/f" "$HY_TMP/b/f" || hy_fail "the file differs from its backing copy after the dry run"

# bad options name the problem
msg=$("$HYBRIDCTL" reorganize "$m" --dry-run --mode sideways 2>&1)
[ $? = 2 ] && grep -q '"sideways"' <<<"$msg" || hy_fail "a bad --mode was not refused by name: $msg"
msg=$("$HYBRIDCTL" reorganize "$m" --dry-run --capacity lots 2>&1)
[ $? = 2 ] && grep -q '"lots"' <<<"$msg" || hy_fail "a bad --capacity was not refused by name: $msg"

hy_umount "$m"
hy_pass
