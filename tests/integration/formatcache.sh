#!/bin/bash
# formatcache.sh - `hybridctl format-cache`: an unclaimed SSD cache store on
# a file. A new file with --size is made and said to be unclaimed; what
# libblkid recognizes (an ext4 image) and a store already there are refused
# with exit status 1 and nothing written, unless --force; bad command lines
# exit 2; a UUID= no device has exits 1. No mount is needed (no FUSE): only
# regular files in a temporary folder are written, never a block device.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

HYBRIDCTL=${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}
[ -x "$HYBRIDCTL" ] || hy_die "no hybridctl at $HYBRIDCTL (run make first)"
export LC_ALL=C
HY_TMP=$(mktemp -d "${TMPDIR:-/tmp}/hybridfs-test.XXXXXX") || hy_die "mktemp failed"
trap hy_cleanup EXIT
trap 'exit 130' INT TERM
OUT=$HY_TMP/out
ERR=$HY_TMP/err

# run ARGS...: hybridctl format-cache ARGS; sets RC, output in $OUT and $ERR.
run() {
	RC=0
	"$HYBRIDCTL" format-cache "$@" >"$OUT" 2>"$ERR" || RC=$?
}

# expect WANT WORD WHAT ARGS...: exit status WANT and WORD (fixed string,
# case-insensitive) in what was said (stdout for 0, else stderr).
expect() {
	local want=$1 word=$2 what=$3 said
	shift 3
	run "$@"
	if [ "$RC" != "$want" ]; then
		hy_fail "$what: exit status $RC, expected $want (args: $*): $(cat "$OUT" "$ERR")"
		return 0
	fi
	said=$ERR
	[ "$want" = 0 ] && said=$OUT
	if ! grep -qiF -e "$word" "$said"; then
		hy_fail "$what: does not say \"$word\": $(cat "$said")"
	fi
}

# ---------------------------------------------------------------- usage
expect 0 "usage: hybridctl format-cache" "--help" --help
expect 2 "no TARGET" "missing target"
expect 2 "--size" "bad size" "$HY_TMP/bad.img" --size 12Q
expect 2 "1M" "size below the minimum" "$HY_TMP/bad.img" --size 512K
expect 2 "--size needs" "--size without a value" "$HY_TMP/bad.img" --size
expect 2 "unknown option" "unknown option" "$HY_TMP/bad.img" --bogus
expect 2 "--size is needed" "new file without --size" "$HY_TMP/bad.img"
[ ! -e "$HY_TMP/bad.img" ] || hy_fail "a refused command line made $HY_TMP/bad.img"
expect 1 "UUID=00000000-0000-4000-8000-00000000beef" "a UUID= no device has" \
	UUID=00000000-0000-4000-8000-00000000beef

# ---------------------------------------------------------------- a new file
store=$HY_TMP/cache.img
expect 0 "unclaimed" "new file with --size 8M" "$store" --size 8M
grep -qF "cache=$store" "$OUT" || hy_fail "the output does not name cache=$store: $(cat "$OUT")"
grep -q "lines" "$OUT" || hy_fail "the output does not give the capacity in lines: $(cat "$OUT")"
grep -qi "journal" "$OUT" || hy_fail "the output does not give the journal size: $(cat "$OUT")"
[ "$(stat -c %s "$store")" -le $((8 * 1024 * 1024)) ] || hy_fail "the store outgrew --size 8M"
[ "$(head -c 8 "$store" | tr -d '\0')" = HYCACHE ] || hy_fail "no cache store magic in $store"
# A relative TARGET is the same file.
cp "$store" "$HY_TMP/store.copy"
(cd "$HY_TMP" && "$HYBRIDCTL" format-cache cache.img >"$OUT" 2>"$ERR") && RC=0 || RC=$?
[ "$RC" = 1 ] || hy_fail "a store already there (relative path): exit status $RC, expected 1"
grep -qF "already holds a cache store" "$ERR" ||
	hy_fail "the refusal does not say a store is there: $(cat "$ERR")"
grep -qF "\"$store\"" "$ERR" || hy_fail "the refusal does not name \"$store\": $(cat "$ERR")"
cmp -s "$store" "$HY_TMP/store.copy" || hy_fail "a refused format changed $store"
expect 0 "unclaimed" "a store already there, --force" "$store" --force

# ---------------------------------------------------------------- ext4 image
mkfs=$(command -v mkfs.ext4 || true)
for d in /usr/sbin /sbin; do
	[ -n "$mkfs" ] || { [ -x "$d/mkfs.ext4" ] && mkfs=$d/mkfs.ext4; } || true
done
if [ -z "$mkfs" ]; then
	[ "$HY_FAILS" -gt 0 ] && hy_pass
	hy_skip "mkfs.ext4 is missing (package e2fsprogs); the other checks passed"
fi
img=$HY_TMP/ext4.img
truncate -s 4M "$img"
"$mkfs" -q -F "$img" >/dev/null 2>&1 || hy_die "mkfs.ext4 failed on $img"
cp "$img" "$HY_TMP/ext4.copy"
expect 1 "ext4" "an ext4 image" "$img"
grep -qF "\"$img\"" "$ERR" || hy_fail "the ext4 refusal does not name \"$img\": $(cat "$ERR")"
grep -qF "nothing was written" "$ERR" || hy_fail "the ext4 refusal does not say nothing was written"
grep -qF -- "--force" "$ERR" || hy_fail "the ext4 refusal does not mention --force"
cmp -s "$img" "$HY_TMP/ext4.copy" || hy_fail "a refused format changed the ext4 image"
expect 0 "unclaimed" "an ext4 image, --force" "$img" --force
[ "$(stat -c %s "$img")" -le $((4 * 1024 * 1024)) ] || hy_fail "the forced store outgrew the image"
[ "$(head -c 8 "$img" | tr -d '\0')" = HYCACHE ] || hy_fail "no cache store magic in $img"

# ------------------------------------------- a store a mount claimed
# the refusal names the mount's directories, not only its uuid
b=$HY_TMP/claim.b m=$HY_TMP/claim.m
mkdir -p "$b" "$m"
hy_mount_ready "$b" "$m" "state=$HY_TMP/claim.state,cache=$store"
"$HYBRIDCTL" format-cache "$store" >"$OUT" 2>"$ERR" && RC=0 || RC=$?
[ "$RC" = 1 ] || hy_fail "a claimed store: exit status $RC, expected 1"
grep -qF "(\"$(realpath "$b")\" on \"$(realpath "$m")\")" "$ERR" ||
	hy_fail "the refusal of a claimed store does not name its directories: $(cat "$ERR")"
hy_umount "$m"

hy_pass
