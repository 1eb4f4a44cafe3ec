#!/bin/sh
# make e2e-fleet: the agent, Prometheus and advise --prometheus --apply on the
# one-node rig of make e2e-k8s (hack/k8s-rig.sh), and the host put back.
#
#   flock /tmp/throttlelab-host.lock make e2e-fleet      (as root)
#
# 1. the rig (hack/k8s-rig.sh), with the kubelet's pod logs in /var/log/pods
#    (0750 root: the agent names pods from the API's pod list);
# 2. the agent installed as a cluster installs it: the image and the Helm
#    chart repository of make release (VERSION=v0.0.0-e2e, index.yaml beside
#    the chart, served on loopback); the chart with its default values
#    dry-run on the API server (kubectl apply --dry-run=server), then helm
#    install from the repository into namespace tl-agents (not the chart's
#    name; short windows: --window 10m --block 1m --chunk 20s; runtime.hostProc
#    on, for step 11; the agent's
#    defaults otherwise: sampling by need, the 5% target; its state on a
#    hostPath under the rig's directory) with a post-renderer for the rig
#    (host network, as every pod of the rig, which has no network plugin;
#    the API server on loopback for its owner lookup); a second release of
#    the same name in another namespace, its namespace made by the chart,
#    server-side dry-run: every object "created", none colliding;
# 3. a Deployment "burner" of the server image (serve, /burn) with a 200m
#    limit, driven from the host by an open-loop bursty load: one request
#    for 50 ms of CPU every 400 ms, so 125m on average and throttled;
# 4. Debian's prometheus on loopback scraping the agent every 5 s;
# 5. once the agent's window holds E2E_FLEET_DEMAND seconds of demand:
#    advise --prometheus -o json; the release's binary as a kubectl plugin
#    (kubectl throttlelab version, advise --agent, advise --apply as a dry
#    run; advise deploy/burner -n NS through the API server, no Prometheus
#    URL, which must advise the limit advise --prometheus does; top -A,
#    which must list the burner and the idle server); helm upgrade with one
#    changed value (a pod annotation: a rollout of the agent), after which
#    the burner's throttlelab_demand_window_seconds must continue from where
#    it was and the advice stay within max(50m, 15%) of the one before; then
#    advise --prometheus --apply --yes (in-place resize), the cgroup's quota
#    waited for;
# 6. the throttled share measured from the container's cpu.stat over
#    E2E_FLEET_MEASURE seconds after the resize, against the prediction
#    (hack/e2e-fleet/check: within max(0.07, 30%)); meanwhile the burner's
#    demand recorded at 10 ms (advise --cgroup --save-csv, burner-usage.csv),
#    and the idle server's and the agent's from the deployment on
#    (idler-usage.csv, agent-usage.csv);
# 7. the probe: a limit between the old one and the advice (E2E_FLEET_PROBE,
#    400m), where the prediction (the agent's /evaluate, asked when the
#    advice was taken, from demand sampled under 200m) is that it still
#    throttles: resized in place to it, measured the same way, and judged
#    alike; the check also fails if every container stayed hot over the
#    last 5 minutes (the idle server must go cold);
# 8. the agent killed with SIGKILL (its checkpoints are atomic: any instant
#    leaves the last one whole): it restarts once, its window comes back
#    within the checkpoint interval (5 min) of where it was; then a torn
#    checkpoint planted (half the file, as a non-atomic write cut short would
#    leave) and the agent killed again: it restarts once more, starts its
#    window again, counts throttlelab_agent_checkpoint_errors_total
#    {reason="corrupt"} and does not crash-loop;
# 9. check on the burner's manifest against Prometheus: with it up, exit 0
#    or 1; with it stopped, exit 3 (a source unreachable, never 1: an outage
#    is not a violation);
# 10. the pod-level step (hack/e2e-fleet/pod.sh): a pod of the server and a
#    busy sidecar under a pod-level limit, the agent's pod-level prediction
#    at the limits where it predicts about 50%, 20% and 5% throttled and at
#    its advice, each resized in place at pod level, against the pod
#    cgroup's own counts (within max(0.07, 30%)), per-container limits of the
#    same total measured beside it; E2E_FLEET_ONLY=pod runs the rig, the
#    agent and this step alone;
# 11. the start-up boost (hack/e2e-fleet/boost.sh): a JVM service (the
#    host's JDK) under 200m and under the agent's boost, applied at its
#    admission and resized back in place after the boost's duration, its
#    start-up lengths against the predicted; and the runtimes the agent
#    reads with the chart's runtime.hostProc=true (which the rig's agent is
#    installed with); E2E_FLEET_ONLY=boost runs the rig, the agent and this
#    step alone. Teardown as e2e-k8s.
set -eu
cd "$(dirname "$0")/.."
REPO=$(pwd)
DEMAND=${E2E_FLEET_DEMAND:-120}
MEASURE=${E2E_FLEET_MEASURE:-90}
PROBE=${E2E_FLEET_PROBE:-400}
NS=fleet-e2e
# The agent's namespace: not the chart's name (the chart puts everything in
# the release's namespace).
AGENT_NS=tl-agents

RIG=e2e-fleet
RIG_POD_LOGS=/var/log/pods
HELM=$(command -v helm || echo "$(go env GOPATH)/bin/helm")
[ -x "$HELM" ] || { echo "e2e-fleet: no helm (go install helm.sh/helm/v3/cmd/helm@v3.22.0)" >&2; exit 1; }
# The release: its image is what the rig imports, its chart what installs
# the agent. E2E_FLEET_RELEASE names one made already (make release
# VERSION=v0.0.0-e2e RELEASE_OUT=DIR), so that the host lock is not held
# for its two cross builds.
RELEASE=$(mktemp -d /tmp/throttlelab-e2e-release.XXXXXX)
if [ -n "${E2E_FLEET_RELEASE:-}" ]; then
	cp -r "$E2E_FLEET_RELEASE" "$RELEASE/out"
else
	echo "e2e-fleet: make release VERSION=v0.0.0-e2e (two cross builds: minutes)"
	make --no-print-directory release VERSION=v0.0.0-e2e RELEASE_OUT="$RELEASE/out" >/dev/null || { rm -rf "$RELEASE"; exit 1; }
fi
[ -e "$RELEASE/out/throttlelab-v0.0.0-e2e-oci.tar" ] && [ -e "$RELEASE/out/throttlelab-agent-0.0.0-e2e.tgz" ] && [ -e "$RELEASE/out/index.yaml" ] || { echo "e2e-fleet: no v0.0.0-e2e image, chart and chart index in the release" >&2; rm -rf "$RELEASE"; exit 1; }
RIG_IMAGE_TAR=$RELEASE/out/throttlelab-v0.0.0-e2e-oci.tar
command -v prometheus >/dev/null || { echo "e2e-fleet: no prometheus (apt-get install -y prometheus)" >&2; exit 1; }
if pgrep -x prometheus >/dev/null; then
	echo "e2e-fleet: a prometheus is running already (pid $(pgrep -x prometheus | tr '\n' ' ')): the rig starts its own" >&2
	exit 1
fi
. hack/k8s-rig.sh
cp "$RELEASE/out/throttlelab-agent-0.0.0-e2e.tgz" "$work/chart.tgz"
# The release's chart repository: its index.yaml and the packaged chart.
mkdir -p "$work/chart-repo"
cp "$RELEASE/out/index.yaml" "$RELEASE/out/throttlelab-agent-0.0.0-e2e.tgz" "$work/chart-repo/"
cp "$RELEASE/out/throttlelab_v0.0.0-e2e_linux_amd64.tar.gz" "$work/krew-amd64.tar.gz"
rm -rf "$RELEASE"

K="kubectl --kubeconfig $KC"
# The kubelet makes /var/log/pods 0750 root:root, which the agent (UID 65532,
# no capabilities) could not list; it names pods from its owner lookup's pod
# list instead, and the rendered DaemonSet mounts no log directory: the
# directory is left as the kubelet made it.
AGENT=$(freeport) PROM=$(freeport) WPORT=$(freeport) IPORT=$(freeport) REPOPORT=$(freeport)

# --- the agent ---------------------------------------------------------------
# helm keeps its cache and config under the rig's directory, not in $HOME.
export HELM_CACHE_HOME="$work/helm/cache" HELM_CONFIG_HOME="$work/helm/config" HELM_DATA_HOME="$work/helm/data"
H="$HELM --kubeconfig $KC"
# The chart with its default values, as a cluster would take it, validated
# by the rig's API server (server-side dry run: schema, defaults, Pod
# Security admission), and again with the dashboard's ConfigMap. A dry run
# makes no namespace, so the namespaced objects need one that exists: the
# release's namespace is made for the dry runs and deleted after them
# (PodMonitor, ServiceMonitor and PrometheusRule need the Prometheus
# Operator's CRDs, which the rig has not).
say "server-side dry run of the chart with its default values"
$K create namespace throttlelab-dryrun >/dev/null
: >"$E2E_OUT/dry-run.txt"
for set in port=9101 dashboard.enabled=true; do
	"$HELM" template throttlelab-agent "$work/chart.tgz" -n throttlelab-dryrun --set "$set" >"$work/agent-dry.yaml"
	echo "# helm template -n throttlelab-dryrun --set $set | kubectl apply --dry-run=server" >>"$E2E_OUT/dry-run.txt"
	$K apply -f "$work/agent-dry.yaml" --dry-run=server >>"$E2E_OUT/dry-run.txt" 2>&1 || { cat "$E2E_OUT/dry-run.txt" >&2; exit 1; }
done
$K delete namespace throttlelab-dryrun --wait=false >/dev/null
cat "$E2E_OUT/dry-run.txt"
grep -q 'daemonset.apps/throttlelab-agent created (server dry run)' "$E2E_OUT/dry-run.txt" && grep -q 'configmap/throttlelab-agent-dashboard created (server dry run)' "$E2E_OUT/dry-run.txt" || { say "the dry run did not cover the DaemonSet and the dashboard" >&2; exit 1; }
# The post-renderer: the rig's changes, made by helm install to what the
# chart renders: host network (port and probe on loopback: the rig has no
# network plugin), and the API server where it listens (no kube-proxy, so no
# Service IP).
cat >"$work/rig-postrender" <<EOF
#!/bin/sh
awk -v api="$API" '
/^ *enableServiceLinks: false\$/ { print; ind=\$0; sub(/enableServiceLinks.*/, "", ind); print ind "hostNetwork: true"; next }
/^ *httpGet:\$/ { print; ind=\$0; sub(/httpGet:.*/, "", ind); print ind "  host: 127.0.0.1"; next }
/^ *- name: GOMAXPROCS\$/ { ind=\$0; sub(/- name:.*/, "", ind); print ind "- name: KUBERNETES_SERVICE_HOST"; print ind "  value: 127.0.0.1"; print ind "- name: KUBERNETES_SERVICE_PORT"; print ind "  value: \"" api "\"" }
{ print }' | tee "$work/agent-rig.yaml"
EOF
chmod 755 "$work/rig-postrender"
# The release's chart repository, served on loopback as a web server would.
start chart-repo python3 -m http.server --bind 127.0.0.1 --directory "$work/chart-repo" "$REPOPORT"
waitfor chart-repo 30 curl -fs "http://127.0.0.1:$REPOPORT/index.yaml"
$H repo add throttlelab "http://127.0.0.1:$REPOPORT" >"$E2E_OUT/helm-repo.txt" 2>&1 || { cat "$E2E_OUT/helm-repo.txt" >&2; exit 1; }
$H search repo throttlelab/throttlelab-agent --version 0.0.0-e2e | tee -a "$E2E_OUT/helm-repo.txt" | grep -q 'throttlelab/throttlelab-agent' || { say "the release's chart repository does not list the chart" >&2; exit 1; }
say "installing the agent: helm install from the release's chart repository into $AGENT_NS"
# The image the rig imported (make release's) goes by throttlelab:$VERSION.
# Everything goes to the release's namespace (helm's --create-namespace: a
# release's record needs it before the chart's objects; the rig enforces no
# Pod Security profile). The agent's state: a hostPath under the rig's
# directory, so that the teardown removes it with the rest.
# It listens on the chart's ":PORT" (every address of the host, for the
# rig's run only): the API server's pods/proxy reaches a host-network pod
# at the node's address, which the kubelet does not let be loopback.
# runtime.hostProc: the host's PID namespace, for the runtimes (step 11).
AGENT_VALUES="--set image.repository=throttlelab --set image.tag=$VERSION --set port=$AGENT --set state.hostPath=$work/agent-state --set runtime.hostProc=true"
# shellcheck disable=SC2086
$H install throttlelab-agent throttlelab/throttlelab-agent --version 0.0.0-e2e --namespace $AGENT_NS --create-namespace \
	--post-renderer "$work/rig-postrender" $AGENT_VALUES \
	--set "args={--window=10m,--block=1m,--chunk=20s}" >"$E2E_OUT/helm-install.txt" 2>&1 || { cat "$E2E_OUT/helm-install.txt" >&2; exit 1; }
cat "$E2E_OUT/helm-install.txt"
grep -q "kubectl throttlelab advise deploy/NAME" "$E2E_OUT/helm-install.txt" || { say "helm install printed no NOTES naming the next command" >&2; exit 1; }
grep -q 'hostNetwork: true' "$work/agent-rig.yaml" && grep -q KUBERNETES_SERVICE_HOST "$work/agent-rig.yaml" && grep -q "containerPort: $AGENT" "$work/agent-rig.yaml" && grep -q 'host: 127.0.0.1' "$work/agent-rig.yaml" || { say "the chart's agent changed shape: no place for hostNetwork or the API server's address" >&2; exit 1; }
$H list --namespace $AGENT_NS | tee "$E2E_OUT/helm-list.txt"
# A second release of the same name in another namespace, its namespace made
# by the chart (namespace.create=true), every option a cluster may turn on
# but the Operator's objects: server-side dry run beside the installed one.
# kubectl says "configured" or "unchanged" for an object that exists: each
# must be "created", or the two releases collide.
say "a second release in another namespace: server-side dry run"
# A dry run makes no namespace: it is made first (its line then says
# "configured", the chart's labels added), and deleted after.
"$HELM" template throttlelab-agent "$work/chart.tgz" -n tl-agents-2 --set namespace.create=true,dashboard.enabled=true >"$work/agent-2.yaml"
$K create namespace tl-agents-2 >/dev/null
$K apply -f "$work/agent-2.yaml" --dry-run=server >"$E2E_OUT/second-release.txt" 2>&1 || true
$K delete namespace tl-agents-2 --wait=false >/dev/null
cat "$E2E_OUT/second-release.txt"
n=$(grep -v '^namespace/' "$E2E_OUT/second-release.txt" | grep -c 'created (server dry run)' || true)
[ "$n" -ge 6 ] && ! grep -v '^namespace/' "$E2E_OUT/second-release.txt" | grep -Eq 'configured|unchanged|rror' || { say "the second release collides with the first, or was refused ($n objects created)" >&2; exit 1; }

# E2E_FLEET_ONLY=pod: the pod-level step alone on the rig with the agent
# installed (for developing it; make e2e-fleet runs it last).
if [ "${E2E_FLEET_ONLY:-}" = pod ]; then
	. hack/e2e-fleet/pod.sh
	say "passed (the pod-level step only)"
	exit 0
fi
# E2E_FLEET_ONLY=boost: the start-up boost step alone, likewise.
if [ "${E2E_FLEET_ONLY:-}" = boost ]; then
	waitfor agent 180 $K -n $AGENT_NS rollout status ds/throttlelab-agent --timeout 5s
	waitfor agent 60 curl -fs "http://127.0.0.1:$AGENT/healthz"
	. hack/e2e-fleet/boost.sh
	say "passed (the start-up boost step only)"
	exit 0
fi

# --- the workload --------------------------------------------------------------
# deployment NAME CONTAINER PORT GOMAXPROCS CPU_LIMIT MEMORY_LIMIT [RESIZE]: one
# throttlelab server on the host's network (so the check reaches it on
# loopback), requesting 100m and 64Mi; RESIZE=1 lets its CPU be resized in place.
deployment() {
	cat <<YAML
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1, namespace: $NS}
spec:
  replicas: 1
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      hostNetwork: true
      enableServiceLinks: false
      tolerations: [{key: node.kubernetes.io/not-ready, operator: Exists}]
      containers:
      - name: $2
        image: throttlelab:$VERSION
        imagePullPolicy: Never
        args: [serve, --listen, "127.0.0.1:$3", --gomaxprocs, "$4"]
        resources:
          requests: {cpu: 100m, memory: 64Mi}
          limits: {cpu: $5, memory: $6}
YAML
	if [ "${7:-}" = 1 ]; then
		printf '        resizePolicy:\n        - {resourceName: cpu, restartPolicy: NotRequired}\n'
	fi
}
# The workload under test (200m, resized in place after the advice), and an
# idle server far below its limit (500m): both must get advice from the agent
# sampling by need (the check requires every container advised).
{
	printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n' "$NS"
	deployment burner server "$WPORT" 2 200m 256Mi 1
	deployment idler idle "$IPORT" 1 500m 128Mi
} >"$work/burner.yaml"
say "deploying the workload (200m limit) and an idle server (500m)"
$K apply -f "$work/burner.yaml" >/dev/null
waitfor agent 180 $K -n $AGENT_NS rollout status ds/throttlelab-agent --timeout 5s
waitfor burner 180 $K -n $NS rollout status deploy/burner --timeout 5s
waitfor idler 180 $K -n $NS rollout status deploy/idler --timeout 5s
waitfor burner 60 curl -fs "http://127.0.0.1:$WPORT/healthz"
waitfor agent 60 curl -fs "http://127.0.0.1:$AGENT/healthz"
POD=$($K -n $NS get pod -l app=burner -o jsonpath='{.items[0].metadata.name}')
UID_=$($K -n $NS get pod "$POD" -o jsonpath='{.metadata.uid}')
CID=$($K -n $NS get pod "$POD" -o jsonpath='{.status.containerStatuses[0].containerID}' | sed 's|.*://||')
CG=$(find /sys/fs/cgroup -path "*pod$UID_/$CID" -type d 2>/dev/null | while read -r d; do [ -e "$d/cpu.stat" ] && grep -q nr_periods "$d/cpu.stat" && echo "$d"; done | head -1)
[ -n "$CG" ] || { say "no cgroup with cpu.stat for pod $POD container $CID" >&2; exit 1; }
say "pod $POD, cgroup $CG"
# cgroupof NAMESPACE SELECTOR: the host cgroup (with cpu.stat) of the first
# container of the first pod the selector picks.
cgroupof() {
	set -- $($K -n "$1" get pod -l "$2" -o jsonpath='{.items[0].metadata.uid} {.items[0].status.containerStatuses[0].containerID}')
	find /sys/fs/cgroup -path "*pod$1/${2#*://}" -type d 2>/dev/null | while read -r d; do [ -e "$d/cpu.stat" ] && grep -q nr_periods "$d/cpu.stat" && echo "$d"; done | head -1
}
# The idle server's and the agent's own demand, recorded at 10 ms from their
# cgroups on the host for the rest of the run: what the agent's hot rule saw
# in them (throttlelab_agent_hot_containers, below), replayed offline
# (agent/testdata/idle).
for rec in "idler $NS app=idler" "agent $AGENT_NS app.kubernetes.io/component=agent"; do
	set -- $rec
	dir=$(cgroupof "$2" "$3")
	[ -n "$dir" ] || { say "no cgroup with cpu.stat for the $1" >&2; exit 1; }
	bin/throttlelab advise --cgroup "$dir" --duration "$((DEMAND + 2 * MEASURE + 20))s" --save-csv "$E2E_OUT/$1-usage.csv" -o json >/dev/null 2>"$E2E_OUT/$1-advise.log" &
	pids="$! $pids"
	recpids="$! ${recpids:-}"
done
quota() { # the limit in millicores, from cpu.max or cfs_quota_us/cfs_period_us
	if [ -e "$CG/cpu.max" ]; then set -- $(cat "$CG/cpu.max"); else set -- "$(cat "$CG/cpu.cfs_quota_us")" "$(cat "$CG/cpu.cfs_period_us")"; fi
	echo $(($1 * 1000 / $2))
}

# --- the load: open loop, one 50 ms burn every 400 ms, bounded -----------------
LOADSECS=$((DEMAND + MEASURE + 600))
(
	end=$(($(date +%s) + LOADSECS))
	while [ "$(date +%s)" -lt $end ]; do
		curl -s -o /dev/null --max-time 5 "http://127.0.0.1:$WPORT/burn?cpu=50ms" &
		sleep 0.4
	done
	wait
) &
loadpid=$!
pids="$loadpid $pids"
cp "$CG/cpu.stat" "$E2E_OUT/stat-before-start"

# --- Prometheus ------------------------------------------------------------------
cat >"$work/prometheus.yml" <<YAML
global: {scrape_interval: 5s, evaluation_interval: 5s}
scrape_configs:
- job_name: throttlelab-agent
  honor_labels: true
  static_configs: [{targets: ["127.0.0.1:$AGENT"]}]
YAML
say "starting prometheus"
start prometheus prometheus --config.file "$work/prometheus.yml" --storage.tsdb.path "$work/prometheus" \
	--web.listen-address "127.0.0.1:$PROM" --storage.tsdb.retention.time 1h
waitfor prometheus 60 curl -fs "http://127.0.0.1:$PROM/-/ready"

# --- advice, once the window holds enough demand ----------------------------------
say "waiting for ${DEMAND}s of demand in the agent's window"
i=0
while :; do
	if bin/throttlelab advise --prometheus "http://127.0.0.1:$PROM" -n $NS -o json >"$work/advice.json" 2>"$work/advise.log" &&
		python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
w=[m["worst"] for m in d["workloads"] if m["container"]=="server" and m.get("worst")]
ok=w and w[0]["advised"]["known"] and w[0]["current"]["known"] and w[0]["window_seconds"]>=float(sys.argv[2])
sys.exit(0 if ok else 1)' "$work/advice.json" "$DEMAND"; then
		break
	fi
	i=$((i + 1))
	if [ $i -gt $(((DEMAND + 300) / 10)) ]; then
		say "no advice with ${DEMAND}s of demand after $((DEMAND + 300))s; last answer:" >&2
		cat "$work/advice.json" "$work/advise.log" >&2
		exit 1
	fi
	sleep 10
done
cp "$CG/cpu.stat" "$E2E_OUT/stat-before-end"
cp "$work/advice.json" "$E2E_OUT/advice.json"
curl -fsS "http://127.0.0.1:$AGENT/evaluate?namespace=$NS&pod=$POD&container=server&limit=${PROBE}m" >"$E2E_OUT/probe-evaluate.json"
bin/throttlelab advise --prometheus "http://127.0.0.1:$PROM" -n $NS | tee "$E2E_OUT/advice.txt"

# The kubectl plugin: the release's krew archive unpacked and linked as krew
# links it (kubectl-throttlelab), run through the host's kubectl: the same
# advice, and the resize as a server-side dry run.
mkdir -p "$work/plugins"
tar xzf "$work/krew-amd64.tar.gz" -C "$work/plugins"
ln -s throttlelab "$work/plugins/kubectl-throttlelab"
say "kubectl throttlelab (the release's binary as a kubectl plugin)"
PATH="$work/plugins:$PATH" kubectl plugin list 2>/dev/null | grep -q "$work/plugins/kubectl-throttlelab" || { say "kubectl plugin list does not show kubectl-throttlelab" >&2; exit 1; }
{
	PATH="$work/plugins:$PATH" kubectl throttlelab version &&
		PATH="$work/plugins:$PATH" kubectl throttlelab advise --agent "http://127.0.0.1:$AGENT" &&
		PATH="$work/plugins:$PATH" kubectl throttlelab advise --prometheus "http://127.0.0.1:$PROM" -n $NS --apply --kubeconfig "$KC"
} >"$E2E_OUT/plugin.txt" 2>&1 || { cat "$E2E_OUT/plugin.txt" >&2; say "kubectl throttlelab failed" >&2; exit 1; }
cat "$E2E_OUT/plugin.txt"
grep -q '^throttlelab v0.0.0-e2e ' "$E2E_OUT/plugin.txt" || { say "kubectl throttlelab version is not the release's" >&2; exit 1; }

# Workloads by name, as kubectl names them, through the API server alone
# (the agents' pods/proxy; the kubeconfig from KUBECONFIG, as kubectl reads
# it): the advice must be advise --prometheus's.
advised() { # JSON file: the burner's advised limit in millicores
	python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
w=[m["worst"] for m in d["workloads"] if m["container"]=="server"]
print(w[0].get("advised_limit_millicores", w[0].get("advised_limit_milli")))' "$1"
}
say "kubectl throttlelab advise deploy/burner -n $NS (through the API server) and top -A"
{
	KUBECONFIG=$KC PATH="$work/plugins:$PATH" kubectl throttlelab advise deploy/burner -n $NS -o json >"$E2E_OUT/advice-api.json" &&
		KUBECONFIG=$KC PATH="$work/plugins:$PATH" kubectl throttlelab advise deploy/burner -n $NS &&
		KUBECONFIG=$KC PATH="$work/plugins:$PATH" kubectl throttlelab top -A
} >"$E2E_OUT/plugin-api.txt" 2>&1 || { cat "$E2E_OUT/plugin-api.txt" >&2; say "kubectl throttlelab through the API server failed" >&2; exit 1; }
cat "$E2E_OUT/plugin-api.txt"
ADV_API=$(advised "$E2E_OUT/advice-api.json") ADV_PROM=$(advised "$work/advice.json")
say "advised through the API server: ${ADV_API}m; from Prometheus: ${ADV_PROM}m"
[ "$ADV_API" = "$ADV_PROM" ] || { say "advise deploy/burner through the API server (${ADV_API}m) is not advise --prometheus (${ADV_PROM}m)" >&2; exit 1; }
grep -q "$POD" "$E2E_OUT/plugin-api.txt" && grep -q "idler-" "$E2E_OUT/plugin-api.txt" || { say "top -A does not list the burner and the idle server" >&2; exit 1; }

# helm upgrade with one changed value: the DaemonSet's pod rolls (its last
# checkpoint written at SIGTERM, read by the new pod from the hostPath).
window() { # the burner's throttlelab_demand_window_seconds, from the agent
	curl -fs "http://127.0.0.1:$AGENT/metrics" | awk -v pod="$POD" '/^throttlelab_demand_window_seconds\{/ && index($0, "pod=\"" pod "\"") && index($0, "container=\"server\"") { print int($NF); exit }'
}
# waitwindow: until window() reads the burner's server container's window
# (any series of its pod is not enough: a run read an empty window right
# after the pod's first series came back from a restart).
waitwindow() {
	i=0
	until [ -n "$(window)" ]; do
		i=$((i + 1))
		[ $i -le 450 ] || { say "no throttlelab_demand_window_seconds of the burner's server container after 90s" >&2; exit 1; }
		sleep 0.2
	done
}
W1=$(window) R1=$($K -n $AGENT_NS get pod -l app.kubernetes.io/component=agent -o jsonpath='{.items[0].metadata.name}')
say "helm upgrade (podAnnotations.e2e=upgraded); the burner's window is ${W1}s"
# shellcheck disable=SC2086
$H upgrade throttlelab-agent throttlelab/throttlelab-agent --version 0.0.0-e2e --namespace $AGENT_NS --post-renderer "$work/rig-postrender" \
	$AGENT_VALUES --set podAnnotations.e2e=upgraded \
	--set "args={--window=10m,--block=1m,--chunk=20s}" >"$E2E_OUT/helm-upgrade.txt" 2>&1 || { cat "$E2E_OUT/helm-upgrade.txt" >&2; exit 1; }
waitfor agent-rollout 180 sh -c "[ \"\$($K -n $AGENT_NS get pod -l app.kubernetes.io/component=agent -o jsonpath='{.items[0].metadata.name}')\" != $R1 ]"
waitfor agent 180 $K -n $AGENT_NS rollout status ds/throttlelab-agent --timeout 5s
waitfor agent 60 curl -fs "http://127.0.0.1:$AGENT/healthz"
waitwindow
W2=$(window)
KUBECONFIG=$KC bin/throttlelab advise deploy/burner -n $NS -o json >"$E2E_OUT/advice-upgraded.json" 2>"$E2E_OUT/advice-upgraded.log" || { cat "$E2E_OUT/advice-upgraded.log" >&2; exit 1; }
ADV_UP=$(advised "$E2E_OUT/advice-upgraded.json")
say "after the upgrade: the burner's window ${W2}s (was ${W1}s), advised ${ADV_UP}m (was ${ADV_API}m)"
echo "upgrade: window ${W1}s -> ${W2}s, advised ${ADV_API}m -> ${ADV_UP}m, agent pod $R1 -> $($K -n $AGENT_NS get pod -l app.kubernetes.io/component=agent -o jsonpath='{.items[0].metadata.name}')" >"$E2E_OUT/upgrade.txt"
[ "$W2" -ge "$W1" ] || { say "helm upgrade reset the window (${W1}s -> ${W2}s)" >&2; exit 1; }
python3 -c 'import sys; a,b=int(sys.argv[1]),int(sys.argv[2]); sys.exit(0 if abs(a-b) <= max(50, 0.15*a) else 1)' "$ADV_API" "$ADV_UP" ||
	{ say "the advice moved across the upgrade: ${ADV_API}m -> ${ADV_UP}m" >&2; exit 1; }
# Prometheus marked the old pod's series stale when it stopped: the new
# agent's advice, once scraped.
waitfor prometheus-advice 120 sh -c "bin/throttlelab advise --prometheus http://127.0.0.1:$PROM -n $NS -o json 2>/dev/null | grep -q advised_limit"

say "applying the advice in place"
bin/throttlelab advise --prometheus "http://127.0.0.1:$PROM" -n $NS --apply --yes --kubeconfig "$KC" 2>&1 | tee "$E2E_OUT/apply.txt"
ADV=$(python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
print([m["worst"] for m in d["workloads"] if m["container"]=="server"][0]["advised_limit_millicores"])' "$work/advice.json")
waitfor resize 60 sh -c "[ \$(( \$(cat $CG/cpu.cfs_quota_us 2>/dev/null || cut -d' ' -f1 $CG/cpu.max) * 1000 / \$(cat $CG/cpu.cfs_period_us 2>/dev/null || cut -d' ' -f2 $CG/cpu.max) )) -eq $ADV ]"
say "the cgroup's limit is now $(quota)m (advised ${ADV}m); restarts: $($K -n $NS get pod "$POD" -o jsonpath='{.status.containerStatuses[0].restartCount}')"
sleep 10
cp "$CG/cpu.stat" "$E2E_OUT/stat-after-start"
say "measuring for ${MEASURE}s"
# The burner's demand, unthrottled now, recorded at 10 ms from its cgroup on
# the host (agent/testdata's rig demand comes from here).
bin/throttlelab advise --cgroup "$CG" --duration "$((MEASURE - 5))s" --save-csv "$E2E_OUT/burner-usage.csv" -o json >"$E2E_OUT/burner-advise.json" 2>"$E2E_OUT/burner-advise.log" &
recpid=$!
pids="$recpid $pids"
sleep "$MEASURE"
cp "$CG/cpu.stat" "$E2E_OUT/stat-after-end"
wait "$recpid" || say "recording the burner's demand failed (not judged): $(tail -1 "$E2E_OUT/burner-advise.log")"

say "the probe: resizing in place to ${PROBE}m"
$K -n $NS patch pod "$POD" --subresource resize --type strategic \
	-p "{\"spec\":{\"containers\":[{\"name\":\"server\",\"resources\":{\"limits\":{\"cpu\":\"${PROBE}m\"}}}]}}" >/dev/null
waitfor probe-resize 60 sh -c "[ \$(( \$(cat $CG/cpu.cfs_quota_us 2>/dev/null || cut -d' ' -f1 $CG/cpu.max) * 1000 / \$(cat $CG/cpu.cfs_period_us 2>/dev/null || cut -d' ' -f2 $CG/cpu.max) )) -eq $PROBE ]"
sleep 10
cp "$CG/cpu.stat" "$E2E_OUT/stat-probe-start"
cat /proc/loadavg >"$E2E_OUT/loadavg-probe-start"
say "measuring for ${MEASURE}s at ${PROBE}m"
sleep "$MEASURE"
cp "$CG/cpu.stat" "$E2E_OUT/stat-probe-end"
cat /proc/loadavg >"$E2E_OUT/loadavg-probe-end"

kill "$loadpid" 2>/dev/null || true
for p in $recpids; do wait "$p" || say "recording an idle demand failed (not judged)"; done
curl -fs "http://127.0.0.1:$PROM/api/v1/query?query=throttlelab_predicted_throttled_ratio" >"$E2E_OUT/prom-predicted.json" || true
go run ./hack/e2e-fleet/check -advice "$E2E_OUT/advice.json" -namespace $NS -container server \
	-before-start "$E2E_OUT/stat-before-start" -before-end "$E2E_OUT/stat-before-end" \
	-after-start "$E2E_OUT/stat-after-start" -after-end "$E2E_OUT/stat-after-end" -applied "$ADV" \
	-probe-evaluate "$E2E_OUT/probe-evaluate.json" -probe-start "$E2E_OUT/stat-probe-start" -probe-end "$E2E_OUT/stat-probe-end" -probe-limit "$(quota)" \
	-prometheus "http://127.0.0.1:$PROM" >"$E2E_OUT/check.txt" 2>&1 || checkrc=$?
cat "$E2E_OUT/check.txt"
# After the check, which reads the agent's last 5 minutes from Prometheus;
# judged whatever the check said, which is judged last.
# The agent killed with SIGKILL, twice: at an arbitrary instant (the last
# checkpoint is whole, whatever the instant: it is written beside and
# renamed), then with a torn checkpoint planted (half the file).
agentpid() { pgrep -f "throttlelab agent --listen :$AGENT " | head -1; }
restarts() { $K -n $AGENT_NS get pod -l app.kubernetes.io/component=agent -o jsonpath='{.items[0].status.containerStatuses[0].restartCount}'; }
ckpt="$work/agent-state/summaries.gob"
[ -s "$ckpt" ] || { say "no checkpoint at $ckpt" >&2; exit 1; }
W3=$(window) N0=$(restarts)
say "SIGKILL to the agent (pid $(agentpid)); the burner's window is ${W3}s, the checkpoint $(( $(date +%s) - $(stat -c %Y "$ckpt") ))s old"
kill -9 "$(agentpid)"
waitfor agent-restart 120 sh -c "[ \"\$($K -n $AGENT_NS get pod -l app.kubernetes.io/component=agent -o jsonpath='{.items[0].status.containerStatuses[0].restartCount}')\" -gt $N0 ]"
waitfor agent 120 curl -fs "http://127.0.0.1:$AGENT/healthz"
waitwindow
W4=$(window)
echo "sigkill: window ${W3}s -> ${W4}s, restarts $N0 -> $(restarts)" >"$E2E_OUT/sigkill.txt"
say "after SIGKILL: the burner's window ${W4}s (was ${W3}s)"
[ "$W4" -ge $((W3 - 330)) ] || { say "SIGKILL lost more than the checkpoint interval: ${W3}s -> ${W4}s" >&2; exit 1; }
N1=$(restarts)
size=$(stat -c %s "$ckpt")
head -c $((size / 2)) "$ckpt" >"$ckpt.torn" && mv "$ckpt.torn" "$ckpt"
say "a torn checkpoint ($((size / 2)) of $size bytes) and SIGKILL again"
kill -9 "$(agentpid)"
waitfor agent-restart 120 sh -c "[ \"\$($K -n $AGENT_NS get pod -l app.kubernetes.io/component=agent -o jsonpath='{.items[0].status.containerStatuses[0].restartCount}')\" -gt $N1 ]"
waitfor agent 120 curl -fs "http://127.0.0.1:$AGENT/healthz"
sleep 60
N2=$(restarts) phase=$($K -n $AGENT_NS get pod -l app.kubernetes.io/component=agent -o jsonpath='{.items[0].status.containerStatuses[0].state}')
curl -fs "http://127.0.0.1:$AGENT/metrics" | grep '^throttlelab_agent_checkpoint_errors_total' | tee -a "$E2E_OUT/sigkill.txt"
$K -n $AGENT_NS logs -l app.kubernetes.io/component=agent --tail 50 >"$E2E_OUT/agent-after-torn.log" 2>&1 || true
echo "torn checkpoint: restarts $N1 -> $N2 after 60 s, state $phase" >>"$E2E_OUT/sigkill.txt"
cat "$E2E_OUT/sigkill.txt"
[ "$N2" -eq $((N1 + 1)) ] || { say "the agent crash-loops on a torn checkpoint (restarts $N1 -> $N2)" >&2; exit 1; }
curl -fs "http://127.0.0.1:$AGENT/metrics" | grep -q '^throttlelab_agent_checkpoint_errors_total{reason="corrupt"} 1' || { say "the torn checkpoint was not counted" >&2; exit 1; }
grep -q 'the window starts again' "$E2E_OUT/agent-after-torn.log" || { say "the agent's log does not say why the window starts again" >&2; exit 1; }

# check reads Prometheus: with it up, the burner's manifest is judged (0
# within its budget, 1 over it); with it stopped, check exits 3 (a source
# that cannot be reached), never 1: a CI job tells an outage from a violation.
crc=0
bin/throttlelab check "$work/burner.yaml" --prometheus "http://127.0.0.1:$PROM" >"$E2E_OUT/check-prometheus.txt" 2>&1 || crc=$?
say "check with Prometheus up: exit $crc"
case $crc in 0 | 1) ;; *) cat "$E2E_OUT/check-prometheus.txt" >&2; say "check with Prometheus up exited $crc, not 0 or 1" >&2; exit 1 ;; esac
pkill -f "prometheus --config.file $work/prometheus.yml" || true
waitfor prometheus-stopped 30 sh -c "! curl -fs http://127.0.0.1:$PROM/-/ready"
crc=0
bin/throttlelab check "$work/burner.yaml" --prometheus "http://127.0.0.1:$PROM" >"$E2E_OUT/check-prometheus-down.txt" 2>&1 || crc=$?
cat "$E2E_OUT/check-prometheus-down.txt"
say "check with Prometheus stopped: exit $crc"
[ "$crc" = 3 ] || { say "check with Prometheus stopped exited $crc, not 3" >&2; exit 1; }

# 10. the pod-level step (hack/e2e-fleet/pod.sh).
. hack/e2e-fleet/pod.sh
# 11. the start-up boost step (hack/e2e-fleet/boost.sh).
. hack/e2e-fleet/boost.sh

[ "${checkrc:-0}" = 0 ] || { say "the check failed (above)" >&2; exit 1; }
say "passed"
