#!/bin/sh
# Builds the Kubernetes control plane that the k8s package's tests run
# (etcd and kube-apiserver, at pinned versions) from the Go module proxy, with
# no container engine and no download other than Go modules. The binaries go
# to $THROTTLELAB_K8S_BIN (default /var/cache/throttlelab/k8s-v1.37.0); a
# second run finds them there and returns at once. The first build takes
# minutes (docs/kubernetes.md), at nice 10 because the machine may be shared.
# kube-apiserver is built in a scratch module (hack/k8s-module.sh).
#
# K8S_OPTIMIZE=0 builds them without the compiler's optimizations and inlining
# (-gcflags=all=-N -l), into $THROTTLELAB_K8S_BIN (default
# /var/cache/throttlelab/k8s-VERSION-unoptimized): about half the CPU of the
# build, for an API server that runs slower. CI builds these for the dry-run
# tests (.ci/run); the rig (make e2e-k8s, e2e-fleet) keeps the optimized ones.
set -eu

WHO=k8s-binaries
. "$(dirname "$0")/k8s-module.sh"
ETCD_VERSION=v3.7.0
GCFLAGS=
SUFFIX=
if [ "${K8S_OPTIMIZE:-1}" = 0 ]; then
	GCFLAGS="all=-N -l"
	SUFFIX=-unoptimized
fi
OUT=${THROTTLELAB_K8S_BIN:-/var/cache/throttlelab/k8s-$K8S_VERSION$SUFFIX}
STAMP="kubernetes $K8S_VERSION (staging $STAGING_VERSION), etcd $ETCD_VERSION, $(go env GOVERSION) $(go env GOOS)/$(go env GOARCH)${GCFLAGS:+, -gcflags=$GCFLAGS}"

if [ -x "$OUT/etcd" ] && [ -x "$OUT/kube-apiserver" ] && [ "$(cat "$OUT/VERSIONS" 2>/dev/null)" = "$STAMP" ]; then
	echo "k8s-binaries: $OUT has $STAMP"
	exit 0
fi

mkdir -p "$(dirname "$OUT")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
export GOFLAGS="${GOFLAGS:-} -mod=mod" CGO_ENABLED=0 GOWORK=off
build() { nice -n 10 go build -trimpath -gcflags="$GCFLAGS" "$@"; }

echo "k8s-binaries: building etcd $ETCD_VERSION"
mkdir "$work/etcd" "$work/bin"
(
	cd "$work/etcd"
	go mod init throttlelab.local/etcd >/dev/null 2>&1
	go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
	build -o "$work/bin/etcd" go.etcd.io/etcd/server/v3
)

echo "k8s-binaries: building kube-apiserver $K8S_VERSION"
mkdir "$work/k8s"
(
	cd "$work/k8s"
	k8s_module k8s
	build -o "$work/bin/kube-apiserver" -ldflags "$K8S_LDFLAGS" k8s.io/kubernetes/cmd/kube-apiserver
)

echo "$STAMP" >"$work/bin/VERSIONS"
rm -rf "$OUT.new"
mv "$work/bin" "$OUT.new"
rm -rf "$OUT"
mv "$OUT.new" "$OUT"
echo "k8s-binaries: $OUT has $STAMP"
