#!/bin/sh
# hack/step.sh NAME CMD [ARG...]: runs CMD and, when STEP_TIMES names a file,
# appends one line to it: NAME, the wall time, the CPU time (user and system)
# of CMD and everything it waited for, and CMD's exit status. .ci/run prints
# the file at its end (make test's steps and its own), so a slow run says
# which step was slow, and whether it waited or worked.
# Exits with CMD's status.
name=$1
shift
start=$(date +%s.%N)
rc=0
"$@" || rc=$?
end=$(date +%s.%N)
if [ -n "${STEP_TIMES:-}" ]; then
	# The second line of `times` is the children's user and system time
	# (written to a file: in a $(...) subshell it would count none).
	tf=$(mktemp)
	times >"$tf"
	cpu=$(awk 'NR == 2 {
		s = 0
		for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] }
		printf "%.0f", s
	}' "$tf")
	rm -f "$tf"
	awk -v n="$name" -v s="$start" -v e="$end" -v c="$cpu" -v r="$rc" \
		'BEGIN { printf "%-28s %6.0f s wall %6s s CPU  exit %s\n", n, e - s, c, r }' >>"$STEP_TIMES"
fi
exit $rc
