// Package agentmanifest renders the objects that run throttlelab's agent
// on every node of a cluster: its Namespace, ServiceAccount, the RBAC to
// list pods (with the owner lookup), the DaemonSet, a headless Service for
// Prometheus and, when asked, a Prometheus Operator PodMonitor. It is what
// `throttlelab k8s render agent` prints and what the Helm chart under
// deploy/helm is held to. It shares the restricted container, the image
// check and the YAML writer with the experiment backend through package
// k8s/manifest, and imports nothing of that backend.
//
//	m, err := agentmanifest.Render(agentmanifest.Options{Image: "registry.example/throttlelab:v1", Owners: true})
//	if err != nil { ... } // a *manifest.OptionError: bad input
//	err = m.WriteYAML(os.Stdout)
package agentmanifest
