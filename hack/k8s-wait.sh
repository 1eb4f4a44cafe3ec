#!/bin/sh
# hack/k8s-wait.sh LOCK STATUS LOG: waits for the etcd/kube-apiserver build
# that .ci/run started in the background, prints its output, and exits 1
# unless it succeeded. The background build holds an flock on LOCK from
# before it starts until it has written its exit status to STATUS, so taking
# the lock here returns only once STATUS is final. make test runs this (as
# $(K8S_WAIT)) just before the packages whose tests start the control plane.
set -eu
if [ $# -ne 3 ]; then
	echo "usage: hack/k8s-wait.sh LOCK STATUS LOG" >&2
	exit 2
fi
flock "$1" true
cat "$3"
status=$(cat "$2")
if [ "$status" != 0 ]; then
	echo "k8s-wait: the background k8s-binaries build failed (exit ${status:-none}): its output is above" >&2
	exit 1
fi
