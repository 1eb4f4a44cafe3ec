package agent

import "github.com/prometheus/client_golang/prometheus"

// The start-up boost's descriptors (startupDescs lists them for collector.Describe).
var (
	descBoostCores = kdesc("throttlelab_startup_boost_cores", "For a container the agent saw start, whose start-up a limit would lengthen by more than the start-up share (Config.StartupShare): the CPU limit to give it while it starts (sized against the advised limit, else the current one; capped at the node's CPUs); absent otherwise.")
	descBoostSecs  = kdesc("throttlelab_startup_boost_seconds", "How long from its start the container needs the boost of throttlelab_startup_boost_cores, in whole seconds.")
	descStartDelay = kdesc("throttlelab_startup_delay_seconds", "How much the current limit lengthens the container's start-up: its start-up replayed under the limit minus replayed unlimited, in seconds; absent without a limit or a start-up long enough to measure.")
)

var startupDescs = []*prometheus.Desc{descBoostCores, descBoostSecs, descStartDelay}

// startupMetrics emits a container's start-up boost and delay (they need
// no advice: a container still starting has none yet, and its boost is
// then sized against its current limit).
func startupMetrics(v *View, g func(d *prometheus.Desc, val float64, extra ...string)) {
	st := v.Startup
	if st == nil {
		return
	}
	if st.Delay != nil {
		g(descStartDelay, st.Delay.DelaySeconds)
	}
	if b := st.Boost; b != nil && b.Needed {
		g(descBoostCores, float64(b.BoostMilli)/1000)
		g(descBoostSecs, float64(b.DurationSeconds))
	}
}
