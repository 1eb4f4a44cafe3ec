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
#    against the current 200m: no advice yet) gives the boost, its duration
#    and the predicted lengths under the limit and under the boost.
# 3. boot-boost: the same service created with the boost as its limit (as
#    kube-startup-cpu-boost and the VPA's startupBoost apply it, at
#    admission: the JVM sees it from its start), resized back in place
#    (pods/resize) to 200m the boost's duration after its container started,
#    the cgroup's quota waited for; its start-up length measured alike.
# 4. Judged: the time the boost saves within 30% of the predicted, the
#    lengths printed beside their predictions.
# 5. The runtime (the chart's runtime.hostProc=true on the rig): the agent's
#    /advice names the JVM of boot-boost with its ActiveProcessorCount 2, and
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
i=0
until bootentry boot-limit >"$work/boot-entry.json"; do
	i=$((i + 1))
	[ $i -le 60 ] || { say "boost: no start-up boost for boot-limit in the agent's /advice after 300s" >&2; curl -fs "http://127.0.0.1:$AGENT/advice" | head -c 3000 >&2; exit 1; }
	sleep 5
done
cp "$work/boot-entry.json" "$E2E_OUT/boot-entry.json"
set -- $(python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))
b = e["startup"].get("boost")
if not b or not b["needed"]:
    print("none", e["startup"].get("boost_why") or b["note"]); sys.exit(0)
print(b["boost_millicores"], b["duration_seconds"], b["at_limit_seconds"], b["boosted_seconds"], b["unlimited_seconds"], b["work_cpu_seconds"], b["limit_millicores"])' "$work/boot-entry.json")
[ "$1" != none ] || { shift; say "boost: the agent gives boot-limit no boost: $*" >&2; exit 1; }
BOOST=$1 BDUR=$2 PLIM=$3 PBOOST=$4 PUNL=$5 PWORK=$6 BAGAINST=$7
say "boost: the agent's boost for boot-limit: ${BOOST}m for ${BDUR} s (against ${BAGAINST}m; ${PWORK} CPU-s, ${PUNL} s unlimited, predicted ${PLIM} s under the limit, ${PBOOST} s boosted)"

bootpod boot-boost "${BOOST}m" >"$work/boost-2.yaml"
cp "$work/boost-2.yaml" "$E2E_OUT/boost-2.yaml"
$K apply -f "$work/boost-2.yaml" >/dev/null
waitfor boot-boost-running 120 sh -c "[ -n \"\$($K -n $BNS get pod boot-boost -o jsonpath='{.status.containerStatuses[0].state.running.startedAt}')\" ]"
# The boost's duration counts from the container's start: the resize back
# is sent that long after it was seen running (startedAt has whole seconds).
sleep "$BDUR"
$K -n $BNS patch pod boot-boost --subresource resize --type strategic \
	-p "{\"spec\":{\"containers\":[{\"name\":\"boot\",\"resources\":{\"limits\":{\"cpu\":\"${BLIMIT}m\"}}}]}}" >"$work/boost-resize.log" 2>&1 ||
	{ cat "$work/boost-resize.log" >&2; say "boost: the resize back to ${BLIMIT}m was refused" >&2; exit 1; }
BUID=$($K -n $BNS get pod boot-boost -o jsonpath='{.metadata.uid}')
BCID=$($K -n $BNS get pod boot-boost -o jsonpath='{.status.containerStatuses[0].containerID}' | sed 's|.*://||')
BCG=$(find /sys/fs/cgroup -path "*pod$BUID/$BCID" -type d 2>/dev/null | while read -r d; do [ -e "$d/cpu.stat" ] && grep -q nr_periods "$d/cpu.stat" && echo "$d"; done | head -1)
[ -n "$BCG" ] || { say "boost: no cgroup for boot-boost's container ($BUID/$BCID)" >&2; exit 1; }
waitfor boost-resize-back 60 sh -c "[ \"\$(cat $BCG/cpu.cfs_quota_us 2>/dev/null || cut -d' ' -f1 $BCG/cpu.max)\" = $((BLIMIT * 100)) ]"
waitfor boot-boost 240 sh -c "[ -n \"\$($K -n $BNS logs boot-boost 2>/dev/null | awk '\$1 == \"ready\"')\" ]"
TBOOST=$(ready boot-boost)
python3 - "$TLIM" "$TBOOST" "$PLIM" "$PBOOST" "$BOOST" "$BDUR" "$BLIMIT" "$(cut -d' ' -f1-3 /proc/loadavg)" >"$E2E_OUT/boost.txt" <<'EOF' || { cat "$E2E_OUT/boost.txt"; say "boost: the time the boost saves is not within 30% of the predicted" >&2; exit 1; }
import sys
tlim, tboost = int(sys.argv[1]) / 1000, int(sys.argv[2]) / 1000
plim, pboost = float(sys.argv[3]), float(sys.argv[4])
saved, psaved = tlim - tboost, plim - pboost
print(f"start-up boost on the rig (load {sys.argv[8]}): under {sys.argv[7]}m predicted {plim:.2f} s, measured {tlim:.2f} s; "
      f"boosted to {sys.argv[5]}m for {sys.argv[6]} s predicted {pboost:.2f} s, measured {tboost:.2f} s; "
      f"saved predicted {psaved:.2f} s, measured {saved:.2f} s ({100 * (saved - psaved) / psaved:+.0f}%)")
sys.exit(0 if abs(saved - psaved) <= 0.3 * psaved else 1)
EOF
cat "$E2E_OUT/boost.txt"

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
go, jvm = rt.get("boost-go") or {}, rt.get("boot-boost") or {}
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
