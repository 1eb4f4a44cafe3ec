package limitmap

import (
	"encoding/json"
	"io"
	"time"
)

// Axis is what the map's second axis varies.
type Axis string

// The second axes: the open-loop rate, the closed-loop workers, or the burst
// allowance of the limited config (the load as the spec has it).
const (
	AxisRate    Axis = "rate_rps"
	AxisWorkers Axis = "workers"
	AxisBurst   Axis = "burst_ms"
)

// Map is a simulated map of limit against load: map.json.
type Map struct {
	Experiment string `json:"experiment"`
	// Limited is the config whose limit varies, Reference the unlimited one
	// each cell is compared with at the same load.
	Limited   string `json:"limited_config"`
	Reference string `json:"reference_config"`
	// Instances is the limited config's instance count: its limits add up
	// to limit x Instances.
	Instances int    `json:"instances"`
	Cores     int    `json:"cores"`
	Seed      uint64 `json:"seed"`
	// Repeats is the simulated runs per cell (and per reference); the p99
	// is their median, as in every summary.
	Repeats int  `json:"repeats"`
	Axis    Axis `json:"axis"`
	// Limits (millicores) and Loads (the axis' values) span the grid.
	Limits []int64   `json:"limits_millicores"`
	Loads  []float64 `json:"loads"`
	// References is the unlimited reference at each load.
	References []Reference `json:"references"`
	// Cells, row by row: every limit at the first load, then the next load.
	Cells    []Cell     `json:"cells"`
	Measured []Measured `json:"measured"`
}

// Reference is the unlimited config at one load.
type Reference struct {
	Load  float64 `json:"load"`
	P99Ms float64 `json:"p99_ms"`
	// MeanCores is its CPU use; OfferedCores the work the load offers
	// (CPU per request times the offered rate), which the limits must cover.
	MeanCores     float64 `json:"mean_cores"`
	OfferedCores  float64 `json:"offered_cores"`
	ThroughputRPS float64 `json:"throughput_rps"`
}

// Cell is one limit at one load.
type Cell struct {
	LimitMilli int64 `json:"limit_millicores"`
	// One of these is set, as the map's axis says.
	RateRPS *float64 `json:"rate_rps,omitempty"`
	Workers *int64   `json:"workers,omitempty"`
	BurstMs *float64 `json:"burst_ms,omitempty"`
	// P99Ratio is the p99 against the reference's at the same load; null
	// when the cell is overloaded.
	P99Ratio *float64 `json:"p99_ratio"`
	// ThrottledPeriodsRatio is nr_throttled / nr_periods over the instances.
	ThrottledPeriodsRatio float64 `json:"throttled_periods_ratio"`
	// MeanCores is the CPU use of all the limited instances together.
	MeanCores float64 `json:"mean_cores"`
	// Overloaded: the limits add up to less than the work an open-loop
	// load offers (a closed loop waits for its answers: never overloaded).
	Overloaded bool    `json:"overloaded"`
	P99Ms      float64 `json:"p99_ms"`
	// Note says why a cell was not simulated (a burst above the quota).
	Note string `json:"note,omitempty"`
}

// Measured is one cell also run on real cgroups.
type Measured struct {
	LimitMilli int64    `json:"limit_millicores"`
	RateRPS    *float64 `json:"rate_rps,omitempty"`
	Workers    *int64   `json:"workers,omitempty"`
	BurstMs    *float64 `json:"burst_ms,omitempty"`
	Measured   Figures  `json:"measured"`
	Simulated  Figures  `json:"simulated"`
	// Dir is the results directory of the measurement, relative to the
	// map's (throttlelab report draws it).
	Dir string `json:"dir"`
}

// Figures are a cell's ratios, measured or simulated.
type Figures struct {
	P99Ratio              float64 `json:"p99_ratio"`
	ThrottledPeriodsRatio float64 `json:"throttled_periods_ratio"`
	P99Ms                 float64 `json:"p99_ms"`
	ReferenceP99Ms        float64 `json:"reference_p99_ms"`
}

// Cell returns the cell at load index row and limit index col.
func (m *Map) Cell(row, col int) *Cell { return &m.Cells[row*len(m.Limits)+col] }

// setCoords sets the axis field of a cell or a measurement.
func setCoords(axis Axis, load float64, rate **float64, workers **int64, burst **float64) {
	v := load
	switch axis {
	case AxisRate:
		*rate = &v
	case AxisWorkers:
		w := int64(load)
		*workers = &w
	case AxisBurst:
		*burst = &v
	}
}

// burstOf is a burst axis value (ms) as a duration.
func burstOf(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// WriteJSON writes the map as map.json holds it: indented, and the same
// bytes for the same map.
func WriteJSON(w io.Writer, m *Map) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(m)
}
