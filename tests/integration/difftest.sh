#!/bin/bash
# difftest.sh - differential random testing: hy-difftest applies the same
# random operation sequences to a plain directory and to a hybridfs mount,
# and every result and the trees must agree. Once unmounted, the backing
# directory must equal the plain one too.
#
# HY_DIFFTEST_SEEDS and HY_DIFFTEST_OPS override the seeds and the length
# of each run (e.g. to replay a failing seed). HY_DIFFTEST_DROP_CACHES=K
# also makes the kernel drop its dentry and inode caches every K operations
# (root only; it affects the whole machine, so it is not the default), which
# sends the daemon FORGETs and makes it find inodes again by name.
. "$(dirname "$0")/lib.sh"

TESTBIN=${HY_TESTBIN:-$(dirname "$0")}
DIFFTEST=$TESTBIN/hy-difftest
[ -x "$DIFFTEST" ] || hy_die "no $DIFFTEST (run make check)"

SEEDS=${HY_DIFFTEST_SEEDS:-"1 2 3 4 5"}
OPS=${HY_DIFFTEST_OPS:-2000}

hy_setup

DROP=()
[ -n "${HY_DIFFTEST_DROP_CACHES:-}" ] && DROP=(--drop-caches "$HY_DIFFTEST_DROP_CACHES")

# The runs use umasks that include 022 (as the daemon's own usually does),
# except the one run that checks umasks 0 and 002.
UMASKS=(--umasks 022,077,027)

# run NAME SEED "DIFFTEST ARGS" [daemon arguments...]: one mount, one
# sequence, then the backing directory compared with the plain one.
run() {
	local name=$1 seed=$2 dir
	local -a args
	read -r -a args <<<"$3"
	shift 3
	dir=$HY_TMP/$name
	mkdir -p "$dir/plain" "$dir/backing" "$dir/mnt"
	hy_mount "$dir/backing" "$dir/mnt" "$@"
	if ! "$DIFFTEST" --seed "$seed" --ops "$OPS" "${args[@]}" ${DROP[@]+"${DROP[@]}"} \
		"$dir/plain" "$dir/mnt"; then
		hy_fail "$name: seed $seed ($*): the mount differs from the plain directory"
		hy_umount "$dir/mnt"
		return
	fi
	hy_umount "$dir/mnt"
	# the default state folder is BACKING/.hybridfs
	if ! "$DIFFTEST" --compare --ignore .hybridfs "$dir/plain" "$dir/backing"; then
		hy_fail "$name: seed $seed ($*): the backing directory differs from the plain one"
	fi
	rm -rf "$dir"
}

for seed in $SEEDS; do
	run "seed$seed" "$seed" "${UMASKS[*]}" -o "state=$HY_TMP/state-seed$seed"
done
# the state folder in its default place, hidden inside the backing root
run default-state 11 "${UMASKS[*]}"
# any umask the caller has: the daemon's own must not be applied again
run umask 12 "--umasks 022,0,077,002" -o "state=$HY_TMP/state-um"
run no-cache 13 "${UMASKS[*]}" -o "state=$HY_TMP/state-nc,attr_timeout=0,entry_timeout=0"
run no-writeback 4 "${UMASKS[*]}" -o "state=$HY_TMP/state-nw,writeback_cache=off"
# more folders than the daemon keeps descriptors for: a low open-file
# limit (80: 40 cached) makes it close and reopen directory descriptors
cat >"$HY_TMP/lowfd-hybridfs" <<EOF2
#!/bin/sh
ulimit -n 80 && exec "$HYBRIDFS" "\$@"
EOF2
chmod +x "$HY_TMP/lowfd-hybridfs"
REAL_HYBRIDFS=$HYBRIDFS
HYBRIDFS=$HY_TMP/lowfd-hybridfs
run low-fd 14 "--wide ${UMASKS[*]}" -o "state=$HY_TMP/state-lf"
HYBRIDFS=$REAL_HYBRIDFS

hy_pass
