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
# The SSD cache (on by default, write-back) in each write policy, and
# cache=none as the reference: a seed that fails with a cache and passes
# with none (the same seed) points at the cache. A 1M store with no front
# buffer is full at once: every write evicts, bypasses or cleans.
run cache-none 21 "${UMASKS[*]}" -o "state=$HY_TMP/state-cn,cache=none"
run cache-back 21 "${UMASKS[*]}" -o "state=$HY_TMP/state-cb,cache_write=back"
run cache-through 22 "${UMASKS[*]}" -o "state=$HY_TMP/state-ct,cache_write=through"
run cache-around 23 "${UMASKS[*]}" -o "state=$HY_TMP/state-ca,cache_write=around"
run cache-none-tiny 24 "${UMASKS[*]}" -o "state=$HY_TMP/state-cnt,cache=none,writeback_cache=off"
run cache-tiny 24 "${UMASKS[*]}" \
	-o "state=$HY_TMP/state-cs,front_buffer=0,cache_size=1M,writeback_cache=off"
run cache-larc 25 "${UMASKS[*]}" -o "state=$HY_TMP/state-cl,cache_policy=larc"
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
