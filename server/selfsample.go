package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
)

// Self-measurement windows: defaults for Config.CgroupInterval and the
// longest a window samples before it stops by itself.
const (
	DefaultCgroupInterval = 10 * time.Millisecond
	MaxCgroupWindow       = time.Hour
)

// CgroupSample is one reading of the server's own group in a window.
type CgroupSample struct {
	// TNs is the time since the window's first sample.
	TNs       int64  `json:"t_ns"`
	UsageNs   int64  `json:"usage_ns"`
	Throttled uint64 `json:"nr_throttled"`
	// Periods is nr_periods: where it moves a period ended, so the runner
	// finds the group's own periods (the peak within a period).
	Periods uint64 `json:"nr_periods"`
}

// CgroupWindow is what the server measured of itself between
// POST /cgroup/start and POST /cgroup/stop: its group's cumulative usage
// and throttled periods at every interval, and cpu.stat at both ends.
type CgroupWindow struct {
	// Started is the wall-clock time of the first sample: the runner lines
	// up the windows of several servers on it.
	Started    time.Time `json:"started"`
	IntervalNs int64     `json:"interval_ns"`
	Active     bool      `json:"active"`
	// Before and After are the readings at the start and at the stop (After
	// is nil while the window is active).
	Before  *OwnCgroupReading `json:"before,omitempty"`
	After   *OwnCgroupReading `json:"after,omitempty"`
	Samples []CgroupSample    `json:"samples"`
	// Truncated says the window ran past MaxCgroupWindow and stopped itself.
	Truncated bool `json:"truncated,omitempty"`
	// Missed counts the sampling instants skipped because a sample came
	// more than half an interval late (cgroup.Clock).
	Missed int64 `json:"missed,omitempty"`
	// Err is the read error that ended the window early, if any.
	Err string `json:"error,omitempty"`
}

// CgroupStatus is GET /cgroup, and the cgroup part of /info: the server's
// own group, its limits and counters now, and the sampling window's state.
type CgroupStatus struct {
	Version string             `json:"cpu_controller"`
	Dir     string             `json:"group"`
	Limits  *cgroup.CPULimits  `json:"limits,omitempty"`
	Now     *OwnCgroupReading  `json:"now,omitempty"`
	Window  *CgroupWindowState `json:"window,omitempty"`
	Err     string             `json:"error,omitempty"`
}

// CgroupWindowState is a window's state without its samples.
type CgroupWindowState struct {
	Active  bool      `json:"active"`
	Started time.Time `json:"started"`
	Samples int       `json:"samples"`
}

// ownSampler samples an OwnCgroup in windows. Every read of the group goes
// through mu: the group's files are shared.
type ownSampler struct {
	g        *OwnCgroup
	interval time.Duration
	max      time.Duration
	mu       sync.Mutex
	w        *CgroupWindow
	stop     chan struct{}
	done     chan struct{}
}

func newOwnSampler(g *OwnCgroup, interval, max time.Duration) *ownSampler {
	return &ownSampler{g: g, interval: interval, max: max}
}

// start ends the window under way, if any, and starts a new one.
func (s *ownSampler) start() (CgroupWindowState, error) {
	s.end()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.g.Read()
	if err != nil {
		return CgroupWindowState{}, err
	}
	now := time.Now()
	s.w = &CgroupWindow{Started: now.UTC(), IntervalNs: int64(s.interval), Active: true, Before: &r,
		Samples: []CgroupSample{{UsageNs: r.UsageNs, Throttled: r.ThrottledPeriods, Periods: r.Periods}}}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.loop(now, s.w, s.stop, s.done)
	return CgroupWindowState{Active: true, Started: s.w.Started, Samples: 1}, nil
}

// loop samples the window every interval from cgroup's one sampling loop
// (a locked thread, absolute instants), until stop is closed.
func (s *ownSampler) loop(start time.Time, w *CgroupWindow, stop, done chan struct{}) {
	defer close(done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var lag time.Duration // the loop's start after the window's
	cgroup.Loop(ctx, s.interval, func(at time.Duration, missed int64) bool {
		if at == 0 {
			lag = time.Since(start)
			return true // the window's first sample is start's
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if ctx.Err() != nil {
			return false
		}
		at += lag // since the window's first sample
		r, err := s.g.Read()
		w.Missed = missed
		switch {
		case err != nil:
			w.Err = err.Error()
		case at > s.max:
			w.Truncated = true
		default:
			w.Samples = append(w.Samples, CgroupSample{TNs: int64(at), UsageNs: r.UsageNs, Throttled: r.ThrottledPeriods, Periods: r.Periods})
		}
		return err == nil && at <= s.max
	})
}

// end stops the window's sampling (if one is under way) and takes the
// closing reading.
func (s *ownSampler) end() {
	s.mu.Lock()
	stop, done, w := s.stop, s.done, s.w
	s.stop, s.done = nil, nil
	s.mu.Unlock()
	if stop == nil {
		return
	}
	close(stop)
	<-done
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Active = false
	if r, err := s.g.Read(); err == nil {
		w.After = &r
	} else if w.Err == "" {
		w.Err = err.Error()
	}
}

// window returns a copy of the last window (nil if none was started).
func (s *ownSampler) window() *CgroupWindow {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return nil
	}
	c := *s.w
	c.Samples = append([]CgroupSample(nil), s.w.Samples...)
	return &c
}

func (s *ownSampler) status() CgroupStatus {
	st := CgroupStatus{Version: s.g.Version, Dir: s.g.Dir}
	var errs []error
	l, err := s.g.Limits()
	st.Limits = l
	errs = append(errs, err)
	s.mu.Lock()
	r, err := s.g.Read()
	if err == nil {
		st.Now = &r
	}
	errs = append(errs, err)
	if s.w != nil {
		st.Window = &CgroupWindowState{Active: s.w.Active, Started: s.w.Started, Samples: len(s.w.Samples)}
	}
	s.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		st.Err = err.Error()
	}
	return st
}

// cgroupStatus is the cgroup part of /info (nil without self-measurement).
func (s *Server) cgroupStatus() *CgroupStatus {
	if s.own == nil {
		if s.cfg.CgroupError == "" {
			return nil
		}
		return &CgroupStatus{Err: s.cfg.CgroupError}
	}
	st := s.own.status()
	return &st
}

// registerCgroup adds the self-measurement endpoints:
//
//	GET  /cgroup         the group, its limits and counters now, the window's state
//	POST /cgroup/start   start a window (ending one under way): sample every interval
//	POST /cgroup/stop    end the window; answers it, samples and all
//	GET  /cgroup/window  the last window again (a runner's retry after a lost answer)
func (s *Server) registerCgroup(mux *http.ServeMux) {
	mux.HandleFunc("/cgroup", s.getOnly(func(w http.ResponseWriter, r *http.Request) {
		if !s.ownOK(w, r) {
			return
		}
		s.writeJSON(w, "cgroup", s.own.status())
	}))
	mux.HandleFunc("/cgroup/window", s.getOnly(func(w http.ResponseWriter, r *http.Request) {
		if !s.ownOK(w, r) {
			return
		}
		win := s.own.window()
		if win == nil {
			s.fail(w, r, "cgroup", http.StatusNotFound, "no window yet: POST /cgroup/start first")
			return
		}
		s.writeJSON(w, "cgroup", win)
	}))
	mux.HandleFunc("/cgroup/start", s.postOnly(func(w http.ResponseWriter, r *http.Request) {
		if !s.ownOK(w, r) {
			return
		}
		st, err := s.own.start()
		if err != nil {
			s.fail(w, r, "cgroup", http.StatusInternalServerError, "starting the window: "+err.Error())
			return
		}
		s.writeJSON(w, "cgroup", st)
	}))
	mux.HandleFunc("/cgroup/stop", s.postOnly(func(w http.ResponseWriter, r *http.Request) {
		if !s.ownOK(w, r) {
			return
		}
		s.own.end()
		win := s.own.window()
		if win == nil {
			s.fail(w, r, "cgroup", http.StatusConflict, "no window to stop: POST /cgroup/start first")
			return
		}
		s.writeJSON(w, "cgroup", win)
	}))
}

func (s *Server) ownOK(w http.ResponseWriter, r *http.Request) bool {
	if s.own != nil {
		return true
	}
	msg := "this server measures no cgroup of its own"
	if s.cfg.CgroupError != "" {
		msg += ": " + s.cfg.CgroupError
	}
	s.fail(w, r, "cgroup", http.StatusServiceUnavailable, msg)
	return false
}

func (s *Server) postOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			s.fail(w, r, "cgroup", http.StatusMethodNotAllowed, fmt.Sprintf("method %q not allowed on %q: use POST", r.Method, r.URL.Path))
			return
		}
		h(w, r)
	}
}

func (s *Server) writeJSON(w http.ResponseWriter, endpoint string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("X-Instance", s.cfg.Name)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.Write(append(b, '\n'))
	s.metrics.count(endpoint, http.StatusOK)
}
