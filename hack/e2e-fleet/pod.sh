# Sourced by hack/e2e-fleet.sh after the agent is installed (not run by
# itself): the pod-level step. Uses the rig's $K, $VERSION, $AGENT, $work,
# $E2E_OUT, say, start, waitfor, freeport.
#
# A pod "podlim" of the project's server under an open-loop bursty load (one
# 40 ms burn every 250 ms) and a busy sidecar (throttlelab burst: 30 ms busy
# every 200 ms), no container limits, one pod-level limit (spec.resources,
# PodLevelResources, on by default from 1.34) of 2 CPUs: the whole host, so
# the agent's pod series sees the demand unthrottled. Beside it a twin
# "podsplit", the same two containers with per-container limits and no
# pod-level one, under the same load.
#
# Once the agent's pod entry (kind "pod", container "") holds
# E2E_FLEET_POD_DEMAND seconds: the agent's /evaluate for the pod on a
# ladder of limits, the limits where it predicts about 50%, 20% and 5%
# throttled, and its pod advice. Then the pod-level limit is resized in
# place (pods/resize, spec.resources; InPlacePodLevelResourcesVerticalScaling,
# beta and on by default from 1.36) to each of them and to the advice, and
# the pod cgroup's own nr_throttled/nr_periods are counted over
# E2E_FLEET_POD_MEASURE seconds at each; at the 20% limit the twin's
# containers are resized in place to per-container limits of the same total
# (split as their mean demand is) and measured beside it. hack/e2e-fleet/check
# -pod judges the pod-level rows against the predictions within max(0.07,
# 30%) and prints the twin's rows for comparison.
POD_DEMAND=${E2E_FLEET_POD_DEMAND:-120}
POD_MEASURE=${E2E_FLEET_POD_MEASURE:-60}
PNS=pod-e2e
PPORT=$(freeport) SPORT=$(freeport)

# podyaml NAME PORT POD_LIMIT CONTAINER_LIMIT: the server and the busy
# sidecar; POD_LIMIT (a pod-level limit) or CONTAINER_LIMIT (each
# container's), the other empty.
podyaml() {
	cat <<YAML
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1, namespace: $PNS}
spec:
  replicas: 1
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      hostNetwork: true
      enableServiceLinks: false
      tolerations: [{key: node.kubernetes.io/not-ready, operator: Exists}]
YAML
	if [ -n "$3" ]; then
		printf '      resources:\n        requests: {cpu: 100m, memory: 128Mi}\n        limits: {cpu: "%s", memory: 512Mi}\n' "$3"
	fi
	for c in "server:[serve, --listen, \"127.0.0.1:$2\", --gomaxprocs, \"2\"]" "busy:[burst, --workers, \"1\", --busy, 30ms, --sleep, 170ms, --gomaxprocs, \"1\"]"; do
		printf '      - name: %s\n        image: throttlelab:%s\n        imagePullPolicy: Never\n        args: %s\n' "${c%%:*}" "$VERSION" "${c#*:}"
		if [ -n "$4" ]; then
			printf '        resources:\n          requests: {cpu: 50m, memory: 64Mi}\n          limits: {cpu: "%s", memory: 256Mi}\n' "$4"
			printf '        resizePolicy:\n        - {resourceName: cpu, restartPolicy: NotRequired}\n'
		fi
	done | sed '1i\      containers:'
}
{
	printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n' "$PNS"
	podyaml podlim "$PPORT" 2 ""
	podyaml podsplit "$SPORT" "" 1
} >"$work/pod.yaml"
cp "$work/pod.yaml" "$E2E_OUT/pod.yaml"
say "pod-level: deploying podlim (server + busy sidecar, pod-level limit 2) and podsplit (the same, 1 CPU per container)"
$K apply -f "$work/pod.yaml" >/dev/null
waitfor podlim 180 $K -n $PNS rollout status deploy/podlim --timeout 5s
waitfor podsplit 180 $K -n $PNS rollout status deploy/podsplit --timeout 5s
waitfor podlim 60 curl -fs "http://127.0.0.1:$PPORT/healthz"
waitfor podsplit 60 curl -fs "http://127.0.0.1:$SPORT/healthz"
PPOD=$($K -n $PNS get pod -l app=podlim -o jsonpath='{.items[0].metadata.name}')
SPOD=$($K -n $PNS get pod -l app=podsplit -o jsonpath='{.items[0].metadata.name}')
# The API server kept the pod-level resources (a server without the
# feature drops the field).
[ "$($K -n $PNS get pod "$PPOD" -o jsonpath='{.spec.resources.limits.cpu}')" = 2 ] || { say "the API server dropped the pod's spec.resources (PodLevelResources off?)" >&2; exit 1; }
# podcg UID: the pod's own cgroup; ctrcg UID CONTAINER_ID: a container's
# (the one with the CPU controller's counts: on a hybrid host the unified
# tree's cpu.stat has none).
podcg() { find /sys/fs/cgroup -type d -name "pod$1" 2>/dev/null | while read -r d; do [ -e "$d/cpu.stat" ] && grep -q nr_periods "$d/cpu.stat" && echo "$d"; done | head -1; }
ctrcg() { find /sys/fs/cgroup -path "*pod$1/$2" -type d 2>/dev/null | while read -r d; do [ -e "$d/cpu.stat" ] && grep -q nr_periods "$d/cpu.stat" && echo "$d"; done | head -1; }
cgmilli() { # a cgroup's limit in millicores
	if [ -e "$1/cpu.max" ]; then set -- $(cat "$1/cpu.max"); else set -- "$(cat "$1/cpu.cfs_quota_us")" "$(cat "$1/cpu.cfs_period_us")"; fi
	[ "$1" = max ] || [ "$1" = -1 ] && { echo 0; return; }
	echo $(($1 * 1000 / $2))
}
PCG=$(podcg "$($K -n $PNS get pod "$PPOD" -o jsonpath='{.metadata.uid}')")
SUID=$($K -n $PNS get pod "$SPOD" -o jsonpath='{.metadata.uid}')
scg() { # the twin's container NAME's cgroup
	ctrcg "$SUID" "$($K -n $PNS get pod "$SPOD" -o jsonpath="{.status.containerStatuses[?(@.name==\"$1\")].containerID}" | sed 's|.*://||')"
}
SCG_SERVER=$(scg server) SCG_BUSY=$(scg busy)
[ -n "$PCG" ] && [ -n "$SCG_SERVER" ] && [ -n "$SCG_BUSY" ] || { say "no cgroup for the pod-level pod ($PCG) or the twin's containers ($SCG_SERVER, $SCG_BUSY)" >&2; exit 1; }
say "podlim $PPOD: pod cgroup $PCG at $(cgmilli "$PCG")m; podsplit $SPOD"
[ "$(cgmilli "$PCG")" = 2000 ] || { say "the pod's cgroup has $(cgmilli "$PCG")m, not the pod-level 2000m" >&2; exit 1; }

# The load on both servers alike: open loop, one 40 ms burn every 250 ms.
PODLOADSECS=$((POD_DEMAND + 5 * POD_MEASURE + 600))
for port in $PPORT $SPORT; do
	(
		end=$(($(date +%s) + PODLOADSECS))
		while [ "$(date +%s)" -lt $end ]; do
			curl -s -o /dev/null --max-time 5 "http://127.0.0.1:$port/burn?cpu=40ms" &
			sleep 0.25
		done
		wait
	) &
	pids="$! $pids"
	podloadpids="$! ${podloadpids:-}"
done

# The agent's pod entry, once its window holds POD_DEMAND seconds.
say "pod-level: waiting for ${POD_DEMAND}s of the pod's demand in the agent's window"
podentry() { # the agent's /advice entry of the pod-level pod, as JSON, once it holds POD_DEMAND s
	curl -fs "http://127.0.0.1:$AGENT/advice" | python3 -c '
import json,sys
d=json.load(sys.stdin)
e=[c for c in d["containers"] if c.get("kind")=="pod" and c["pod"]==sys.argv[1] and c["container"]==""]
if not e or e[0]["window_seconds"]<float(sys.argv[2]) or not e[0].get("advice"): sys.exit(1)
json.dump(e[0],sys.stdout)' "$PPOD" "$POD_DEMAND"
}
i=0
until podentry >"$work/pod-entry.json"; do
	i=$((i + 1))
	[ $i -le $(((POD_DEMAND + 300) / 5)) ] || { say "no pod entry for $PPOD with ${POD_DEMAND}s in the agent's /advice after $((POD_DEMAND + 300))s" >&2; curl -fs "http://127.0.0.1:$AGENT/advice" | head -c 3000 >&2; exit 1; }
	sleep 5
done
cp "$work/pod-entry.json" "$E2E_OUT/pod-entry.json"
# Per container, the same window's demand: the twin's split.
curl -fs "http://127.0.0.1:$AGENT/advice" >"$E2E_OUT/pod-advice-all.json"
# The ladder: the agent's prediction for the pod at 100m to 2000m.
: >"$work/pod-ladder.txt"
for m in $(seq 100 10 2000); do
	r=$(curl -fs "http://127.0.0.1:$AGENT/evaluate?namespace=$PNS&pod=$PPOD&container=&limit=${m}m&burst=0" | tee "$work/eval-$m.json" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["throttled_periods_ratio"])') || { say "the agent's /evaluate for the pod at ${m}m failed" >&2; exit 1; }
	echo "$m $r" >>"$work/pod-ladder.txt"
done
cp "$work/pod-ladder.txt" "$E2E_OUT/pod-ladder.txt"
# at TARGET: the smallest ladder limit predicted at or under TARGET.
at() { awk -v t="$1" '$2 <= t { print $1; exit }' "$work/pod-ladder.txt"; }
L50=$(at 0.5) L20=$(at 0.2) L05=$(at 0.05)
LADV=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["advice"]["recommendation"]["limit_millicores"])' "$work/pod-entry.json")
say "pod-level: the agent predicts 50% at ${L50}m, 20% at ${L20}m, 5% at ${L05}m; it advises ${LADV}m"
[ -n "$L50" ] && [ -n "$L20" ] && [ -n "$L05" ] && [ "$L50" -lt "$L20" ] && [ "$L20" -lt "$L05" ] || { say "the ladder has no three distinct limits for 50%, 20%, 5% (see $E2E_OUT/pod-ladder.txt)" >&2; exit 1; }
curl -fs "http://127.0.0.1:$AGENT/evaluate?namespace=$PNS&pod=$PPOD&container=&limit=${LADV}m&burst=0" >"$work/eval-adv.json"
# The twin's split of L20: the containers' mean demand, from the same window.
SPLIT=$(python3 -c '
import json,sys
d=json.load(open(sys.argv[1])); pod=sys.argv[2]; total=int(sys.argv[3])
m={c["container"]:c["advice"]["sampled"]["mean_cores"] for c in d["containers"] if c["pod"]==pod and c["container"] in ("server","busy") and c.get("advice")}
s=m["server"]/(m["server"]+m["busy"])
a=int(round(total*s/10.0))*10
print(a, total-a)' "$E2E_OUT/pod-advice-all.json" "$PPOD" "$L20") || { say "no per-container demand of $PPOD in the agent's /advice" >&2; exit 1; }
set -- $SPLIT
SPLIT_SERVER=$1 SPLIT_BUSY=$2

# podphase NAME LIMIT EVALFILE: the pod-level limit resized in place to
# LIMIT, the pod cgroup counted over POD_MEASURE seconds.
: >"$E2E_OUT/pod-phases.txt"
podphase() {
	$K -n $PNS patch pod "$PPOD" --subresource resize --type merge -p "{\"spec\":{\"resources\":{\"limits\":{\"cpu\":\"${2}m\"}}}}" >"$work/resize-$1.log" 2>&1 ||
		{ cat "$work/resize-$1.log" >&2; say "the pod-level resize to ${2}m was refused" >&2; exit 1; }
	waitfor "pod-resize-$1" 60 sh -c "[ \"\$(cat $PCG/cpu.max 2>/dev/null | cut -d' ' -f1 || cat $PCG/cpu.cfs_quota_us)\" = $(($2 * 100)) ] || [ \"\$(cat $PCG/cpu.cfs_quota_us 2>/dev/null)\" = $(($2 * 100)) ]"
	say "pod-level $1: the pod's cgroup at $(cgmilli "$PCG")m; containers restarted: $($K -n $PNS get pod "$PPOD" -o jsonpath='{.status.containerStatuses[*].restartCount}')"
	sleep 10
	cp "$PCG/cpu.stat" "$E2E_OUT/pod-$1.start"
	if [ "$1" = p20 ]; then
		cp "$SCG_SERVER/cpu.stat" "$E2E_OUT/split-server.start"
		cp "$SCG_BUSY/cpu.stat" "$E2E_OUT/split-busy.start"
	fi
	sleep "$POD_MEASURE"
	cp "$PCG/cpu.stat" "$E2E_OUT/pod-$1.end"
	if [ "$1" = p20 ]; then
		cp "$SCG_SERVER/cpu.stat" "$E2E_OUT/split-server.end"
		cp "$SCG_BUSY/cpu.stat" "$E2E_OUT/split-busy.end"
	fi
	cp "$3" "$E2E_OUT/pod-$1.eval.json"
	echo "pod-level $1 $(cgmilli "$PCG") $E2E_OUT/pod-$1.eval.json $E2E_OUT/pod-$1.start $E2E_OUT/pod-$1.end" >>"$E2E_OUT/pod-phases.txt"
}
say "per-container twin: server ${SPLIT_SERVER}m + busy ${SPLIT_BUSY}m (the ${L20}m of the 20% pod-level limit split as their demand is)"
$K -n $PNS patch pod "$SPOD" --subresource resize --type strategic -p "{\"spec\":{\"containers\":[{\"name\":\"server\",\"resources\":{\"limits\":{\"cpu\":\"${SPLIT_SERVER}m\"}}},{\"name\":\"busy\",\"resources\":{\"limits\":{\"cpu\":\"${SPLIT_BUSY}m\"}}}]}}" >/dev/null
waitfor twin-resize 60 sh -c "[ \$(cut -d' ' -f1 $SCG_SERVER/cpu.max 2>/dev/null || cat $SCG_SERVER/cpu.cfs_quota_us) = $((SPLIT_SERVER * 100)) ] && [ \$(cut -d' ' -f1 $SCG_BUSY/cpu.max 2>/dev/null || cat $SCG_BUSY/cpu.cfs_quota_us) = $((SPLIT_BUSY * 100)) ]"
podphase p50 "$L50" "$work/eval-$L50.json"
podphase p20 "$L20" "$work/eval-$L20.json"
podphase p05 "$L05" "$work/eval-$L05.json"
say "pod-level: applying the agent's advice (${LADV}m) at pod level in place"
podphase advised "$LADV" "$work/eval-adv.json"
echo "per-container server $SPLIT_SERVER - $E2E_OUT/split-server.start $E2E_OUT/split-server.end" >>"$E2E_OUT/pod-phases.txt"
echo "per-container busy $SPLIT_BUSY - $E2E_OUT/split-busy.start $E2E_OUT/split-busy.end" >>"$E2E_OUT/pod-phases.txt"
for p in $podloadpids; do kill "$p" 2>/dev/null || true; done
podrc=0
go run ./hack/e2e-fleet/check -pod "$E2E_OUT/pod-phases.txt" >"$E2E_OUT/pod-check.txt" 2>&1 || podrc=$?
cat "$E2E_OUT/pod-check.txt"
$K delete namespace $PNS --wait=false >/dev/null
[ "$podrc" = 0 ] || { say "the pod-level check failed (above)" >&2; exit 1; }
