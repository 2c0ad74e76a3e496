#!/bin/bash
# shellcheck disable=SC2034 # BN_LABEL_*, BN_UNIT_*, BN_DIR_* are read by bn_report (eval)
# meta.sh - metadata benchmark: native folder vs hybridfs vs mergerfs.
#
# Workloads, per round and system, page cache dropped before each one:
#   create   --files small files (1 KiB each) in one folder: open(O_CREAT|
#            O_EXCL), write, close; by a small C driver compiled on the fly
#   stat     stat() of each of them
#   unlink   unlink() of each of them (and the folder)
#   untar    tar -xf of a tarball of --tree (default /usr/include, made once
#            into the temp folder and read into the cache before timing)
#   read     find -type f -exec cat {} + >/dev/null over the unpacked tree
#   rm       rm -rf of the unpacked tree
#
# See bench/README.md. Run as root (dropping the page cache needs it).

# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"

NFILES=20000
FILE_SIZE=1024
TREE=/usr/include
NFILES_SET=""
TREE_SET=""

bn_usage_extra() {
	cat <<EOF
meta.sh options:
  --files N         small files for create/stat/unlink (default $NFILES,
                    --quick 500; --size N means the same here)
  --tree DIR        folder to tar, untar, read and delete (default $TREE,
                    --quick /usr/include/linux)
EOF
}

args=()
while [ $# -gt 0 ]; do
	case $1 in
	--files) NFILES_SET=${2:?--files needs a number}; shift ;;
	--files=*) NFILES_SET=${1#*=} ;;
	--tree) TREE_SET=${2:?--tree needs a folder}; shift ;;
	--tree=*) TREE_SET=${1#*=} ;;
	*) args+=("$1") ;;
	esac
	shift
done
bn_init "${args[@]+"${args[@]}"}"

bn_need cc "apt-get install gcc"
bn_need tar
if [ "$BN_QUICK" = 1 ]; then
	NFILES=500
	[ -d /usr/include/linux ] && TREE=/usr/include/linux
fi
[ -n "$BN_SIZE" ] && NFILES=$BN_SIZE
[ -n "$NFILES_SET" ] && NFILES=$NFILES_SET
[ -n "$TREE_SET" ] && TREE=$TREE_SET
case $NFILES in '' | *[!0-9]* | 0) bn_die "--files wants a positive number, not '$NFILES'" ;; esac
[ -d "$TREE" ] || bn_die "--tree $TREE is not a folder"
TREE=$(cd "$TREE" && pwd -P)

# The driver (bench/metadrv.c): one process per phase, so the cache can be
# dropped between phases; it times itself and prints seconds.
cc -O2 -Wall -o "$BN_TMP/metadrv" "$BN_SRCDIR/metadrv.c" ||
	bn_die "cannot compile the metadata driver"
METADRV=$BN_TMP/metadrv

bn_log "making the tarball of $TREE"
tar -C "$(dirname "$TREE")" -cf "$BN_TMP/tree.tar" "$(basename "$TREE")" 2>"$BN_TMP/logs/tar-c.err" ||
	{ cat "$BN_TMP/logs/tar-c.err" >&2; bn_die "tar of $TREE failed"; }
TREE_FILES=$(tar -tf "$BN_TMP/tree.tar" | grep -vc '/$')
TREE_MB=$(du -m "$BN_TMP/tree.tar" | awk '{ print $1 }')
TREE_NAME=$(basename "$TREE")

BN_LABEL_create="create $NFILES files of $FILE_SIZE B"
BN_UNIT_create="s"
BN_DIR_create=down
BN_LABEL_stat="stat $NFILES files"
BN_UNIT_stat="s"
BN_DIR_stat=down
BN_LABEL_unlink="unlink $NFILES files"
BN_UNIT_unlink="s"
BN_DIR_unlink=down
BN_LABEL_untar="untar $TREE ($TREE_FILES files, $TREE_MB MiB)"
BN_UNIT_untar="s"
BN_DIR_untar=down
BN_LABEL_readtree="read all files of that tree (cat)"
BN_UNIT_readtree="s"
BN_DIR_readtree=down
BN_LABEL_rmtree="rm -rf that tree"
BN_UNIT_rmtree="s"
BN_DIR_rmtree=down

# drv MODE SYSTEM WORKLOAD [SIZE]
drv() {
	local mode=$1 s=$2 wl=$3 v
	bn_drop_caches
	v=$("$METADRV" "$mode" "$(bn_target "$s")/small" "$NFILES" "$FILE_SIZE") ||
		bn_die "$mode on $s failed"
	bn_record "$wl" "$s" "$v"
	bn_log "  $s $wl: $v s"
}

# timed SYSTEM WORKLOAD COMMAND...: wall time of COMMAND by date +%s.%N.
timed() {
	local s=$1 wl=$2 t0 t1 v
	shift 2
	t0=$(bn_now)
	"$@" || bn_die "$wl on $s failed: $*"
	t1=$(bn_now)
	v=$(bn_elapsed "$t0" "$t1")
	bn_record "$wl" "$s" "$v"
	bn_log "  $s $wl: $v s"
}

read_tree() { find "$1" -type f -exec cat {} + >/dev/null; }

bn_log "systems: $BN_SYSTEMS; $BN_RUNS round(s); $NFILES files; tree $TREE; temp $BN_TMP"

for round in $(seq 1 "$BN_RUNS"); do
	bn_log "round $round/$BN_RUNS"
	bn_mount_all

	for s in $BN_SYSTEMS; do drv create "$s" create; done
	for s in $BN_SYSTEMS; do drv stat "$s" stat; done
	for s in $BN_SYSTEMS; do drv unlink "$s" unlink; done

	for s in $BN_SYSTEMS; do
		bn_drop_caches
		cat "$BN_TMP/tree.tar" >/dev/null # the source comes from memory
		timed "$s" untar tar -C "$(bn_target "$s")" -xf "$BN_TMP/tree.tar"
	done
	for s in $BN_SYSTEMS; do
		bn_drop_caches
		timed "$s" readtree read_tree "$(bn_target "$s")/$TREE_NAME"
	done
	for s in $BN_SYSTEMS; do
		bn_drop_caches
		timed "$s" rmtree rm -rf "$(bn_target "$s")/$TREE_NAME"
	done

	bn_umount_all
done

bn_report "meta: metadata and small files (bench/meta.sh)" \
	create stat unlink untar readtree rmtree
