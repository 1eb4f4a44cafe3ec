package presets

// f10Besteffort is f10-besteffort.yaml.
var f10Besteffort = &Preset{
	Name: "f10-besteffort", Finding: "F10", Source: qosPaper, Cores: 4,
	Claim:     "a BestEffort job (weight 2) doubles a 2-core server's tail: weights are enforced per core, so a core runs the BestEffort thread while server threads queue elsewhere",
	Check:     "server p99 with the BestEffort neighbour >= 1.5x alone, despite a weight ratio >= 79:1",
	Published: "mean ~7 -> ~15 ms, p99 ~10 -> ~25 ms",
	quick:     quickQoS(quickQoSSettled),
	negative:  dropNeighbours("besteffort"),
	verdict:   p99Worse("alone", "besteffort", 1.5),
}
