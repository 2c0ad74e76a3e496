# scripts/lib.sh - shared by scripts/demo and scripts/test (sourced).
# Installs what is missing (Debian 12), then configures and builds.

HY_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Debian packages the build, the tests and the demo need.
HY_PACKAGES="gcc make autoconf automake pkg-config libfuse3-dev fuse3 libsqlite3-dev
sqlite3 libevent-dev libblkid-dev libjson-c-dev libcunit1-dev mandoc git rsync tar util-linux procps
attr acl xz-utils jq zlib1g-dev clang libclang-rt-14-dev
libncurses-dev tmux"
# ... and those only the tests need, installed without their recommended
# packages: prometheus for promtool (tests/integration/metrics.sh checks
# the metrics with it; about 100 MB installed, without recommends:
# node_exporter and its tools would add as much again). Its server is
# neither started nor left enabled (hy_install_test_packages).
HY_TEST_PACKAGES="prometheus"

hy_say() { printf '==> %s\n' "$*"; }

hy_as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		echo "need root to run: $*; install sudo or run as root" >&2
		return 1
	fi
}

hy_install_packages() {
	local missing="" pkg
	for pkg in $HY_PACKAGES "$@"; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" ||
			missing="$missing $pkg"
	done
	if [ -z "$missing" ]; then
		return 0
	fi
	hy_say "installing:$missing"
	hy_as_root apt-get update -qq &&
		DEBIAN_FRONTEND=noninteractive hy_as_root apt-get install -y -qq $missing >/dev/null
}

# hy_install_test_packages: HY_TEST_PACKAGES, without recommends.
hy_install_test_packages() {
	local missing="" pkg
	for pkg in $HY_TEST_PACKAGES; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" ||
			missing="$missing $pkg"
	done
	[ -z "$missing" ] && return 0
	hy_say "installing (for the tests):$missing"
	# prometheus, installed for its promtool, would start its server:
	# policy-rc.d says no service starts while it is installed, and the
	# server is left disabled (the tests need only the checker)
	local shim=/usr/sbin/policy-rc.d made=0 rc
	if [ ! -e "$shim" ]; then
		printf '#!/bin/sh\nexit 101\n' | hy_as_root tee "$shim" >/dev/null &&
			hy_as_root chmod 755 "$shim" && made=1
	fi
	hy_as_root apt-get update -qq &&
		DEBIAN_FRONTEND=noninteractive hy_as_root apt-get install -y -qq \
			--no-install-recommends $missing >/dev/null
	rc=$?
	[ $made = 1 ] && hy_as_root rm -f "$shim"
	if [ $rc = 0 ] && command -v systemctl >/dev/null &&
		systemctl is-enabled prometheus >/dev/null 2>&1; then
		hy_as_root systemctl disable --now prometheus >/dev/null 2>&1 ||
			echo "note: the prometheus service could not be disabled" >&2
	fi
	return $rc
}

# hy_build BUILD_DIR [configure options...]: an out-of-tree build.
hy_build() {
	local dir=$1
	shift
	if [ ! -x "$HY_REPO/configure" ] || [ "$HY_REPO/configure.ac" -nt "$HY_REPO/configure" ]; then
		hy_say "autoreconf"
		(cd "$HY_REPO" && autoreconf -fi) >/dev/null || return 1
	fi
	mkdir -p "$dir"
	if [ ! -f "$dir/Makefile" ] || [ "$(cat "$dir/.hy-configured" 2>/dev/null)" != "$*" ]; then
		hy_say "configure $* (in $dir)"
		(cd "$dir" && "$HY_REPO/configure" "$@" >configure.out 2>&1) ||
			{ cat "$dir/configure.out"; return 1; }
		printf '%s' "$*" >"$dir/.hy-configured"
	fi
	hy_say "make (in $dir)"
	make -C "$dir" -j"$(nproc)" >"$dir/make.out" 2>&1 || { cat "$dir/make.out"; return 1; }
}
