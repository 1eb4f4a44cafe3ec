#!/bin/sh
# hack/test-packages.sh host|host-real|host-whole|shared [k8s|no-k8s]: the
# module's packages as make test runs them. "host": packages whose tests use the host itself, so they run one at
# a time as before: real cgroups (they import cgroup/cgrouptest, or have
# *real*_test.go or e2e*_test.go files, or ask for root), a browser
# (internal/browsertest), or measure wall-clock time under load (TIMED below).
# "shared": every other package, whose tests only compute, or talk to
# servers they start on free loopback ports: they run two at a time.
# Computed from the tests themselves, so a new real-kernel test joins "host"
# without anyone editing a list.
# "host-real": the host packages that are there only for their real-kernel
# tests (cgrouptest, *real* or e2e* files, a root check), whose other tests
# only compute: make test runs the tests named as real-kernel tests (the
# Makefile's HOST_TESTS: Real, TestRun*, TestTop*, ...) on the quiet machine
# and the rest with the shared set. "host-whole": the host packages that
# need the quiet machine as a whole (a browser, or TIMED).
# The second argument splits either set by the control plane: "k8s" only the
# packages whose tests start etcd and kube-apiserver (they call
# k8stest.Binaries), "no-k8s" the others. CI builds those binaries in the
# background and runs the "k8s" packages last (.ci/run, make test).
set -eu
case "${2:-}" in
"" | k8s | no-k8s) ;;
*) echo "usage: hack/test-packages.sh host|host-real|host-whole|shared [k8s|no-k8s]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
# Packages that time things in real time (a pacer's rate, a kernel's burn)
# without any of the marks above.
TIMED="workload loadgen k8s/resize server"
mod=$(go list -m)
go list -f '{{.ImportPath}} {{.Dir}} {{join .TestImports " "}} {{join .XTestImports " "}} ' ./... |
	while read -r path dir imports; do
		rel=${path#"$mod"}
		rel=.${rel:-}
		host=
		whole=
		case " $imports " in
		*"/internal/browsertest "*) host=1 whole=1 ;;
		esac
		case " $imports " in
		*"/cgroup/cgrouptest "*) host=1 ;;
		esac
		for f in "$dir"/*real*_test.go "$dir"/e2e*_test.go; do
			[ -e "$f" ] && host=1
		done
		if [ -z "$host" ] && ls "$dir"/*_test.go >/dev/null 2>&1 && grep -qs 'os.Geteuid()' "$dir"/*_test.go; then
			host=1
		fi
		for t in $TIMED; do
			[ "$rel" = "./$t" ] && host=1 whole=1
		done
		k8s=
		if ls "$dir"/*_test.go >/dev/null 2>&1 && grep -qs 'k8stest\.Binaries(' "$dir"/*_test.go; then
			k8s=1
		fi
		case "${2:-}" in
		k8s) [ -n "$k8s" ] || continue ;;
		no-k8s) [ -z "$k8s" ] || continue ;;
		esac
		case "$1" in
		host) [ -n "$host" ] && echo "$rel" ;;
		host-real) [ -n "$host" ] && [ -z "$whole" ] && echo "$rel" ;;
		host-whole) [ -n "$whole" ] && echo "$rel" ;;
		shared) [ -z "$host" ] && echo "$rel" ;;
		*) echo "usage: hack/test-packages.sh host|host-real|host-whole|shared [k8s|no-k8s]" >&2; exit 2 ;;
		esac
	done
