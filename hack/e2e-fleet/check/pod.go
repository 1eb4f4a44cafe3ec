package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// podPhases judges the pod-level step (hack/e2e-fleet/pod.sh): each line of
// the file is "pod-level NAME LIMIT EVALUATION START END" (the pod cgroup's
// limit during the phase, the agent's /evaluate for the pod at it, and the
// pod cgroup's cpu.stat at the phase's start and end) or "per-container
// NAME LIMIT - START END" (a container of the twin with per-container
// limits, measured beside the pod-level phase at the same total: printed
// for comparison, not judged). A pod-level row whose measured throttled
// share is off the agent's prediction by more than max(0.07, 30%) fails.
func podPhases(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Printf("%-14s %-9s %-8s %-10s %-10s %-10s %-10s %s\n", "SETTING", "PHASE", "LIMIT", "PREDICTED", "MEASURED", "DIFF", "TOLERANCE", "PERIODS")
	var bad []string
	judged := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 {
			continue
		}
		if len(fs) != 6 || (fs[0] != "pod-level" && fs[0] != "per-container") {
			return fmt.Errorf("%s: %q: want SETTING NAME LIMIT EVALUATION START END", path, sc.Text())
		}
		limit, err := strconv.ParseInt(fs[2], 10, 64)
		if err != nil {
			return fmt.Errorf("%s: limit %q: %v", path, fs[2], err)
		}
		meas, err := share(fs[4], fs[5])
		if err != nil {
			return err
		}
		if fs[0] == "per-container" {
			fmt.Printf("%-14s %-9s %-8s %-10s %-10.4f %-10s %-10s %d/%d\n", fs[0], fs[1], fs[2]+"m", "-", meas.share, "-", "-", meas.throttled, meas.periods)
			continue
		}
		var ev struct {
			LimitMilli int64   `json:"limit_millicores"`
			Ratio      float64 `json:"throttled_periods_ratio"`
		}
		raw, err := os.ReadFile(fs[3])
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &ev); err != nil || ev.LimitMilli == 0 {
			return fmt.Errorf("%s: not an evaluation (%v): %s", fs[3], err, raw)
		}
		if ev.LimitMilli != limit {
			return fmt.Errorf("phase %s: the pod's cgroup had %dm, the evaluation is of %dm", fs[1], limit, ev.LimitMilli)
		}
		tol := math.Max(0.07, 0.3*ev.Ratio)
		d := meas.share - ev.Ratio
		ok := math.Abs(d) <= tol
		judged++
		if !ok {
			bad = append(bad, fs[1])
		}
		fmt.Printf("%-14s %-9s %-8s %-10.4f %-10.4f %-+10.4f %-10.4f %d/%d %s\n", fs[0], fs[1], fs[2]+"m", ev.Ratio, meas.share, d, tol,
			meas.throttled, meas.periods, map[bool]string{true: "ok", false: "OUTSIDE"}[ok])
	}
	if err := sc.Err(); err != nil {
		return err
	}
	switch {
	case judged == 0:
		return fmt.Errorf("%s: no pod-level phase to judge", path)
	case len(bad) > 0:
		return fmt.Errorf("the pod cgroup's throttled share is outside max(0.07, 30%%) of the agent's pod-level prediction at %s", strings.Join(bad, ", "))
	}
	return nil
}
