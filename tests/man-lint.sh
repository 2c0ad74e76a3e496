#!/bin/sh
# Lints every man page with mandoc; any warning fails the test.
src=${HY_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
command -v mandoc >/dev/null || { echo "mandoc is missing (package mandoc)"; exit 77; }
status=0
for page in "$src"/man/hybridfs.8 "$src"/man/hybridctl.8; do
	out=$(mandoc -Tlint -W warning "$page" 2>&1)
	if [ -n "$out" ]; then
		echo "$out"
		status=1
	else
		echo "ok: $page"
	fi
done
exit $status
