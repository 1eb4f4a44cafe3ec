# throttlelab advise: in-place resizes (kubectl 1.32+, Kubernetes 1.35+: the resize subresource)

# batch/job/report-29410560 container worker: limit 1 -> 1200m (throttled 6.4% -> 0.9%, p99 added delay 38.1ms -> 10.2ms)
kubectl -n batch patch pod report-29410560-q8z4m --subresource resize --patch '{"spec":{"containers":[{"name":"worker","resources":{"limits":{"cpu":"1200m"}}}]}}'

# default/pod/debug container shell: no advice
# pod debug: skipped: no advice: no samples yet (the agent has not summarised this container)

# monitoring/daemonset/node-exporter container node-exporter: limit - -> 150m (throttled - -> 0.7%, p99 added delay - -> 1.2ms)
# pod node-exporter-x7k2p: skipped: no CPU limit now: a resize does not add one; set 150m in the workload's template if you want one

# shop/deployment/checkout container app: limit 500m -> 900m (throttled 23.3% -> 0.9%, p99 added delay 51.9ms -> 3.4ms)
# for pods made later (rolls the pods out): kubectl -n shop patch deployment checkout --patch '{"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{"limits":{"cpu":"900m"}}}]}}}}'
kubectl -n shop patch pod checkout-7d9f8c6b5d-fghij --subresource resize --patch '{"spec":{"containers":[{"name":"app","resources":{"limits":{"cpu":"900m"}}}]}}'
kubectl -n shop patch pod checkout-7d9f8c6b5d-abcde --subresource resize --patch '{"spec":{"containers":[{"name":"app","resources":{"limits":{"cpu":"900m"}}}]}}'
kubectl -n shop patch pod checkout-7d9f8c6b5d-klmno --subresource resize --patch '{"spec":{"containers":[{"name":"app","resources":{"limits":{"cpu":"900m"}}}]}}'

# shop/deployment/checkout container envoy: limit 200m -> 100m (throttled 0.0% -> 0.4%, p99 added delay 0.0ms -> 0.9ms)
# for pods made later (rolls the pods out): kubectl -n shop patch deployment checkout --patch '{"spec":{"template":{"spec":{"containers":[{"name":"envoy","resources":{"limits":{"cpu":"100m"}}}]}}}}'
kubectl -n shop patch pod checkout-7d9f8c6b5d-abcde --subresource resize --patch '{"spec":{"containers":[{"name":"envoy","resources":{"limits":{"cpu":"100m"}}}]}}'
kubectl -n shop patch pod checkout-7d9f8c6b5d-fghij --subresource resize --patch '{"spec":{"containers":[{"name":"envoy","resources":{"limits":{"cpu":"100m"}}}]}}'
kubectl -n shop patch pod checkout-7d9f8c6b5d-klmno --subresource resize --patch '{"spec":{"containers":[{"name":"envoy","resources":{"limits":{"cpu":"100m"}}}]}}'

# shop/statefulset/db container postgres: limit 2 -> 1500m (throttled 0.0% -> 0.9%, p99 added delay 0.0ms -> 4.2ms)
# for pods made later (rolls the pods out): kubectl -n shop patch statefulset db --patch '{"spec":{"template":{"spec":{"containers":[{"name":"postgres","resources":{"limits":{"cpu":"1500m"},"requests":{"cpu":"1500m"}}}]}}}}'
# pod db-0: request 2 = limit: the request moves with it (a resize keeps the QoS class)
kubectl -n shop patch pod db-0 --subresource resize --patch '{"spec":{"containers":[{"name":"postgres","resources":{"limits":{"cpu":"1500m"},"requests":{"cpu":"1500m"}}}]}}'
# pod db-1: request 2 = limit: the request moves with it (a resize keeps the QoS class)
kubectl -n shop patch pod db-1 --subresource resize --patch '{"spec":{"containers":[{"name":"postgres","resources":{"limits":{"cpu":"1500m"},"requests":{"cpu":"1500m"}}}]}}'
