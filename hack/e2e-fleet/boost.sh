# Sourced by hack/e2e-fleet.sh after the agent is installed (not run by
# itself): the start-up boost step. Uses the rig's $K, $VERSION, $AGENT,
# $work, $E2E_OUT, say, waitfor, freeport.
#
# A JVM service with a CPU-heavy start-up (agent/testdata/startup/Boot.java
# with "stay": class loading and a two-thread warm-up, about 1.3 CPU-s, then
# it waits as a started service), run with the host's JDK: the rig is this
# host, and the release's image (no shell, no libc) holds no JDK, so the pod
# runs the host's java from read-only hostPath mounts of /usr, /usr/lib at
# /lib, /usr/lib64 at /lib64 and the JDK's /etc directory, on the release's
# image. -XX:ActiveProcessorCount=2 in every pod: the JVM sizes its threads
# from the CPUs it sees at its start, and this keeps that view the same
# under the limit and under the boost (docs/agent.md, The start-up boost).
#
# 1. boot-limit: the service under a 200m limit; its start-up length is the
#    JVM's uptime when it prints "ready".
# 2. The agent saw it start: its /advice entry's startup.boost (sized
#    against the advised limit, else the current 200m) gives the boost, its
#    duration and the predicted length under the boost; the length under
#    200m is the boost's when sized against it, else startup.delay's. At
#    200m the start-up runs throttled throughout, its demand hidden: the
#    boost is the agent's upper estimate (startup.Options.Hidden).
# 3. boot-boost1: the same service created with that boost as its limit
#    (as kube-startup-cpu-boost and the VPA's startupBoost apply it, at
#    admission: the JVM sees it from its start), resized back in place
#    (pods/resize) to 200m the boost's duration after its container
#    started, the cgroup's quota waited for; its start-up length measured
#    alike, printed against the estimate (not judged).
# 4. boot-boost2: the same with the agent's boost sized from boot-boost1's
#    start-up (seen above its demand); judged: the time it saves against
#    boot-limit within 30% of the predicted.
# 5. The runtime (the chart's runtime.hostProc=true on the rig): the agent's
#    /advice names the JVM of boot-boost2 with its ActiveProcessorCount 2, and
#    a Go server (boost-go, GOMAXPROCS=3 in its environment) as Go with
#    GOMAXPROCS 3.
BNS=boost-e2e
BLIMIT=200
GOPORT=$(freeport)
JAVA=$(readlink -f "$(command -v java 2>/dev/null || echo /nonexistent)")
[ -x "$JAVA" ] && command -v javac >/dev/null || { say "boost: no JDK on this host (apt-get install -y default-jdk-headless)" >&2; exit 1; }
JETC=$(find /etc -maxdepth 1 -name 'java-*-openjdk' | head -1)
mkdir -p "$work/boot-classes"
javac -d "$work/boot-classes" agent/testdata/startup/Boot.java

# bootpod NAME CPU_LIMIT: the JVM service in a pod of its own.
bootpod() {
	cat <<YAML
---
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: $BNS, labels: {app: $1}}
spec:
  hostNetwork: true
  enableServiceLinks: false
  tolerations: [{key: node.kubernetes.io/not-ready, operator: Exists}]
  containers:
  - name: boot
    image: throttlelab:$VERSION
    imagePullPolicy: Never
    command: ["$JAVA"]
    args: [-XX:ActiveProcessorCount=2, -XX:-UsePerfData, -Xshare:auto, -cp, /boot, Boot, "6000000", stay]
    resources:
      requests: {cpu: 100m, memory: 256Mi}
      limits: {cpu: "$2", memory: 512Mi}
    resizePolicy:
    - {resourceName: cpu, restartPolicy: NotRequired}
    volumeMounts:
    - {name: usr, mountPath: /usr, readOnly: true}
    - {name: lib, mountPath: /lib, readOnly: true}
    - {name: lib64, mountPath: /lib64, readOnly: true}
    - {name: boot, mountPath: /boot, readOnly: true}
YAML
	[ -z "$JETC" ] || printf '    - {name: jetc, mountPath: %s, readOnly: true}\n' "$JETC"
	cat <<YAML
  volumes:
  - {name: usr, hostPath: {path: /usr, type: Directory}}
  - {name: lib, hostPath: {path: /usr/lib, type: Directory}}
  - {name: lib64, hostPath: {path: /usr/lib64, type: Directory}}
  - {name: boot, hostPath: {path: $work/boot-classes, type: Directory}}
YAML
	[ -z "$JETC" ] || printf '  - {name: jetc, hostPath: {path: %s, type: Directory}}\n' "$JETC"
}
# ready POD: the JVM's uptime in ms when it printed "ready" (empty before).
ready() { $K -n $BNS logs "$1" 2>/dev/null | awk '$1 == "ready" { print $4; exit }'; }
# bootentry POD: the agent's /advice entry of POD's container, as JSON, once
# it carries the start-up's boost (or why there is none).
bootentry() {
	curl -fs "http://127.0.0.1:$AGENT/advice" | python3 -c '
import json, sys
d = json.load(sys.stdin)
e = [c for c in d["containers"] if c.get("pod") == sys.argv[1] and c.get("container") == "boot"]
if not e or not e[0].get("startup") or not (e[0]["startup"].get("boost") or e[0]["startup"].get("boost_why")): sys.exit(1)
print(json.dumps(e[0]))' "$1"
}

{
	printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n' "$BNS"
	bootpod boot-limit "${BLIMIT}m"
} >"$work/boost.yaml"
cp "$work/boost.yaml" "$E2E_OUT/boost.yaml"
say "boost: deploying boot-limit (a JVM start-up, the host's $("$JAVA" -version 2>&1 | head -1), under ${BLIMIT}m)"
$K apply -f "$work/boost.yaml" >/dev/null
waitfor boot-limit 240 sh -c "[ -n \"\$($K -n $BNS logs boot-limit 2>/dev/null | awk '\$1 == \"ready\"')\" ]"
TLIM=$(ready boot-limit)
say "boost: boot-limit ready after ${TLIM} ms (the JVM's uptime)"
# boostof POD: waits for the agent's boost for POD's start-up and sets
# BOOST BDUR PLIM PBOOST PUNL PWORK BAGAINST BNOTE from it.
boostof() {
	i=0
	until bootentry "$1" >"$work/$1-entry.json"; do
		i=$((i + 1))
		[ $i -le 60 ] || { say "boost: no start-up boost for $1 in the agent's /advice after 300s" >&2; curl -fs "http://127.0.0.1:$AGENT/advice" | head -c 3000 >&2; exit 1; }
		sleep 5
	done
	cp "$work/$1-entry.json" "$E2E_OUT/$1-entry.json"
	set -- $(python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))
b = e["startup"].get("boost")
if not b or not b["needed"]:
    print("none", e["startup"].get("boost_why") or b["note"]); sys.exit(0)
# The length under the pod'"'"'s limit: the boost'"'"'s own when it was sized
# against it, else the start-up'"'"'s delay at the current limit.
d = e["startup"].get("delay") or {}
at = b["at_limit_seconds"] if b["limit_millicores"] == int(sys.argv[2]) else d.get("at_limit_seconds", -1)
print(b["boost_millicores"], b["duration_seconds"], at, b["boosted_seconds"], b["unlimited_seconds"], b["work_cpu_seconds"], b["limit_millicores"], "hidden" if "hidden" in b["note"] else "seen")' "$work/$1-entry.json" "$BLIMIT")
	[ "$1" != none ] || { shift; say "boost: the agent gives no boost: $*" >&2; exit 1; }
	BOOST=$1 BDUR=$2 PLIM=$3 PBOOST=$4 PUNL=$5 PWORK=$6 BAGAINST=$7 BNOTE=$8
	[ "$PLIM" != -1 ] || { say "boost: no predicted length under ${BLIMIT}m in the /advice entry (sized against ${BAGAINST}m, no delay)" >&2; exit 1; }
}
# boosted POD: POD created with the boost $BOOST as its limit, resized back
# in place to $BLIMIT $BDUR s after its container started; sets TBOOST (ms).
boosted() {
	bootpod "$1" "${BOOST}m" >"$work/$1.yaml"
	cp "$work/$1.yaml" "$E2E_OUT/$1.yaml"
	$K apply -f "$work/$1.yaml" >/dev/null
	waitfor "$1-running" 120 sh -c "[ -n \"\$($K -n $BNS get pod $1 -o jsonpath='{.status.containerStatuses[0].state.running.startedAt}')\" ]"
	# The boost's duration counts from the container's start: the resize
	# back is sent that long after it was seen running.
	sleep "$BDUR"
	$K -n $BNS patch pod "$1" --subresource resize --type strategic \
		-p "{\"spec\":{\"containers\":[{\"name\":\"boot\",\"resources\":{\"limits\":{\"cpu\":\"${BLIMIT}m\"}}}]}}" >"$work/$1-resize.log" 2>&1 ||
		{ cat "$work/$1-resize.log" >&2; say "boost: the resize of $1 back to ${BLIMIT}m was refused" >&2; exit 1; }
	BUID=$($K -n $BNS get pod "$1" -o jsonpath='{.metadata.uid}')
	BCID=$($K -n $BNS get pod "$1" -o jsonpath='{.status.containerStatuses[0].containerID}' | sed 's|.*://||')
	BCG=$(find /sys/fs/cgroup -path "*pod$BUID/$BCID" -type d 2>/dev/null | while read -r d; do [ -e "$d/cpu.stat" ] && grep -q nr_periods "$d/cpu.stat" && echo "$d"; done | head -1)
	[ -n "$BCG" ] || { say "boost: no cgroup for $1's container ($BUID/$BCID)" >&2; exit 1; }
	waitfor "$1-resize-back" 60 sh -c "[ \"\$(cat $BCG/cpu.cfs_quota_us 2>/dev/null || cut -d' ' -f1 $BCG/cpu.max)\" = $((BLIMIT * 100)) ]"
	waitfor "$1" 240 sh -c "[ -n \"\$($K -n $BNS logs $1 2>/dev/null | awk '\$1 == \"ready\"')\" ]"
	TBOOST=$(ready "$1")
}
# judge WHAT: the measured lengths against the predicted ($TLIM, $TBOOST,
# $PLIM, $PBOOST), one line in boost.txt; fails when the time saved is not
# within 30% of the predicted.
judge() {
	python3 - "$TLIM" "$TBOOST" "$PLIM" "$PBOOST" "$BOOST" "$BDUR" "$BLIMIT" "$(cut -d' ' -f1-3 /proc/loadavg)" "$1" <<'EOF' | tee -a "$E2E_OUT/boost.txt"
import sys
tlim, tboost = int(sys.argv[1]) / 1000, int(sys.argv[2]) / 1000
plim, pboost = float(sys.argv[3]), float(sys.argv[4])
saved, psaved = tlim - tboost, plim - pboost
ok = abs(saved - psaved) <= 0.3 * psaved
print(f"{sys.argv[9]} (load {sys.argv[8]}): under {sys.argv[7]}m predicted {plim:.2f} s, measured {tlim:.2f} s; "
      f"boosted to {sys.argv[5]}m for {sys.argv[6]} s predicted {pboost:.2f} s, measured {tboost:.2f} s; "
      f"saved predicted {psaved:.2f} s, measured {saved:.2f} s ({100 * (saved - psaved) / psaved:+.0f}%): {'within' if ok else 'NOT within'} 30%")
EOF
	grep -q "^$1 .*: within 30%" "$E2E_OUT/boost.txt"
}

# The first start-up ran at the limit throughout: its demand is hidden and
# the agent's boost is its upper estimate (the work on the node's CPUs).
boostof boot-limit
say "boost: the agent's boost from boot-limit ($BNOTE): ${BOOST}m for ${BDUR} s (against ${BAGAINST}m; ${PWORK} CPU-s, ${PUNL} s unlimited, predicted ${PLIM} s under the limit, ${PBOOST} s boosted)"
boosted boot-boost1
judge "boot-boost1, the boost from the hidden start-up" || say "boost: the estimate from a hidden start-up missed by more than 30% (expected: it assumes the node's CPUs from the start)"
# The boosted start-up ran above its demand: the agent sees it, and its
# boost from that start-up is the one judged.
boostof boot-boost1
say "boost: the agent's boost from boot-boost1 ($BNOTE): ${BOOST}m for ${BDUR} s (against ${BAGAINST}m; ${PWORK} CPU-s, ${PUNL} s unlimited, predicted ${PLIM} s under the limit, ${PBOOST} s boosted)"
boosted boot-boost2
judge "boot-boost2, the boost from the seen start-up" || { say "boost: the time the boost saves is not within 30% of the predicted" >&2; exit 1; }

# --- the runtime, read from the host's /proc (runtime.hostProc) --------------
cat >"$work/boost-go.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata: {name: boost-go, namespace: $BNS}
spec:
  hostNetwork: true
  enableServiceLinks: false
  tolerations: [{key: node.kubernetes.io/not-ready, operator: Exists}]
  containers:
  - name: server
    image: throttlelab:$VERSION
    imagePullPolicy: Never
    args: [serve, --listen, "127.0.0.1:$GOPORT", --gomaxprocs, "3"]
    env: [{name: GOMAXPROCS, value: "3"}]
    resources:
      requests: {cpu: 50m, memory: 64Mi}
      limits: {cpu: 500m, memory: 128Mi}
YAML
$K apply -f "$work/boost-go.yaml" >/dev/null
waitfor boost-go 120 curl -fs "http://127.0.0.1:$GOPORT/healthz"
runtimes() {
	curl -fs "http://127.0.0.1:$AGENT/advice" | python3 -c '
import json, sys
d = json.load(sys.stdin)
rt = {c.get("pod"): c.get("runtime") or {"why": c.get("runtime_why")} for c in d["containers"] if c.get("namespace") == sys.argv[1]}
print(json.dumps(rt))
go, jvm = rt.get("boost-go") or {}, rt.get("boot-boost2") or {}
ok = go.get("setting") == "GOMAXPROCS" and go.get("setting_set") and go.get("parallelism_found") == 3 \
    and "processor" in (jvm.get("setting") or "").lower() and jvm.get("setting_set") and jvm.get("parallelism_found") == 2
sys.exit(0 if ok else 1)' "$BNS"
}
i=0
until runtimes >"$E2E_OUT/boost-runtimes.json"; do
	i=$((i + 1))
	[ $i -le 24 ] || { cat "$E2E_OUT/boost-runtimes.json" >&2; say "boost: the agent's /advice does not name the Go server's GOMAXPROCS 3 and the JVM's ActiveProcessorCount 2 (runtime.hostProc)" >&2; exit 1; }
	sleep 5
done
say "boost: the agent reads the runtimes (runtime.hostProc): $(cat "$E2E_OUT/boost-runtimes.json")"
