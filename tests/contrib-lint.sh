#!/bin/sh
# Checks the nightly reorganization's generated files (contrib/): every job
# line of the cron.d file has the five time fields, the user root and a
# command that runs the installed hybridctl; the service is a oneshot whose
# ExecStart is bindir's hybridctl; the timer fires at 03:30. The checks are
# first run on broken samples, each of which they must reject.
# Usage: contrib-lint.sh [BUILDDIR BINDIR] (make check passes both through
# the environment: HY_BUILDDIR, HY_BINDIR).
build=${1:-${HY_BUILDDIR:-$(pwd)}}
bindir=${2:-$HY_BINDIR}
if [ -z "$bindir" ]; then
	echo "contrib-lint.sh: the installed bindir is unknown: set HY_BINDIR or run it from make check"
	exit 99
fi

# check_cron FILE BINDIR: prints each problem, returns 1 if there is one.
check_cron() {
	if [ ! -s "$1" ]; then
		echo "$1: missing or empty"
		return 1
	fi
	cron_status=0
	# cron ignores a last line without a newline.
	if [ -n "$(tail -c 1 "$1")" ]; then
		echo "$1: the last line does not end with a newline (cron ignores it)"
		cron_status=1
	fi
	awk -v file="$1" -v want="$2/hybridctl reorganize --all --quiet" '
	function bad(why) { printf "%s:%d: %s: %s\n", file, NR, why, $0; status = 1 }
	# one time field: lists of *, N or N-M, each with an optional /step
	function timefield(f, lo, hi, names,    n, i, item, parts, k, step, lim) {
		n = split(f, item, ",")
		for (i = 1; i <= n; i++) {
			step = split(item[i], parts, "/")
			if (step > 2 || (step == 2 && parts[2] !~ /^[1-9][0-9]*$/))
				return 0
			if (parts[1] == "*")
				continue
			if (names != "" && index(names, " " tolower(parts[1]) " ") && step == 1)
				continue
			k = split(parts[1], lim, "-")
			if (k > 2 || lim[1] !~ /^[0-9]+$/ || lim[1] + 0 < lo || lim[1] + 0 > hi)
				return 0
			if (k == 2 && (lim[2] !~ /^[0-9]+$/ || lim[2] + 0 < lim[1] + 0 || lim[2] + 0 > hi))
				return 0
		}
		return n > 0
	}
	/^[ \t]*(#|$)/ { next }
	/^[ \t]*[A-Za-z_][A-Za-z0-9_]*[ \t]*=/ { next }   # SHELL=..., PATH=...
	{
		jobs++
		if (/@[a-z_]+@/) { bad("a template name was not substituted"); next }
		if (NF < 7) { bad("not 5 time fields, a user and a command"); next }
		if (!timefield($1, 0, 59, "") || !timefield($2, 0, 23, "") ||
		    !timefield($3, 1, 31, "") ||
		    !timefield($4, 1, 12, " jan feb mar apr may jun jul aug sep oct nov dec ") ||
		    !timefield($5, 0, 7, " sun mon tue wed thu fri sat "))
			bad("a bad time field")
		if ($6 != "root")
			bad("the job does not run as root (user \"" $6 "\")")
		cmd = $0
		for (i = 0; i < 6; i++)
			sub(/^[ \t]*[^ \t]+[ \t]+/, "", cmd)
		if (index(cmd, "%"))
			bad("a % in the command (cron makes it a newline)")
		if (!index(cmd, want))
			bad("the command does not run \"" want "\"")
	}
	END {
		if (!jobs) { printf "%s: no job line\n", file; status = 1 }
		exit status
	}' "$1" || cron_status=1
	return "$cron_status"
}

# check_service FILE BINDIR
check_service() {
	if [ ! -s "$1" ]; then
		echo "$1: missing or empty"
		return 1
	fi
	awk -v file="$1" -v want="$2/hybridctl" '
	function bad(why) { printf "%s: %s\n", file, why; status = 1 }
	/^\[/ { section = $0; next }
	/@[a-z_]+@/ { bad("a template name was not substituted: " $0) }
	section == "[Service]" && /^Type=/ { type = substr($0, 6) }
	section == "[Service]" && /^ExecStart=/ {
		exec_n++
		split(substr($0, 11), word, " ")
		cmd = substr($0, 11)
	}
	END {
		if (type != "oneshot") bad("Type= is \"" type "\", not oneshot")
		if (exec_n != 1) bad(exec_n + 0 " ExecStart= lines in [Service], not 1")
		else if (word[1] != want) bad("ExecStart= runs \"" word[1] "\", not " want)
		else if (cmd != want " reorganize --all --quiet")
			bad("ExecStart= is \"" cmd "\", not \"" want " reorganize --all --quiet\"")
		exit status
	}' "$1"
}

# check_timer FILE
check_timer() {
	if [ ! -s "$1" ]; then
		echo "$1: missing or empty"
		return 1
	fi
	timer_status=0
	grep -qx 'OnCalendar=\*-\*-\* 03:30:00' "$1" || { echo "$1: no OnCalendar=*-*-* 03:30:00"; timer_status=1; }
	grep -qx 'WantedBy=timers.target' "$1" || { echo "$1: not WantedBy=timers.target"; timer_status=1; }
	return "$timer_status"
}

# First the checks themselves: each broken sample must be refused.
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
good="30 3 * * * root $bindir/hybridctl reorganize --all --quiet"
refuse() {
	kind=$1
	name=$2
	shift 2
	printf '%s\n' "$@" >"$tmp/$name"
	if "check_$kind" "$tmp/$name" "$bindir" >/dev/null; then
		echo "FAIL: the $kind check accepts a broken sample ($name):"
		cat "$tmp/$name"
		failed=1
	fi
}
failed=0
refuse cron no-user "30 3 * * * $bindir/hybridctl reorganize --all --quiet"
refuse cron not-root "30 3 * * * nobody $bindir/hybridctl reorganize --all --quiet"
refuse cron minute-60 "60 3 * * * root $bindir/hybridctl reorganize --all --quiet"
refuse cron bad-dow "30 3 * * funday root $bindir/hybridctl reorganize --all --quiet"
refuse cron other-bindir "30 3 * * * root /nowhere/hybridctl reorganize --all --quiet"
refuse cron percent "30 3 * * * root $bindir/hybridctl reorganize --all --quiet > /tmp/x.\$(date +%F)"
refuse cron no-job "SHELL=/bin/sh" "# $good"
refuse cron template "30 3 * * * root @bindir@/hybridctl reorganize --all --quiet"
printf '%s' "$good" >"$tmp/no-newline"
if check_cron "$tmp/no-newline" "$bindir" >/dev/null; then
	echo "FAIL: the cron check accepts a last line without a newline"
	failed=1
fi
printf '%s\n' "$good" >"$tmp/good"
if ! check_cron "$tmp/good" "$bindir"; then
	echo "FAIL: the cron check refuses a good line"
	failed=1
fi
refuse service other-bindir "[Service]" "Type=oneshot" "ExecStart=/nowhere/hybridctl reorganize --all --quiet"
refuse service template "[Service]" "Type=oneshot" "ExecStart=@bindir@/hybridctl reorganize --all --quiet"
refuse service other-command "[Service]" "Type=oneshot" "ExecStart=$bindir/hybridctl reorganize --all"
refuse service not-oneshot "[Service]" "Type=simple" "ExecStart=$bindir/hybridctl reorganize --all --quiet"
refuse service no-exec "[Service]" "Type=oneshot"
refuse service two-execs "[Service]" "Type=oneshot" "ExecStart=$bindir/hybridctl reorganize --all --quiet" \
	"ExecStart=$bindir/hybridctl reorganize --all --quiet"
refuse timer other-time "[Timer]" "OnCalendar=daily" "[Install]" "WantedBy=timers.target"
[ $failed = 0 ] || exit 99

# Then the generated files.
status=0
lint() {
	if "check_$1" "$build/contrib/$2" "$bindir"; then
		echo "ok: $build/contrib/$2"
	else
		status=1
	fi
}
lint cron hybridfs-reorganize.cron
lint service hybridfs-reorganize.service
lint timer hybridfs-reorganize.timer
exit $status
