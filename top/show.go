package top

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/throttlelab/throttlelab/schemas"
	"github.com/throttlelab/throttlelab/watch"
)

// CheckTiming checks how often a watcher samples (sample), how long a
// report covers (interval) and the peak window of groups without a quota
// (window): each error names the setting at fault.
func CheckTiming(sample, interval, window time.Duration) error {
	switch {
	case sample < 10*time.Millisecond:
		return fmt.Errorf("sample %s: give 10ms or more (reading every group costs CPU)", sample)
	case interval < 10*time.Millisecond || interval < sample:
		return fmt.Errorf("interval %s: give at least 10ms and at least the sample (%s)", interval, sample)
	case window < sample:
		return fmt.Errorf("window %s: give at least the sample (%s)", window, sample)
	}
	return nil
}

// ErrNoReport is Show's error when Once was interrupted before the end of
// its interval: nothing was printed.
var ErrNoReport = errors.New("interrupted before the end of the interval")

// Display says how Show presents a watcher's reports.
type Display struct {
	// Interval is the time each report covers; View sorts, filters and lays
	// out the groups.
	Interval time.Duration
	View     View
	// Once prints one report and returns; JSON prints JSON (with Once one
	// array, otherwise one line per group per report).
	Once, JSON bool
	// Screen, if set and neither Once nor JSON is, shows the reports
	// interactively until it returns (tui.Run on a terminal); it is given
	// the latest report each time one is ready, a report it has not taken
	// being replaced by the next.
	Screen func(ctx context.Context, updates <-chan []watch.Stats) error
	// Metrics, if set, is updated with every report; with neither Screen
	// nor JSON, Show then only serves (prints nothing).
	Metrics *watch.Collector
	// Out receives the tables or JSON, as `top -b` prints them.
	Out io.Writer
}

// Show runs w and presents its reports as d says, until ctx ends, the
// screen quits, or (Once) after one report.
func Show(ctx context.Context, w *watch.Watcher, d Display) error {
	publish := func(stats []watch.Stats) {
		if d.Metrics != nil {
			d.Metrics.Update(stats)
		}
	}
	switch {
	case d.Once:
		var got []watch.Stats
		if err := w.Run(ctx, d.Interval, func(s []watch.Stats) bool { got = s; return false }); err != nil {
			return err
		}
		if got == nil {
			return ErrNoReport
		}
		rows := d.View.Rows(got)
		if !d.JSON {
			return WriteTable(d.Out, w.Source(), rows, d.Interval)
		}
		list := make([]watch.Stats, len(rows))
		for i, r := range rows {
			list[i] = *r.Stats
		}
		enc := json.NewEncoder(d.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(schemas.Doc(schemas.KindGroupStatsList, struct {
			Items []watch.Stats `json:"items"`
		}{list}))
	case d.JSON:
		enc := json.NewEncoder(d.Out)
		return w.Run(ctx, d.Interval, func(s []watch.Stats) bool {
			publish(s)
			for _, r := range d.View.Rows(s) {
				if enc.Encode(schemas.Doc(schemas.KindGroupStats, r.Stats)) != nil {
					return false // the output closed (a pipe to head, say)
				}
			}
			return true
		})
	case d.Screen != nil:
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		updates := make(chan []watch.Stats, 1)
		errc := make(chan error, 1)
		go func() {
			errc <- w.Run(ctx, d.Interval, func(s []watch.Stats) bool {
				publish(s)
				select {
				case <-updates: // the screen has not taken the last one: replace it
				default:
				}
				updates <- s
				return true
			})
			close(updates)
		}()
		uiErr := d.Screen(ctx, updates)
		cancel()
		if err := <-errc; err != nil {
			return err
		}
		return uiErr
	case d.Metrics != nil:
		return w.Run(ctx, d.Interval, func(s []watch.Stats) bool { publish(s); return true })
	default:
		return w.Run(ctx, d.Interval, func(s []watch.Stats) bool {
			publish(s)
			err := WriteTable(d.Out, w.Source(), d.View.Rows(s), d.Interval)
			fmt.Fprintln(d.Out)
			return err == nil
		})
	}
}

// MetricsMux serves c's metrics at /metrics, and a line saying so at /.
func MetricsMux(c *watch.Collector) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", c.Handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "throttlelab top: metrics at /metrics")
	})
	return mux
}
