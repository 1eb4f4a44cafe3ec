#!/bin/sh
# make e2e-k8s: a real one-node Kubernetes cluster on this bare Debian host,
# from package registries only, an experiment run on it with the kubernetes
# backend, and the host put back as it was.
#
#   flock /tmp/throttlelab-host.lock make e2e-k8s      (as root)
#
# 1. builds (once, cached) etcd, kube-apiserver, kube-controller-manager,
#    kube-scheduler and kubelet v1.37.0 from the Go module proxy;
# 2. installs Debian's containerd and runc if missing, without starting them
#    (a policy-rc.d that refuses every service start during the install);
# 3. starts containerd, etcd, the control plane and a kubelet under a
#    temporary directory, on loopback: cgroupfs driver, cgroup v1 allowed,
#    swap allowed, CFS quota on with a 100 ms period, anonymous kubelet
#    with AlwaysAllow (a loopback test rig only);
# 4. imports the image of make image and a tiny static pause image with
#    ctr -n k8s.io images import (there is no registry);
# 5. runs examples/limits.yaml with --backend kubernetes --host-network
#    (no network plugin: pods on the node's network, servers on loopback
#    ports), writes the results under E2E_OUT (default a new temporary
#    directory) and checks them: the limited pods' cgroups had quota
#    25000/100000 and were throttled, and the limited p99 is above the
#    unlimited p99;
#    Then examples/pod-limit.yaml the same way: its pod config is one pod
#    whose containers are the instances under a pod-level limit; the check
#    wants each container's own quota, the pod cgroup's 80000/100000 (read
#    through the kubelet's cAdvisor) and the pod cgroup throttled.
#    E2E_K8S_ONLY=pod runs the rig and this step alone.
# 6. tears everything down, also on failure and Ctrl-C: processes (the
#    pods' too), mounts, the kubepods cgroups, iptables chains the kubelet
#    added, the sysctls it changed, the directories.
set -eu
cd "$(dirname "$0")/.."
REPO=$(pwd)

RIG=e2e-k8s
. hack/k8s-rig.sh

# --- the pod-level step ---------------------------------------------------------
# The API server proxies to global unicast node addresses only, and this
# node is on loopback: the backend cannot read the pod cgroup through the
# kubelet's cAdvisor here (it says so), so the rig reads it from the host,
# every second while the run goes: each kubepods pod directory with a quota,
# its quota, period and cpu.stat (the last reading is the pod's last second).
watch_pod_cgroups() {
	mkdir -p "$work/podcg"
	while :; do
		for d in $(find /sys/fs/cgroup -path '*kubepods*' -maxdepth 5 -type d -name '*pod*' 2>/dev/null); do
			case "$(basename "$d")" in pod*|*-pod*.slice) ;; *) continue ;; esac # the pod's own, not kubepods
			if [ -r "$d/cpu.cfs_quota_us" ]; then
				q="$(cat "$d/cpu.cfs_quota_us" "$d/cpu.cfs_period_us" 2>/dev/null | tr '\n' ' ')"
			elif [ -r "$d/cpu.max" ]; then
				q="$(cat "$d/cpu.max" 2>/dev/null)"
			else
				continue
			fi
			case "$q" in -1*|max*|"") continue ;; esac
			st="$(cat "$d/cpu.stat" 2>/dev/null)" || continue
			printf 'group %s\nquota %s\n%s\n' "$d" "$q" "$st" >"$work/podcg/$(basename "$d").tmp" && mv "$work/podcg/$(basename "$d").tmp" "$work/podcg/$(basename "$d").txt"
		done
		sleep 1
	done
}

pod_step() {
	say "running examples/pod-limit.yaml with the kubernetes backend (a pod-level limit)"
	watch_pod_cgroups &
	watcher=$!
	set +e
	bin/throttlelab run examples/pod-limit.yaml --backend kubernetes --kubeconfig "$KC" --host-network \
		--image "throttlelab:$VERSION" --out "$E2E_OUT/pod-limit" --ready-timeout 2m
	podrc=$?
	set -e
	kill "$watcher" 2>/dev/null || true
	wait "$watcher" 2>/dev/null || true
	[ $podrc = 0 ] || { say "the pod-level run failed ($podrc)" >&2; exit 1; }
	mkdir -p "$E2E_OUT/pod-cgroups"
	cp "$work"/podcg/*.txt "$E2E_OUT/pod-cgroups/" 2>/dev/null || true
	go run ./hack/e2e-k8s/check -pod -dir "$E2E_OUT/pod-limit" -host-pod-cgroups "$E2E_OUT/pod-cgroups"
}
if [ "${E2E_K8S_ONLY:-}" = pod ]; then
	pod_step
	say "passed (the pod-level step only)"
	exit 0
fi

# --- the experiment -----------------------------------------------------------
say "running examples/limits.yaml with the kubernetes backend"
set +e
bin/throttlelab run examples/limits.yaml --backend kubernetes --kubeconfig "$KC" --host-network \
	--image "throttlelab:$VERSION" --out "$E2E_OUT/limits" --ready-timeout 2m
runrc=$?
set -e
[ $runrc = 0 ] || { say "the run failed ($runrc)" >&2; exit 1; }
go run ./hack/e2e-k8s/check -dir "$E2E_OUT/limits"

# Ctrl-C in the middle of a load: the run must delete what it made.
say "interrupting a second run during its load"
bin/throttlelab run examples/limits.yaml --backend kubernetes --kubeconfig "$KC" --host-network \
	--image "throttlelab:$VERSION" --out "$E2E_OUT/interrupted" --ready-timeout 2m >"$work/interrupted.log" 2>&1 &
runpid=$!
waitfor interrupted 180 grep -q "^load: Job" "$work/interrupted.log"
kill -INT $runpid
set +e
wait $runpid
intrc=$?
set -e
# Empty lists (or the namespace gone): nothing of the run is left.
none() { curl -sk -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$API$1" | tr -d ' \n' | grep -qE '"items":\[\]|"code":404'; }
left=""
none "/api/v1/namespaces/throttlelab-limits/pods?labelSelector=throttlelab%2Frun%3Dlimits" || left="$left pods"
none "/apis/batch/v1/namespaces/throttlelab-limits/jobs?labelSelector=throttlelab%2Frun%3Dlimits" || left="$left jobs"
none "/api/v1/namespaces/throttlelab-limits/services?labelSelector=throttlelab%2Frun%3Dlimits" || left="$left services"
if [ "$intrc" != 130 ] || [ -n "$left" ]; then
	say "after Ctrl-C: exit $intrc (want 130), left:${left:- nothing}" >&2
	tail -20 "$work/interrupted.log" >&2
	exit 1
fi
say "Ctrl-C during the load: exit 130, no pod, Job or Service of the run left"

# Killed outright during a load: its pods stay; --resume removes them by
# label and finishes the experiment.
say "killing a run during its load (SIGKILL), then --resume"
bin/throttlelab run examples/limits.yaml --backend kubernetes --kubeconfig "$KC" --host-network \
	--image "throttlelab:$VERSION" --out "$E2E_OUT/killed" --ready-timeout 2m >"$work/killed.log" 2>&1 &
runpid=$!
waitfor killed 180 grep -q "^load: Job" "$work/killed.log"
kill -KILL $runpid
wait $runpid 2>/dev/null || true
bin/throttlelab run --resume "$E2E_OUT/killed" --kubeconfig "$KC" --host-network \
	--image "throttlelab:$VERSION" --ready-timeout 2m >"$work/resumed.log" 2>&1 || { tail -20 "$work/resumed.log" >&2; exit 1; }
grep -q "removed .* objects a killed run of limits left" "$work/resumed.log" || { say "the resumed run did not remove the killed run's objects" >&2; tail -20 "$work/resumed.log" >&2; exit 1; }
go run ./hack/e2e-k8s/check -dir "$E2E_OUT/killed"
say "SIGKILL during the load, then --resume: leftovers removed by label, experiment finished"
pod_step
say "passed"
