package presets

import "time"

// f11Reservations is f11-reservations.yaml.
var f11Reservations = &Preset{
	Name: "f11-reservations", Finding: "F11", Source: qosPaper, Cores: 4,
	Claim:     "a Burstable neighbour's load raises a Guaranteed service's latency although each requests half the cores",
	Check:     "service1 p99 under service2 load >= 1.5x alone",
	Published: "service1 mean 6 -> 9.5 ms, p99 7 -> 22 ms",
	// 10 s: at 6 s the per-repeat spread of its p99 ratio rose from 0.14
	// to 0.21 (cv; quiet runs of 2026-11-29), enough to cost a second look.
	quick:    quickQoS(10 * time.Second),
	negative: dropNeighbours("service2-load"),
	verdict:  p99Worse("alone", "service2-load", 1.5),
}
