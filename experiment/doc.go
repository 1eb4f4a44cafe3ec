// Package experiment reads experiment specs (throttlelab/v1alpha1 YAML): the
// configs under test with their Kubernetes-style CPU settings, the load, the
// neighbours, repeats and order, and expands them into runs.
//
// Parse refuses every bad value before anything runs: unknown fields, values
// of the wrong type or out of bounds, explicit zeros that mean nothing, and
// settings of another load mode or neighbour kind. Its errors are *SpecError
// (errors.Is(err, ErrInvalidSpec)), one line naming file, line and field.
// Values that Kubernetes would change on their way to the kernel (the 1 ms
// quota floor, millicore rounding) are accepted and listed by Warnings.
//
// Every value is parsed once, as the YAML is read, into a typed value:
// CPU quantities (units.CPUQuantity), cpusets (Cpuset), durations, the
// balancer, burn, ramp and tile set (loadgen's BalancerSpec, Burn, Ramp,
// TileSet). The backends, the report and the presets use those values and
// parse no string of the spec again; each is written back as it was read.
//
// Example:
//
//	e, err := experiment.LoadFile("examples/limits.yaml")
//	if err != nil {
//		return err // "examples/limits.yaml:14: spec.configs[1].cpu.limit: ..."
//	}
//	for _, w := range e.Warnings() {
//		log.Print(w)
//	}
//	for _, r := range e.Runs() {
//		s, qos, _ := e.Settings(r.Config)
//		fmt.Println(r.ID(), qos, s.QuotaUsec)
//	}
package experiment
