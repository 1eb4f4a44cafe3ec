// Package experiment reads experiment specs (throttlelab/v1alpha1 YAML): the
// configs under test with their Kubernetes-style CPU settings, the load, the
// neighbours, repeats and order, and expands them into runs.
//
// Example:
//
//	e, err := experiment.LoadFile("examples/limits.yaml")
//	if err != nil {
//		return err // "examples/limits.yaml:14: spec.configs[1].cpu.limit: ..."
//	}
//	for _, r := range e.Runs() {
//		s, qos, _ := e.Settings(r.Config)
//		fmt.Println(r.ID(), qos, s.QuotaUsec)
//	}
package experiment
