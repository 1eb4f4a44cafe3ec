// Package presets holds the built-in presets: experiment specs (embedded
// YAML) that reproduce published findings (docs/findings.md; Studies cites
// the sources), each with a
// variant scaled down to a small machine and its check as code.
//
//	p, _ := presets.Lookup("f09-burn-flow")
//	e, how, _ := p.Quick(2)                  // scaled to 2 cores, and how
//	// ... run e with runner.Run (local or sim backend) into dir ...
//	v, _ := p.Evaluate(dir, how)             // computed from the results
//	fmt.Println(presets.Line(v))
package presets
