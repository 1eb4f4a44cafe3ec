#!/bin/sh
# hack/arithmetic-tests.sh DIR...: a `go test -run` pattern of the tests in
# DIRs' test files that call testenv.Arithmetic: the single-goroutine
# arithmetic at scale that skips under the race detector, and which make test
# runs again without -race (the packages' other tests ran under -race
# already, so they are not run twice). Fails when a function that is not a
# top-level Test calls testenv.Arithmetic (its tests could not be named here,
# and would then run in neither pass), or when DIRs have no such test.
set -eu
if [ $# -eq 0 ]; then
	echo "usage: hack/arithmetic-tests.sh DIR..." >&2
	exit 2
fi
list=$(mktemp)
trap 'rm -f "$list"' EXIT
for dir in "$@"; do
	for f in "$dir"/*_test.go; do
		[ -e "$f" ] || continue
		awk -v file="$f" '
			/^func / { name = ""; if (match($0, /^func Test[A-Za-z0-9_]*\(/)) name = substr($0, 6, RLENGTH - 6); else other = $0 }
			/testenv\.Arithmetic\(/ {
				if (name == "") { printf "hack/arithmetic-tests.sh: %s: testenv.Arithmetic outside a top-level Test function (%s): call it from the Test itself\n", file, other > "/dev/stderr"; exit 1 }
				print name
			}' "$f" >>"$list"
	done
done
names=$(sort -u "$list")
if [ -z "$names" ]; then
	echo "hack/arithmetic-tests.sh: no test in $* calls testenv.Arithmetic: drop them from NORACE_PKGS" >&2
	exit 1
fi
echo "^($(echo "$names" | paste -sd '|' -))\$"
