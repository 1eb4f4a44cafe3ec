# Sourced by hack/e2e-k8s.sh and hack/e2e-fleet.sh (not run by itself): the
# one-node rig. Set before sourcing: RIG (the name in messages), REPO (the
# checkout, the current directory), optionally E2E_OUT and RIG_POD_LOGS (the
# kubelet's podLogsDir; default under the rig's directory). After it: $work,
# $KC (admin kubeconfig), $API, $TOKEN, $VERSION, $CTR, start/waitfor/freeport,
# and a teardown on EXIT that puts the host back (processes started with
# start, the pods', mounts, kubepods cgroups, KUBE-* iptables chains, sysctls,
# directories) and fails when anything is left.
if [ "$(id -u)" != 0 ]; then
	echo "$RIG: needs root (it starts a kubelet and containerd)" >&2
	exit 1
fi

K8S_BIN=${THROTTLELAB_K8S_BIN:-/var/cache/throttlelab/k8s-v1.37.0}
NODE_BIN=${THROTTLELAB_K8S_NODE_BIN:-/var/cache/throttlelab/k8s-node-v1.37.0}
THROTTLELAB_K8S_BIN=$K8S_BIN sh hack/k8s-binaries.sh
THROTTLELAB_K8S_NODE_BIN=$NODE_BIN sh hack/k8s-node-binaries.sh

say() { echo "$RIG: $*"; }

# --- containerd and runc from Debian, installed but not started ---------
if ! command -v containerd >/dev/null || ! command -v runc >/dev/null || ! command -v ctr >/dev/null; then
	say "installing containerd and runc (apt)"
	policy_saved=""
	if [ -e /usr/sbin/policy-rc.d ]; then
		policy_saved=$(mktemp)
		cp -p /usr/sbin/policy-rc.d "$policy_saved"
	fi
	printf '#!/bin/sh\n# e2e-k8s: no service starts while installing\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod 755 /usr/sbin/policy-rc.d
	rc=0
	{ apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends containerd runc; } || rc=$?
	if [ -n "$policy_saved" ]; then mv "$policy_saved" /usr/sbin/policy-rc.d; else rm -f /usr/sbin/policy-rc.d; fi
	[ $rc = 0 ] || exit $rc
	# Not enabled at boot either (the package enables its systemd unit):
	# this host runs containerd only for the rig.
	if command -v deb-systemd-helper >/dev/null; then
		DPKG_MAINTSCRIPT_PACKAGE=containerd DPKG_MAINTSCRIPT_NAME=postinst deb-systemd-helper disable containerd.service >/dev/null 2>&1 || true
	fi
	if [ -x /etc/init.d/containerd ] && command -v update-rc.d >/dev/null; then
		update-rc.d containerd disable >/dev/null 2>&1 || true
	fi
fi
# A containerd that is not ours (the package's service) must not run.
if pgrep -x containerd >/dev/null; then
	say "a containerd is running already (pid $(pgrep -x containerd | tr '\n' ' ')): stop it first, the rig starts its own" >&2
	exit 1
fi

# --- the host's state, put back by teardown ------------------------------
work=$(mktemp -d /tmp/throttlelab-$RIG.XXXXXX)
E2E_OUT=${E2E_OUT:-$(mktemp -d /tmp/throttlelab-$RIG-out.XXXXXX)}
mkdir -p "$E2E_OUT"
SYSCTLS="kernel.panic kernel.panic_on_oops vm.overcommit_memory vm.panic_on_oom kernel.keys.root_maxkeys kernel.keys.root_maxbytes"
saved_sysctls=$(for s in $SYSCTLS; do echo "$s $(sysctl -n "$s")"; done)
had_dirs=""
for d in /run/containerd /var/lib/kubelet /var/log/pods /var/log/containers /etc/kubernetes /opt/containerd /var/lib/containerd /etc/cni /opt/cni; do
	[ -e "$d" ] && had_dirs="$had_dirs $d"
done
pids=""

kubepods_dirs() {
	find /sys/fs/cgroup -mindepth 1 -maxdepth 3 -type d -name 'kubepods*' 2>/dev/null || true
}

teardown() {
	rc=$?
	trap - EXIT INT TERM
	say "tearing down"
	# A throttlelab run still going (the script failed beside it) first.
	for p in $(pgrep -f "^bin/throttlelab run .*--kubeconfig $work/" || true); do kill -9 "$p" 2>/dev/null || true; done
	# The pods' processes: everything in a kubepods cgroup.
	for d in $(kubepods_dirs); do
		find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -9 2>/dev/null || true
	done
	# Our processes, newest first: kubelet, scheduler, controller-manager,
	# apiserver, etcd, containerd; then the shims containerd left.
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	for i in $(seq 1 100); do
		alive=""
		for p in $pids; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
		[ -z "$alive" ] && break
		sleep 0.1
	done
	for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
	for p in $(pgrep -f "containerd-shim.*$work" || true); do kill -9 "$p" 2>/dev/null || true; done
	for d in $(kubepods_dirs); do
		find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -9 2>/dev/null || true
	done
	# Mounts under the rig's directories, deepest first.
	for i in 1 2 3; do
		findmnt -rn -o TARGET | grep -E "^($work|/run/containerd|/var/lib/kubelet)" | sort -r | while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
	done
	# The kubepods cgroups, in every hierarchy, children first.
	for i in $(seq 1 50); do
		left=$(kubepods_dirs)
		[ -z "$left" ] && break
		for d in $left; do find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true; done
		sleep 0.1
	done
	# iptables chains the kubelet made (KUBE-*), and the rules that jump to them.
	for ipt in iptables ip6tables; do
		command -v $ipt >/dev/null || continue
		for t in filter nat mangle; do
			$ipt -t $t -S 2>/dev/null | grep -E '^-A .*-j KUBE-' | sed 's/^-A/-D/' | while read -r r; do eval "$ipt -t $t $r" 2>/dev/null || true; done
			for c in $($ipt -t $t -S 2>/dev/null | sed -n 's/^-N \(KUBE-[^ ]*\).*/\1/p'); do
				$ipt -t $t -F "$c" 2>/dev/null || true
			done
			for c in $($ipt -t $t -S 2>/dev/null | sed -n 's/^-N \(KUBE-[^ ]*\).*/\1/p'); do
				$ipt -t $t -X "$c" 2>/dev/null || true
			done
		done
	done
	# The sysctls the kubelet set.
	while read -r s v; do sysctl -q -w "$s=$v" >/dev/null 2>&1 || true; done <<EOF
$saved_sysctls
EOF
	# Directories the rig made outside its own.
	for d in /run/containerd /var/lib/kubelet /var/log/pods /var/log/containers /etc/kubernetes /opt/containerd /var/lib/containerd /etc/cni /opt/cni; do
		case " $had_dirs " in *" $d "*) ;; *) [ -e "$d" ] && rm -rf "$d" ;; esac
	done
	cp "$work"/*.log "$E2E_OUT/" 2>/dev/null || true
	rm -rf "$work"
	# What must not remain.
	bad=""
	for n in kubelet kube-apiserver kube-scheduler kube-controller-manager etcd containerd containerd-shim-runc-v2 prometheus; do
		pgrep -f "(^|/)$n( |\$)" >/dev/null && bad="$bad process:$n"
	done
	[ -n "$(kubepods_dirs)" ] && bad="$bad cgroups:$(kubepods_dirs | tr '\n' ' ')"
	findmnt -rn -o TARGET | grep -q "^$work" && bad="$bad mounts"
	if command -v iptables >/dev/null && iptables-save 2>/dev/null | grep -q '^:KUBE-'; then bad="$bad iptables"; fi
	while read -r s v; do [ "$(sysctl -n "$s")" = "$v" ] || bad="$bad sysctl:$s"; done <<EOF
$saved_sysctls
EOF
	if [ -n "$bad" ]; then
		say "the host is NOT as it was:$bad" >&2
		rc=1
	else
		say "host restored (no rig process, cgroup, mount or iptables chain left; sysctls back)"
	fi
	say "results and logs in $E2E_OUT"
	exit $rc
}
trap teardown EXIT
trap 'exit 130' INT TERM

freeport() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
start() { # name, command...
	name=$1
	shift
	"$@" >"$work/$name.log" 2>&1 &
	pids="$! $pids"
}
waitfor() { # what, seconds, command...
	what=$1 secs=$2
	shift 2
	i=0
	until "$@" >/dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -gt $((secs * 5)) ]; then
			say "$what not ready after ${secs}s; its log:" >&2
			tail -30 "$work/$what.log" >&2 || true
			exit 1
		fi
		sleep 0.2
	done
}

# --- images ---------------------------------------------------------------
VERSION=$(git describe --always --dirty 2>/dev/null || echo dev)
# RIG_IMAGE_TAR: an image already built (make release's multi-platform
# index, e2e-fleet), imported under the same name; else make image's.
if [ -n "${RIG_IMAGE_TAR:-}" ]; then
	cp "$RIG_IMAGE_TAR" "$work/throttlelab-oci.tar"
else
	make --no-print-directory image IMAGE_OUT="$work/throttlelab-oci.tar" >/dev/null
fi
make --no-print-directory build >/dev/null
CGO_ENABLED=0 go build -o "$work/pause" ./hack/e2e-k8s/pause
"$work/pause" -image "$work/pause-oci.tar" -ref registry.k8s.io/pause:throttlelab-rig

# --- containerd -------------------------------------------------------------
mkdir -p "$work/containerd" "$work/cni/bin" "$work/cni/conf" "$work/runc"
cat >"$work/containerd.toml" <<EOF
version = 2
root = "$work/containerd/root"
state = "$work/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$work/containerd.sock"
[ttrpc]
  address = "$work/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$work/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:throttlelab-rig"
  # No CAP_SYS_RESOURCE here: without it runc fails with "can't get final
  # child's PID from pipe".
  restrict_oom_score_adj = true
  disable_apparmor = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$work/cni/bin"
    conf_dir = "$work/cni/conf"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$work/runc"
EOF
say "starting containerd"
start containerd containerd --config "$work/containerd.toml"
CTR="ctr --address $work/containerd.sock -n k8s.io"
waitfor containerd 60 $CTR version
$CTR images import "$work/pause-oci.tar" >/dev/null
# The pods name the image throttlelab:VERSION, which the kubelet reads as
# docker.io/library/throttlelab:VERSION; the layout's own name is only a tag,
# which ctr does not take, so the index gets the full name.
$CTR images import --index-name "docker.io/library/throttlelab:$VERSION" "$work/throttlelab-oci.tar" >/dev/null
$CTR images ls -q | grep -qx "docker.io/library/throttlelab:$VERSION" || { say "no throttlelab:$VERSION after the import: $($CTR images ls -q)" >&2; exit 1; }
say "images: $($CTR images ls -q | tr '\n' ' ')"

# --- etcd and the control plane ---------------------------------------------
ETCD=$(freeport) PEER=$(freeport) API=$(freeport) KCM=$(freeport) SCHED=$(freeport) KUBELET=$(freeport) KUBELET_HZ=$(freeport)
TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$TOKEN,admin,admin,system:masters" >"$work/tokens.csv"
openssl genrsa -out "$work/sa.key" 2048 2>/dev/null
openssl rsa -in "$work/sa.key" -pubout -out "$work/sa.pub" 2>/dev/null
say "starting etcd and kube-apiserver"
start etcd "$K8S_BIN/etcd" --name rig --data-dir "$work/etcd" \
	--listen-client-urls "http://127.0.0.1:$ETCD" --advertise-client-urls "http://127.0.0.1:$ETCD" \
	--listen-peer-urls "http://127.0.0.1:$PEER" --initial-advertise-peer-urls "http://127.0.0.1:$PEER" \
	--initial-cluster "rig=http://127.0.0.1:$PEER" --unsafe-no-fsync --log-level warn
start kube-apiserver "$K8S_BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD" \
	--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API" --cert-dir "$work/apiserver-certs" \
	--token-auth-file "$work/tokens.csv" --authorization-mode AlwaysAllow \
	--service-account-issuer https://kubernetes.default.svc --service-account-key-file "$work/sa.pub" \
	--service-account-signing-key-file "$work/sa.key" --service-cluster-ip-range 10.0.0.0/24 \
	--endpoint-reconciler-type none --kubelet-preferred-address-types Hostname,InternalIP
cat >"$work/admin.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: rig, cluster: {server: "https://127.0.0.1:$API", insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: "$TOKEN"}}]
contexts: [{name: rig, context: {cluster: rig, user: admin}}]
current-context: rig
EOF
KC="$work/admin.kubeconfig"
waitfor kube-apiserver 180 curl -fsk -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$API/readyz"
say "starting kube-controller-manager and kube-scheduler"
start kube-controller-manager "$NODE_BIN/kube-controller-manager" --kubeconfig "$KC" --authentication-kubeconfig "$KC" --authorization-kubeconfig "$KC" \
	--bind-address 127.0.0.1 --secure-port "$KCM" --service-account-private-key-file "$work/sa.key" \
	--root-ca-file "$work/apiserver-certs/apiserver.crt" --use-service-account-credentials=false --leader-elect=false
start kube-scheduler "$NODE_BIN/kube-scheduler" --kubeconfig "$KC" --authentication-kubeconfig "$KC" --authorization-kubeconfig "$KC" \
	--bind-address 127.0.0.1 --secure-port "$SCHED" --leader-elect=false

# --- the kubelet --------------------------------------------------------------
cat >"$work/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KUBELET
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HZ
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
cpuCFSQuota: true
cpuCFSQuotaPeriod: 100ms
containerRuntimeEndpoint: unix://$work/containerd.sock
imageServiceEndpoint: unix://$work/containerd.sock
podLogsDir: ${RIG_POD_LOGS:-$work/pod-logs}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"}
resolvConf: /etc/resolv.conf
maxPods: 40
EOF
say "starting the kubelet"
start kubelet "$NODE_BIN/kubelet" --config "$work/kubelet.yaml" --kubeconfig "$KC" --root-dir "$work/kubelet" \
	--cert-dir "$work/kubelet-pki" --hostname-override localhost --v 1
waitfor kubelet 120 sh -c "curl -fsk -H 'Authorization: Bearer $TOKEN' https://127.0.0.1:$API/api/v1/nodes/localhost | grep -q '\"kubeletVersion\"'"
say "node localhost registered"
