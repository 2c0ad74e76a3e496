#!/bin/bash
# requests.sh - FUSE requests per operation (issue 20): what each step of a
# small-file workload costs in round trips to the daemon, read from the
# daemon's own request counts (hybridctl status --json, .fuse.requests;
# fs/fuse_channel.c), on a mount with killpriv_v2=off (the kernel asks for
# security.capability before every write, as before issue 20) and on one
# with the default (the daemon takes FUSE_HANDLE_KILLPRIV_V2).
#
# Steps, in one process, each one's requests the difference of the counts
# around it, taken once they have settled (the kernel sends RELEASE after
# close returns; the entry and attribute timeouts are the mount's defaults,
# 1 s, and a step with its looks takes well under that):
#   create    open(O_CREAT|O_WRONLY) of a new name, kept open
#   write     --writes write(2)s of 10 bytes on it
#   close     close(2)
#   stat      stat(2) of it
#   open+read+close  open(2) of it read-only, a read(2), close(2); twice
#             (with open=kernel the first OPEN is answered ENOSYS, and
#             the kernel sends none after it)
#   rename    rename(2) to a new name in the same folder
#   unlink    unlink(2)
#   readdir   listing a folder of --entries files the kernel has never seen
#             (made in the backing folder, not through the mount)
#   readdir+stat   lstat(2) of each of them after that listing
#   readdir again  the same listing once more (the kernel keeps it)
# --before-opts O mounts the "before" column with O instead of
# killpriv_v2=off (opendir=daemon, say).
#
# Counts, not times: the machine's load does not change them, so the
# script runs anywhere (root, for the mount's defaults as they are used).
# Prints a markdown table; --out FILE writes it there too.
set -u
set -o pipefail

NAME=$(basename "$0")
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
HYBRIDFS=${HYBRIDFS:-}
HYBRIDCTL=${HYBRIDCTL:-}
PYTHON=${PYTHON:-}
WRITES=100
ENTRIES=1000
OUT=""
BEFORE_OPTS=killpriv_v2=off
DIR=${TMPDIR:-/tmp}
TMP=""
PIDS=""
MOUNTS=""

log() { printf '%s: %s\n' "$NAME" "$*" >&2; }
die() {
	log "ERROR: $*"
	exit 1
}
usage() {
	cat <<EOF
usage: $NAME [--hybridfs PATH] [--hybridctl PATH] [--writes N] [--entries N]
                   [--dir DIR] [--out FILE] [--before-opts O]

FUSE requests per operation through a hybridfs mount, with
killpriv_v2=off (or --before-opts) and with the default; a markdown table.

  --hybridfs PATH   the daemon (default \$HYBRIDFS, else ./hybridfs in the
                    build tree at the top of the sources)
  --hybridctl PATH  (default \$HYBRIDCTL, else hybridctl beside the daemon)
  --writes N        write(2)s in the write step (default $WRITES)
  --entries N       files in the listed folder (default $ENTRIES)
  --dir DIR         where the temporary folder goes (default \$TMPDIR or /tmp)
  --out FILE        also write the table to FILE
  --before-opts O   the "before" mount's options (default killpriv_v2=off)
EOF
}

while [ $# -gt 0 ]; do
	case $1 in
	--hybridfs) HYBRIDFS=${2:?}; shift ;;
	--hybridctl) HYBRIDCTL=${2:?}; shift ;;
	--writes) WRITES=${2:?}; shift ;;
	--entries) ENTRIES=${2:?}; shift ;;
	--dir) DIR=${2:?}; shift ;;
	--out) OUT=${2:?}; shift ;;
	--before-opts) BEFORE_OPTS=${2:?}; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown option: $1" ;;
	esac
	shift
done
case $WRITES$ENTRIES in *[!0-9]*) die "--writes and --entries want numbers" ;; esac
if [ "$WRITES" -le 0 ] || [ "$ENTRIES" -le 0 ]; then
	die "--writes and --entries want positive numbers"
fi
[ -n "$HYBRIDFS" ] || HYBRIDFS=$SRCDIR/hybridfs
[ -x "$HYBRIDFS" ] || die "no daemon at $HYBRIDFS (--hybridfs)"
[ -n "$HYBRIDCTL" ] || HYBRIDCTL=$(dirname "$HYBRIDFS")/hybridctl
[ -x "$HYBRIDCTL" ] || die "no hybridctl at $HYBRIDCTL (--hybridctl)"
for p in "$PYTHON" /usr/bin/python3 "$(command -v python3)"; do
	[ -n "$p" ] && [ -x "$p" ] && { PYTHON=$p; break; }
done
[ -x "$PYTHON" ] || die "python3 is missing"
command -v jq >/dev/null || die "jq is missing (apt-get install jq)"
command -v fusermount3 >/dev/null || die "fusermount3 is missing (apt-get install fuse3)"

cleanup() {
	local rc=$? m p
	for m in $MOUNTS; do
		grep -q " $m " /proc/mounts && fusermount3 -u -z "$m" 2>/dev/null
	done
	for p in $PIDS; do
		kill -0 "$p" 2>/dev/null && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	[ -n "$TMP" ] && rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
TMP=$(mktemp -d "$DIR/hybridfs-requests.XXXXXX") || die "mktemp failed"
# the test's own registry and state folders (as the integration tests)
export HYBRIDFS_RUNTIME_DIR=$TMP/run XDG_STATE_HOME=$TMP/xdg-state
export HYBRIDFS_STATE_ROOT=$TMP/var-lib HYBRIDFS_FAST_ROOT=$TMP/var-tmp
mkdir -p "$HYBRIDFS_FAST_ROOT"

# The driver: each step between two snapshots of the counts.
cat >"$TMP/driver.py" <<'EOF'
import json, os, socket, subprocess, sys, time

ctl, mnt, writes, entries = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
# The counts straight from the control socket: a child process (hybridctl)
# would close the step's open file at its exec, and the kernel would send
# a FLUSH for that close.
out = subprocess.run([ctl, "status", mnt, "--json"], check=True, capture_output=True).stdout
sock_path = os.path.join(json.loads(out)["mounts"][0]["state_dir"], "control.sock")

def counts():
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(sock_path)
        s.sendall(b'{"v": 1, "cmd": "status"}\n')
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    reply = json.loads(data)
    if not reply.get("ok"):
        sys.exit("status: %s" % reply.get("error"))
    return reply["result"]["fuse"]["requests"] or {}

def settled():
    # RELEASE and RELEASEDIR are sent by the kernel after close returns:
    # the counts are taken once two looks 20 ms apart agree
    now = counts()
    for _ in range(50):
        time.sleep(0.02)
        again = counts()
        if again == now:
            break
        now = again
    return now

def step(name, fn):
    before = settled()
    fn()
    after = settled()
    diff = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    diff = {k: v for k, v in diff.items() if v}
    print(json.dumps({"step": name, "requests": diff}))

state = {}
f, g, big = os.path.join(mnt, "f"), os.path.join(mnt, "g"), os.path.join(mnt, "big")
def create(): state["fd"] = os.open(f, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
def write():
    for _ in range(writes):
        os.write(state["fd"], b"0123456789")
def close(): os.close(state["fd"])
def open_read_close():
    fd = os.open(f, os.O_RDONLY)
    os.read(fd, 4096)
    os.close(fd)
def listing(): state["names"] = os.listdir(big)
def stat_all():
    for n in state["names"]:
        os.lstat(os.path.join(big, n))

step("create", create)
step("write (%d write(2)s)" % writes, write)
step("close", close)
step("stat", lambda: os.stat(f))
step("open+read+close", open_read_close)
step("open+read+close again", open_read_close)
step("rename", lambda: os.rename(f, g))
step("unlink", lambda: os.unlink(g))
step("readdir (%d entries)" % entries, listing)
step("stat of each entry after it", stat_all)
step("readdir again", listing)
EOF

# run MODE [OPTIONS]: mounts (with -o OPTIONS), runs the driver, unmounts;
# the driver's lines go to $TMP/MODE.jsonl
run() {
	local mode=$1 opts=$2 b=$TMP/$1/b m=$TMP/$1/m pid
	mkdir -p "$b/big" "$m" || die "mkdir $TMP/$mode"
	(cd "$b/big" && seq -f 'file%05g' 1 "$ENTRIES" | xargs touch) || die "cannot make the folder"
	"$HYBRIDFS" "$b" "$m" -f ${opts:+-o "$opts"} 2>>"$TMP/daemon.log" &
	pid=$!
	PIDS="$PIDS $pid"
	MOUNTS="$MOUNTS $m"
	for _ in $(seq 1 600); do
		grep -q " $m " /proc/mounts && break
		kill -0 "$pid" 2>/dev/null || die "the daemon exited: $(tail -n 3 "$TMP/daemon.log")"
		sleep 0.05
	done
	stat "$m" >/dev/null || die "the mount of $m does not answer"
	"$HYBRIDCTL" status "$m" --json | jq -e '.mounts[0].daemon.fuse.requests' >/dev/null ||
		die "$HYBRIDCTL status reports no request counts (a daemon older than issue 20?)"
	"$HYBRIDCTL" status "$m" --json |
		jq -r '.mounts[0].daemon.fuse | "\(.killpriv_v2) \(.killpriv_v2_why // "")"' >"$TMP/$mode.kp"
	"$PYTHON" "$TMP/driver.py" "$HYBRIDCTL" "$m" "$WRITES" "$ENTRIES" >"$TMP/$mode.jsonl" ||
		die "the driver failed on the $mode mount"
	fusermount3 -u "$m" || die "cannot unmount $m"
	wait "$pid"
}

run before "$BEFORE_OPTS"
run after ""
grep -q '^true' "$TMP/after.kp" || log "the default mount did not take FUSE_HANDLE_KILLPRIV_V2: $(cat "$TMP/after.kp")"

# "N (op n, op n)" for one step of one mode
cell() {
	jq -r --arg s "$2" 'select(.step == $s) | .requests |
		"\([.[]] | add // 0) (\(to_entries | sort_by(-.value, .key) |
		map("\(.key) \(.value)") | join(", ")))"' "$TMP/$1.jsonl"
}
{
	echo "| operation | requests, $BEFORE_OPTS (before) | requests, default (after) |"
	echo "| --- | --- | --- |"
	jq -r .step "$TMP/after.jsonl" | while IFS= read -r s; do
		echo "| $s | $(cell before "$s") | $(cell after "$s") |"
	done
	echo
	echo "kernel $(uname -r), libfuse $("$HYBRIDFS" --version | sed -n 's/.*libfuse \([^)]*\).*/\1/p');" \
		"after: killpriv_v2 $(cut -d' ' -f1 "$TMP/after.kp"); before (-o $BEFORE_OPTS): killpriv_v2 $(cat "$TMP/before.kp")"
} | tee "${OUT:-/dev/null}"
