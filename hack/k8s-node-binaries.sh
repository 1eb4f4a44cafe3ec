#!/bin/sh
# Builds the rest of a one-node cluster for make e2e-k8s: kube-controller-manager,
# kube-scheduler and kubelet, at the version hack/k8s-binaries.sh builds
# kube-apiserver at, from the Go module proxy (no container engine, no
# download site). They go beside etcd and kube-apiserver into
# $THROTTLELAB_K8S_NODE_BIN (default /var/cache/throttlelab/k8s-node-v1.37.0);
# a second run finds them and returns at once. Built at nice 19: the machine
# is shared, and the first build takes many minutes.
set -eu

WHO=k8s-node-binaries
. "$(dirname "$0")/k8s-module.sh"
OUT=${THROTTLELAB_K8S_NODE_BIN:-/var/cache/throttlelab/k8s-node-$K8S_VERSION}
STAMP="kubernetes $K8S_VERSION (staging $STAGING_VERSION) node, $(go env GOVERSION) $(go env GOOS)/$(go env GOARCH)"

if [ -x "$OUT/kubelet" ] && [ -x "$OUT/kube-scheduler" ] && [ -x "$OUT/kube-controller-manager" ] && [ "$(cat "$OUT/VERSIONS" 2>/dev/null)" = "$STAMP" ]; then
	echo "k8s-node-binaries: $OUT has $STAMP"
	exit 0
fi

mkdir -p "$(dirname "$OUT")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
export GOFLAGS="${GOFLAGS:-} -mod=mod" CGO_ENABLED=0 GOWORK=off

echo "k8s-node-binaries: building kube-controller-manager, kube-scheduler and kubelet $K8S_VERSION"
mkdir "$work/k8s" "$work/bin"
(
	cd "$work/k8s"
	k8s_module k8snode
	# One go build for the three shares the compiled packages they have in common.
	nice -n 19 go build -trimpath -o "$work/bin/" \
		-ldflags "$K8S_LDFLAGS" \
		k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet
)

echo "$STAMP" >"$work/bin/VERSIONS"
rm -rf "$OUT.new"
mv "$work/bin" "$OUT.new"
rm -rf "$OUT"
mv "$OUT.new" "$OUT"
echo "k8s-node-binaries: $OUT has $STAMP"
