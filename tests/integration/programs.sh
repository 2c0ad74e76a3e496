#!/bin/bash
# programs.sh - real programs at work on a hybridfs mount, each checked:
#   git     init, add, commit (twice), status, log, fsck
#   tar     unpack a generated C project, make it, run it, make clean
#   sqlite3 1000 rows in a transaction, count, sum, integrity_check
#   rsync   -aH a tree with symlinks, hard links and modes in and back out
# A sub-check whose tool is missing is skipped with a message; the whole
# test is skipped (77) only when every tool is missing.
. "$(dirname "$0")/lib.sh"

hy_setup
B=$HY_TMP/backing
M=$HY_TMP/mnt
# the cache in write-back: real programs over its hardest path
hy_mount "$B" "$M" -o cache_write=back

RAN=0

# Every tool this test runs reads no configuration from the tester's home.
export HOME=$HY_TMP/home
mkdir -p "$HOME"
export GIT_CONFIG_NOSYSTEM=1 LC_ALL=C TZ=UTC

have() {
	if command -v "$1" >/dev/null 2>&1; then
		return 0
	fi
	hy_log "SKIP sub-check: $2 ($1 is missing)"
	return 1
}

# ---------------------------------------------------------------- git
check_git() {
	local r=$M/repo out n
	mkdir -p "$r" || { hy_fail "git: mkdir $r"; return; }
	(
		set -e
		cd "$r"
		git init -q .
		git config user.name "Hybrid Tester"
		git config user.email "tester@example.invalid"
		git config commit.gpgsign false
		printf 'hello\n' >README
		mkdir -p src/sub
		printf 'int main(void) { return 0; }\n' >src/main.c
		printf 'line %s\n' $(seq 1 200) >src/sub/data.txt
		printf '#!/bin/sh\necho run\n' >run.sh
		chmod 755 run.sh
		git add .
		git commit -q -m "first commit"
		printf 'more\n' >>README
		git rm -q src/main.c
		printf 'int main(void) { return 1; }\n' >src/other.c
		git mv src/sub/data.txt src/data.txt
		git add -A
		git commit -q -m "second commit"
	) >"$HY_TMP/git.out" 2>&1 || {
		hy_fail "git: init/add/commit on the mount failed: $(tail -5 "$HY_TMP/git.out")"
		return
	}
	out=$(cd "$r" && git status --porcelain 2>&1)
	[ -z "$out" ] || hy_fail "git: status is not clean after two commits: $out"
	n=$(cd "$r" && git log --oneline | wc -l)
	[ "$n" = 2 ] || hy_fail "git: log shows $n commits, expected 2"
	out=$(cd "$r" && git log --format=%s)
	[ "$out" = "second commit
first commit" ] || hy_fail "git: log subjects are wrong: $out"
	out=$(cd "$r" && git fsck --full --strict 2>&1) ||
		hy_fail "git: fsck failed: $out"
	if printf '%s\n' "$out" | grep -Eiq 'error|missing|corrupt|dangling'; then
		hy_fail "git: fsck complains: $out"
	fi
	out=$(cd "$r" && git show HEAD~1:src/main.c 2>&1)
	[ "$out" = 'int main(void) { return 0; }' ] ||
		hy_fail "git: first commit's src/main.c reads back wrong: $out"
	[ -x "$r/run.sh" ] || hy_fail "git: run.sh lost its execute bit"
	# The repository is really in the backing directory.
	out=$(cd "$B/repo" && git log --oneline 2>&1 | wc -l)
	[ "$out" = 2 ] || hy_fail "git: the backing directory's copy shows $out commits"
	# gc rewrites pack files and renames over them.
	out=$(cd "$r" && git gc -q 2>&1 && git fsck --full --strict 2>&1) ||
		hy_fail "git: gc + fsck failed: $out"
	RAN=$((RAN + 1))
}

# ---------------------------------------------------------------- tar + make
make_project() {
	local d=$1
	mkdir -p "$d/src" "$d/include"
	cat >"$d/include/calc.h" <<'EOF'
#ifndef CALC_H
#define CALC_H
long sum_squares(int n);
long factorial(int n);
#endif
EOF
	cat >"$d/include/greet.h" <<'EOF'
#ifndef GREET_H
#define GREET_H
void greet(const char *who);
#endif
EOF
	cat >"$d/src/calc.c" <<'EOF'
#include "calc.h"
long sum_squares(int n)
{
	long s = 0;
	for (int i = 1; i <= n; i++)
		s += (long)i * i;
	return s;
}
long factorial(int n)
{
	return n <= 1 ? 1 : n * factorial(n - 1);
}
EOF
	cat >"$d/src/greet.c" <<'EOF'
#include <stdio.h>
#include "greet.h"
void greet(const char *who)
{
	printf("hello, %s\n", who);
}
EOF
	cat >"$d/src/main.c" <<'EOF'
#include <stdio.h>
#include "calc.h"
#include "greet.h"
int main(void)
{
	greet("hybridfs");
	printf("sum_squares(10)=%ld\n", sum_squares(10));
	printf("factorial(10)=%ld\n", factorial(10));
	return 0;
}
EOF
	# Recipes need tabs.
	printf '%s\n' \
		'CC ?= cc' \
		'CFLAGS ?= -O1 -Wall -Werror' \
		'OBJS = src/main.o src/calc.o src/greet.o' \
		'all: demo' \
		'demo: $(OBJS)' \
		'	$(CC) $(CFLAGS) -o $@ $(OBJS)' \
		'src/%.o: src/%.c include/calc.h include/greet.h' \
		'	$(CC) $(CFLAGS) -Iinclude -c -o $@ $<' \
		'clean:' \
		'	rm -f demo $(OBJS)' \
		'.PHONY: all clean' >"$d/Makefile"
}

check_tar_make() {
	local p=$M/build/demo-1.0 out want left
	mkdir -p "$HY_TMP/src/demo-1.0" "$M/build"
	make_project "$HY_TMP/src/demo-1.0"
	tar -C "$HY_TMP/src" -cf "$HY_TMP/demo.tar" demo-1.0 ||
		{ hy_fail "tar: cannot pack the project"; return; }
	tar -C "$M/build" -xf "$HY_TMP/demo.tar" ||
		{ hy_fail "tar: x onto the mount failed"; return; }
	out=$(diff -r "$HY_TMP/src/demo-1.0" "$p" 2>&1) ||
		hy_fail "tar: unpacked tree differs from the original: $out"
	out=$(cd "$p" && make 2>&1) || { hy_fail "make: build on the mount failed: $out"; return; }
	[ -x "$p/demo" ] || { hy_fail "make: no executable demo"; return; }
	want='hello, hybridfs
sum_squares(10)=385
factorial(10)=3628800'
	out=$("$p/demo" 2>&1) || hy_fail "make: demo exits non-zero: $out"
	[ "$out" = "$want" ] || hy_fail "make: demo printed \"$out\", expected \"$want\""
	# Nothing to do the second time: timestamps are kept.
	out=$(cd "$p" && make -q 2>&1) || hy_fail "make: -q says the build is out of date: $out"
	out=$(cd "$p" && make clean 2>&1) || hy_fail "make clean failed: $out"
	left=$(cd "$p" && find . -name '*.o' -o -name demo -type f)
	[ -z "$left" ] || hy_fail "make clean left: $left"
	out=$(diff -r "$HY_TMP/src/demo-1.0" "$p" 2>&1) ||
		hy_fail "make clean: tree differs from the original: $out"
	RAN=$((RAN + 1))
}

# ---------------------------------------------------------------- sqlite3
check_sqlite() {
	local db=$M/db/test.db out mode
	mkdir -p "$M/db"
	{
		echo 'CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL, s TEXT);'
		echo 'CREATE INDEX t_v ON t (v);'
		echo 'BEGIN;'
		seq 1 1000 | awk '{ printf "INSERT INTO t (v, s) VALUES (%d, %c%s-%d%c);\n", $1 * 3, 39, "row", $1, 39 }'
		echo 'COMMIT;'
	} >"$HY_TMP/insert.sql"
	out=$(sqlite3 -bail "$db" <"$HY_TMP/insert.sql" 2>&1) ||
		{ hy_fail "sqlite3: creating and filling $db failed: $out"; return; }
	# A new process each time, so the data comes from the file.
	out=$(sqlite3 "$db" 'SELECT count(*) FROM t;' 2>&1)
	[ "$out" = 1000 ] || hy_fail "sqlite3: count is \"$out\", expected 1000"
	out=$(sqlite3 "$db" 'SELECT sum(v) FROM t;' 2>&1)
	[ "$out" = 1501500 ] || hy_fail "sqlite3: sum is \"$out\", expected 1501500"
	out=$(sqlite3 "$db" "SELECT s FROM t WHERE v = 1500;" 2>&1)
	[ "$out" = row-500 ] || hy_fail "sqlite3: row 500 reads \"$out\""
	out=$(sqlite3 "$db" 'PRAGMA integrity_check;' 2>&1)
	[ "$out" = ok ] || hy_fail "sqlite3: integrity_check says: $out"
	# A transaction that is rolled back leaves nothing.
	out=$(sqlite3 -bail "$db" 'BEGIN; DELETE FROM t; ROLLBACK; SELECT count(*) FROM t;' 2>&1)
	[ "$out" = 1000 ] || hy_fail "sqlite3: after ROLLBACK count is \"$out\""
	# WAL mode needs shared writable mmap of the -shm file.
	mode=$(sqlite3 "$M/db/wal.db" 'PRAGMA journal_mode=WAL;' 2>&1)
	if [ "$mode" = wal ]; then
		out=$(sqlite3 -bail "$M/db/wal.db" \
			"CREATE TABLE w (x); BEGIN; $(seq 1 1000 | sed 's/.*/INSERT INTO w VALUES (&);/') COMMIT; SELECT count(*), sum(x) FROM w; PRAGMA integrity_check;" 2>&1)
		[ "$out" = "1000|500500
ok" ] || hy_fail "sqlite3: WAL database reads \"$out\""
	else
		hy_fail "sqlite3: PRAGMA journal_mode=WAL on the mount gave \"$mode\""
	fi
	RAN=$((RAN + 1))
}

# ---------------------------------------------------------------- rsync
make_tree() {
	local t=$1
	mkdir -p "$t/dir/sub" "$t/private" "$t/empty dir" "$t/with space"
	printf 'plain\n' >"$t/plain.txt"
	printf 'secret\n' >"$t/private/secret"
	printf '#!/bin/sh\necho hi\n' >"$t/dir/script.sh"
	head -c 1048576 /dev/urandom >"$t/dir/sub/random.bin"
	: >"$t/empty"
	printf 'spaces\n' >"$t/with space/a file"
	printf 'shared\n' >"$t/dir/hard1"
	ln "$t/dir/hard1" "$t/dir/sub/hard2"
	ln "$t/dir/hard1" "$t/hard3"
	ln -s plain.txt "$t/link-rel"
	ln -s ../plain.txt "$t/dir/link-up"
	ln -s /etc/hostname "$t/link-abs"
	ln -s does-not-exist "$t/link-dangling"
	ln -s dir/sub "$t/link-dir"
	chmod 0755 "$t/dir/script.sh"
	chmod 0600 "$t/private/secret"
	chmod 0700 "$t/private"
	chmod 0444 "$t/plain.txt"
	chmod 0640 "$t/dir/hard1"
	chmod 2750 "$t/dir/sub"
	chmod 1777 "$t/empty dir"
	chmod 0604 "$t/empty"
	# Every time is set, and far from now: rsync leaves a time alone when
	# it is already within the same second (directories, symlinks), so
	# times left at "now" would prove nothing.
	find "$t" -depth -exec touch -h -d '2001-02-03 04:05:06.123456789' {} +
	touch -h -d '2002-03-04 05:06:07.5' "$t/link-rel" "$t/link-dir"
	touch -d '1999-12-31 23:59:59' "$t/dir/sub/random.bin" "$t/empty dir"
	touch -d '2010-06-07 08:09:10.987654321' "$t/dir/sub" "$t/private"
}

# One line per entry: type, mode, links, size, mtime, symlink target.
manifest() {
	(cd "$1" && find . -mindepth 1 ! -name .hybridfs -printf '%P|%y|%m|%n|%s|%T@|%l\n' | sort)
}

check_rsync() {
	local orig=$HY_TMP/orig back=$HY_TMP/back out
	make_tree "$orig"
	out=$(rsync -aH "$orig/" "$M/rsynced/" 2>&1) ||
		{ hy_fail "rsync: -aH into the mount failed: $out"; return; }
	out=$(rsync -aH "$M/rsynced/" "$back/" 2>&1) ||
		{ hy_fail "rsync: -aH out of the mount failed: $out"; return; }
	out=$(diff -r --no-dereference "$orig" "$back" 2>&1) ||
		hy_fail "rsync: round trip differs (diff -r): $out"
	out=$(diff <(manifest "$orig") <(manifest "$M/rsynced") 2>&1) ||
		hy_fail "rsync: the tree on the mount has other modes/links/times: $out"
	out=$(diff <(manifest "$orig") <(manifest "$back") 2>&1) ||
		hy_fail "rsync: the tree copied back has other modes/links/times: $out"
	[ "$M/rsynced/dir/hard1" -ef "$M/rsynced/dir/sub/hard2" ] &&
		[ "$M/rsynced/dir/hard1" -ef "$M/rsynced/hard3" ] ||
		hy_fail "rsync: hard links are not one file on the mount"
	[ "$back/dir/hard1" -ef "$back/hard3" ] || hy_fail "rsync: hard links lost on the way back"
	[ "$B/rsynced/dir/hard1" -ef "$B/rsynced/hard3" ] ||
		hy_fail "rsync: hard links are not hard links in the backing directory"
	# A checksum comparison finds nothing left to transfer.
	out=$(rsync -aHc --dry-run --itemize-changes "$orig/" "$M/rsynced/" 2>&1)
	[ -z "$out" ] || hy_fail "rsync: a second checksum run would still change: $out"
	RAN=$((RAN + 1))
}

have git "git init/add/commit/status/log/fsck" && check_git
if have tar "tar x + make" && have make "tar x + make" && have cc "tar x + make"; then
	check_tar_make
fi
have sqlite3 "sqlite3 database" && check_sqlite
have rsync "rsync round trip" && check_rsync

# The programs leave nothing open: a plain unmount succeeds and the
# daemon exits 0.
hy_umount "$M"
[ "${HY_DAEMON_STATUS:-x}" = 0 ] || hy_fail "daemon exit status after unmount: ${HY_DAEMON_STATUS:-unknown}"

# What the programs wrote is in the backing directory, intact.
if [ -f "$B/db/test.db" ] && command -v sqlite3 >/dev/null; then
	out=$(sqlite3 "$B/db/test.db" 'PRAGMA integrity_check; SELECT count(*) FROM t;' 2>&1)
	[ "$out" = "ok
1000" ] || hy_fail "sqlite3: the database in the backing directory reads \"$out\""
fi
if [ -d "$B/repo" ] && command -v git >/dev/null; then
	out=$(cd "$B/repo" && git fsck --full --strict 2>&1) ||
		hy_fail "git: fsck in the backing directory failed: $out"
fi

[ "$RAN" -gt 0 ] || hy_skip "none of git, tar/make/cc, sqlite3, rsync is installed"
hy_pass
