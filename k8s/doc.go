// Package k8s is the Kubernetes backend: it turns a resolved experiment spec
// into the objects that run it on a cluster. It and the packages under it
// (k8s/manifest, k8s/agentmanifest, k8s/resize, k8s/k8stest) are the only
// ones of the module that import the Kubernetes API modules (k8s.io/api,
// apimachinery, client-go), so the rest of the tree builds without them.
// The agent's manifests are k8s/agentmanifest's; what both renderers share
// (the restricted container, the image check, the YAML stream) is
// k8s/manifest's.
//
// Render returns, per config, the server instances (one bare Pod per instance,
// so that each has the stable name the local backend gives it, config-0,
// config-1, ...), a Service matching the balancer, the neighbours as pods of
// their own, and one load Job per load, all in a Namespace that enforces the
// restricted Pod Security Standard:
//
//	e, err := experiment.LoadFile("examples/limits.yaml")
//	if err != nil { ... }
//	m, err := k8s.Render(e, k8s.Options{Image: "registry.example/throttlelab:v1"})
//	if err != nil { ... } // a *SpecError or *manifest.OptionError: bad input
//	err = m.WriteYAML(os.Stdout)
//
// A spec the cluster cannot express (a cpuset list, a CPU burst, a CFS period
// other than the kubelet's) is refused with a *SpecError naming the field.
package k8s
