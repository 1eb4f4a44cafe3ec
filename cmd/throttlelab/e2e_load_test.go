package main

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/loadgen"
)

// twoServers starts two real serve instances and returns --target flags for them.
func twoServers(t *testing.T) []string {
	t.Helper()
	a := startServe(t, "", "--name", "a", "--gomaxprocs", "2", "--burn-calibration", "1000000")
	b := startServe(t, "", "--name", "b", "--gomaxprocs", "2", "--burn-calibration", "1000000")
	return []string{"--target", a.base, "--target", b.base}
}

func readSummary(t *testing.T, dir string) loadgen.Totals {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s loadgen.Totals
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func readRecords(t *testing.T, dir string) []loadgen.Record {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "requests.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := loadgen.ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestLoadModes(t *testing.T) {
	targets := twoServers(t)
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, s loadgen.Totals, recs []loadgen.Record)
	}{
		{"image", []string{"--mode", "image", "--tiles", "sample:120", "--workers", "4"}, func(t *testing.T, s loadgen.Totals, _ []loadgen.Record) {
			if s.Requests != 120 || s.OK != 120 || s.Image == nil || s.Image.Verified != 120 || s.Image.Bad != 0 {
				t.Errorf("image: %+v %+v", s, s.Image)
			}
		}},
		{"ramp", []string{"--mode", "ramp", "--ramp", "1:3", "--step", "500ms", "--tiles", "class:small"}, func(t *testing.T, s loadgen.Totals, _ []loadgen.Record) {
			if len(s.Steps) != 3 || s.Steps[0].Workers != 1 || s.Steps[2].Workers != 3 || s.Steps[0].Requests == 0 || s.Steps[2].P99Ms < s.Steps[2].P50Ms {
				t.Errorf("ramp steps: %+v", s.Steps)
			}
		}},
		{"rate", []string{"--mode", "rate", "--rate", "100", "--duration", "1s", "--request", "api"}, func(t *testing.T, s loadgen.Totals, recs []loadgen.Record) {
			// A constant schedule: exactly 100 requests due in 1 s, at 10 ms steps.
			if s.Requests != 100 || s.Arrivals != "constant" || recs[99].Intended != 990*time.Millisecond {
				t.Errorf("rate: %d requests, last due %s", s.Requests, recs[len(recs)-1].Intended)
			}
		}},
		{"poisson", []string{"--mode", "rate", "--rate", "200", "--arrivals", "poisson", "--requests", "150", "--request", "burn", "--burn", "iterations=1000"}, func(t *testing.T, s loadgen.Totals, _ []loadgen.Record) {
			if s.Requests != 150 || s.Arrivals != "poisson" {
				t.Errorf("poisson: %+v", s)
			}
		}},
		{"onoff", []string{"--mode", "onoff", "--sources", "6", "--on", "50ms", "--off", "100ms", "--duration", "1s", "--request", "burn", "--burn", "cpu=1ms"}, func(t *testing.T, s loadgen.Totals, recs []loadgen.Record) {
			workers := map[int]bool{}
			for _, r := range recs {
				workers[r.Worker] = true
			}
			if s.Requests < 20 || len(workers) < 3 || s.DurationSec < 1 || s.DurationSec > 1.5 {
				t.Errorf("onoff: %d requests from %d sources in %.2f s", s.Requests, len(workers), s.DurationSec)
			}
		}},
		{"probe", []string{"--mode", "probe", "--duration", "1s", "--request", "api"}, func(t *testing.T, s loadgen.Totals, _ []loadgen.Record) {
			if s.Requests != 10 || s.RateRPS != 10 || s.ThroughputRPS != 10 {
				t.Errorf("probe at its default 10/s for 1 s: %+v", s)
			}
		}},
		{"new connections", []string{"--mode", "sequential", "--requests", "20", "--request", "api", "--new-connection", "--balancer", "ingress:1"}, func(t *testing.T, s loadgen.Totals, _ []loadgen.Record) {
			if s.Requests != 20 || s.SameInstanceRate != 0 {
				t.Errorf("new connections: %+v", s)
			}
		}},
		{"sequential", []string{"--mode", "sequential", "--requests", "30", "--request", "burn", "--burn", "cpu=1ms", "--balancer", "roundrobin"}, func(t *testing.T, s loadgen.Totals, _ []loadgen.Record) {
			if s.Requests != 30 || s.SameInstanceRate != 0 || s.PerInstance["a"] != 15 || s.PerInstance["b"] != 15 {
				t.Errorf("sequential roundrobin: %+v", s)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			r := run(t, append(append([]string{"load", "--out", dir}, targets...), tt.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			s := readSummary(t, dir)
			recs := readRecords(t, dir)
			// Every request is a record, and the summary adds up.
			var perInstance int64
			for _, n := range s.PerInstance {
				perInstance += n
			}
			if int64(len(recs)) != s.Requests || perInstance != s.Requests || s.OK != s.Requests || len(s.Errors) != 0 {
				t.Errorf("%d records, summary %d requests (%d ok, per instance %d, errors %v)", len(recs), s.Requests, s.OK, perInstance, s.Errors)
			}
			for _, rec := range recs {
				if rec.Status != 200 || rec.ServerWall < 0 || (rec.Instance != "a" && rec.Instance != "b") {
					t.Fatalf("record %v", rec)
				}
			}
			if !strings.Contains(r.stdout, "latency") || !strings.Contains(r.stdout, "p99") {
				t.Errorf("no summary table:\n%s", r.stdout)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "latency.hdr")); err != nil || !bytes.Contains(b, []byte("#[StartTime:")) {
				t.Errorf("latency.hdr: %v %.200s", err, b)
			}
			tt.check(t, s, recs)
		})
	}
}

// fakeServer is an in-process stand-in for a broken or slow instance.
func fakeServer(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("/", h)
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

func TestLoadDetectsWrongTiles(t *testing.T) {
	// A server that answers every tile with a flat grey square (black would be
	// right for tiles inside the set).
	var png200 bytes.Buffer
	grey := image.NewGray(image.Rect(0, 0, 200, 200))
	for i := range grey.Pix {
		grey.Pix[i] = 7
	}
	png.Encode(&png200, grey)
	url := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Instance", "liar")
		w.Write(png200.Bytes())
	})
	dir := t.TempDir()
	r := run(t, "load", "--mode", "image", "--tiles", "sample:5", "--seed", "3", "--target", url, "--out", dir)
	s := readSummary(t, dir)
	if r.code != 1 || !strings.Contains(r.stderr, "5 tiles did not match the catalogue") || s.Errors["bad_tile"] != 5 || s.Image.Bad != 5 {
		t.Errorf("exit %d, stderr %q, summary errors %v", r.code, r.stderr, s.Errors)
	}
}

func TestLoadRecordsErrorsAndTimeouts(t *testing.T) {
	var n atomic.Int64
	url := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) % 3 {
		case 0:
			time.Sleep(300 * time.Millisecond) // over the timeout below
		case 1:
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}
		w.Write([]byte("{}"))
	})
	dir := t.TempDir()
	r := run(t, "load", "--mode", "sequential", "--requests", "9", "--request", "api", "--timeout", "100ms", "--target", url, "--out", dir)
	s := readSummary(t, dir)
	recs := readRecords(t, dir)
	// Errors are measurements: the run succeeds and every one is a record.
	if r.code != 0 || s.Requests != 9 || len(recs) != 9 || s.Errors["timeout"] != 3 || s.Errors["status"] != 3 || s.OK != 3 {
		t.Errorf("exit %d, summary %+v, %d records\n%s", r.code, s, len(recs), r.stderr)
	}
}

func TestLoadInterruptKeepsEverything(t *testing.T) {
	targets := twoServers(t)
	dir := t.TempDir()
	cmd := exec.Command(binary, append(append([]string{"load", "--out", dir}, targets...), "--mode", "rate", "--rate", "200", "--request", "burn", "--burn", "cpu=1ms", "--duration", "60s")...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt once records are on disk (the CSV is flushed in 64 KiB blocks).
	waitFor(t, func() bool {
		fi, err := os.Stat(filepath.Join(dir, "requests.csv"))
		return err == nil && fi.Size() > 64<<10
	})
	cmd.Process.Signal(syscall.SIGINT)
	code := exitCode(cmd.Wait())
	s := readSummary(t, dir)
	recs := readRecords(t, dir)
	if code != 130 || !s.Interrupted || int64(len(recs)) != s.Requests || s.Requests < 500 || !strings.Contains(out.String(), "INTERRUPTED") {
		t.Errorf("exit %d, interrupted %v, %d records for %d requests\n%s%s", code, s.Interrupted, len(recs), s.Requests, out.String(), errb.String())
	}
}

func TestLoadBadInput(t *testing.T) {
	live := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {})
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	ln.Close()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--target", live}, "--mode is required"},
		{[]string{"--mode", "burst", "--target", live}, "--mode"},
		{[]string{"--mode", "image"}, "no targets"},
		{[]string{"--mode", "image", "--target", "localhost:8080"}, "--target"},
		{[]string{"--mode", "image", "--target", dead}, "unreachable"},
		{[]string{"--mode", "rate", "--rate", "0", "--duration", "1s", "--target", live}, "--rate"},
		{[]string{"--mode", "rate", "--rate", "-5", "--duration", "1s", "--target", live}, "--rate"},
		{[]string{"--mode", "rate", "--rate", "10", "--target", live}, "--duration: mode rate needs a duration or a request count"},
		{[]string{"--mode", "rate", "--rate", "10", "--duration", "1s", "--arrivals", "bursty", "--target", live}, "--arrivals"},
		{[]string{"--mode", "image", "--balancer", "fastest", "--target", live}, "--balancer"},
		{[]string{"--mode", "image", "--balancer", "ingress:0", "--target", live}, "--balancer"},
		{[]string{"--mode", "ramp", "--ramp", "5:2", "--target", live}, "--ramp"},
		{[]string{"--mode", "ramp", "--step", "-1s", "--target", live}, "--step"},
		{[]string{"--mode", "image", "--duration", "soon", "--target", live}, "duration"},
		{[]string{"--mode", "image", "--tiles", "class:huge", "--target", live}, "class"},
		{[]string{"--mode", "image", "--tiles", "sample:0", "--target", live}, "sample"},
		{[]string{"--mode", "sequential", "--requests", "1", "--request", "burn", "--burn", "cpu=lots", "--target", live}, "--burn"},
		{[]string{"--mode", "sequential", "--requests", "1", "--request", "video", "--target", live}, "--request"},
		{[]string{"--mode", "image", "--request", "api", "--target", live}, "--request: mode image renders tiles: the request must be tile"},
		{[]string{"--mode", "onoff", "--sources", "0", "--duration", "1s", "--target", live}, "--sources"},
		{[]string{"--mode", "image", "--workers", "0", "--target", live}, "--workers"},
		{[]string{"--mode", "image", "--targets-file", "/nonexistent", "--target", live}, "--targets-file"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := run(t, append([]string{"load"}, tt.args...)...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != 2 || len(lines) != 1 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q: want exit 2 and one line containing %q", r.code, r.stderr, tt.want)
			}
		})
	}
}
