package advise

// AdviseBefore is Advise as it was before the windows ran at once and the
// counts' replays kept no delays (Options.before): the reference the
// benchmarks run beside Advise in the same run.
func AdviseBefore(d *Demand, req Request, sampled Sampled) (*Advice, error) {
	req.before = true
	return Advise(d, req, sampled)
}
