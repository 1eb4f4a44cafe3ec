package cli

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/demand"
	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/fleet"
	"github.com/throttlelab/throttlelab/fleet/fleettest"
	"github.com/throttlelab/throttlelab/k8s"
	"github.com/throttlelab/throttlelab/source"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// refusedURL is the URL of a loopback port that was just listened on and
// closed: connecting to it is refused, as to a Prometheus or an agent that
// is down.
func refusedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + ln.Addr().String()
	ln.Close()
	return u
}

// TestExitCodes holds every command to the table of docs/cli.md: 0 fine;
// 1 a limit over its target (check) or findings (--lint); 2 bad input or
// usage; 3 a data source unreachable or without data. Each command is
// driven as a user would, through the root command, on real inputs.
func TestExitCodes(t *testing.T) {
	repo := filepath.Join("..", "..")
	down := refusedURL(t)
	empty := fleettest.Agent(t, "node-empty", nil) // an agent that summarises nothing yet
	csv := filepath.Join(repo, "advise", "testdata", "two-regime.csv")
	shop := filepath.Join(repo, "fleet", "testdata", "manifests", "shop.yaml")
	batch := filepath.Join(repo, "fleet", "testdata", "manifests", "batch.yaml")
	clean := filepath.Join(repo, "examples", "limits.yaml")
	bad := filepath.Join(repo, "fleet", "testdata", "lint", "bad.yaml")
	fakeRoot := watchtest.FakeRoot(t, "v2-kubepods-systemd")

	// Recorded demand for batch.yaml's worker (limit 1): never above 0.72
	// CPU, so within any budget; and a hot one that 1 CPU throttles.
	demandDir := func(peak float64) string {
		dir := t.TempDir()
		p := filepath.Join(dir, "batch", "report", "worker.csv")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := demand.WriteCSV(&b, fleettest.Bursty(30, 0.2, peak, 200*time.Millisecond, 9)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	calm, hot := demandDir(0.6), demandDir(3)
	spec := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(spec, []byte("apiVersion: throttlelab/v1alpha1\nkind: Experiment\nnosuchfield: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		cmd  string
		args []string
		want int
	}{
		{"advise", []string{"advise", "--csv", csv}, ExitOK},
		{"advise", []string{"advise", "--csv", csv, "-o", "json"}, ExitOK},
		{"advise", []string{"advise", "--csv", filepath.Join(t.TempDir(), "none.csv")}, ExitUsage},
		{"advise", []string{"advise", "--csv", csv, "-o", "yaml"}, ExitUsage},
		{"advise", []string{"advise", "--csv", csv, "-o", "csv"}, ExitUsage},
		{"advise", []string{"advise", "--csv", csv, "--max-throttled", "two"}, ExitUsage},
		{"advise", []string{"advise", "--prometheus", "prometheus:9090"}, ExitUsage},
		{"advise", []string{"advise", "--prometheus", down}, ExitSource},
		{"advise", []string{"advise", "--agent", down}, ExitSource},
		{"advise", []string{"advise", "--agent", empty.URL}, ExitSource},
		{"check", []string{"check", "--demand", calm, batch}, ExitOK},
		{"check", []string{"check", "--demand", hot, batch}, ExitOver},
		{"check", []string{"check", "--demand", calm, "-o", "yaml", batch}, ExitUsage},
		{"check", []string{"check", "--demand", calm}, ExitUsage},
		{"check", []string{"check", "--demand", filepath.Join(t.TempDir(), "none"), batch}, ExitUsage},
		{"check", []string{"check", "--prometheus", down, shop}, ExitSource},
		{"check", []string{"check", "--agent", down, shop}, ExitSource},
		{"check", []string{"check", "--agent", empty.URL, shop}, ExitSource},
		{"check --lint", []string{"check", "--lint", clean}, ExitOK},
		{"check --lint", []string{"check", "--lint", bad}, ExitOver},
		{"check --lint", []string{"check", "--lint", "--agent", down, bad}, ExitUsage},
		{"top", []string{"top", "--once", "--interval", "30ms", "--root", fakeRoot, "-o", "json"}, ExitOK},
		{"top", []string{"top", "--once", "-o", "yaml"}, ExitUsage},
		{"top", []string{"top", "--once", "--sort", "nosuchcolumn"}, ExitUsage},
		{"agent", []string{"agent", "--max-throttled", "two"}, ExitUsage},
		{"sim", []string{"sim", spec}, ExitUsage},
		{"run", []string{"run", spec}, ExitUsage},
		{"validate", []string{"validate", "f09-burn-flow"}, ExitOK},
		{"validate", []string{"validate", spec}, ExitUsage},
		{"map", []string{"map", spec}, ExitUsage},
		{"report", []string{"report", filepath.Join(t.TempDir(), "none")}, ExitUsage},
		{"k8s render", []string{"k8s", "render", "f09-burn-flow"}, ExitOK},
		{"k8s render", []string{"k8s", "render", spec}, ExitUsage},
		{"presets", []string{"presets"}, ExitOK},
		{"presets", []string{"presets", "nosuch"}, ExitUsage},
		{"load", []string{"load", "--nosuchflag"}, ExitUsage},
		{"serve", []string{"serve", "--nosuchflag"}, ExitUsage},
		{"root", []string{"nosuchcommand"}, ExitUsage},
	} {
		var out, errb bytes.Buffer
		code := runRoot(newRootCmd(), c.args, &out, &errb)
		if code != c.want {
			t.Errorf("%s: throttlelab %s: exit %d, want %d; stderr:\n%s", c.cmd, strings.Join(c.args, " "), code, c.want, errb.String())
		}
		// A failure says what failed, on one line of stderr.
		if code != ExitOK && strings.TrimSpace(errb.String()) == "" {
			t.Errorf("%s: throttlelab %s: exit %d with nothing on stderr", c.cmd, strings.Join(c.args, " "), code)
		}
	}
}

// TestExitCodeMapping maps errors by their type or sentinel, wrapped as
// libraries wrap them, never by their text.
func TestExitCodeMapping(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{errors.New("unreachable"), ExitOver}, // the text alone means nothing
		{usagef("--limit x: bad"), ExitUsage},
		{fmt.Errorf("spec: %w", experiment.ErrInvalidSpec), ExitUsage},
		{&demand.InputError{Field: "CSV", Err: errors.New("no such file")}, ExitUsage},
		{&source.Error{Source: "API server", Err: fmt.Errorf("deployment web: %w", source.ErrNotFound)}, ExitUsage},
		{fmt.Errorf("run: %w", fmt.Errorf("%w: pod p lost its spec.resources", k8s.ErrPodLevelDropped)), ExitUsage},
		{fmt.Errorf("reading: %w", &source.Error{Source: "API server", Addr: "https://k:6443", Err: errors.New("forbidden")}), ExitSource},
		{fmt.Errorf("x: %w", source.ErrUnreachable), ExitSource},
		{fmt.Errorf("x: %w", source.ErrNoData), ExitSource},
		{fmt.Errorf("the Prometheus at p is %w", fleet.ErrUnreachable), ExitSource},
		{fmt.Errorf("p: %w", fleet.ErrNoData), ExitSource},
		{exitError{ExitOver, errors.New("over budget")}, ExitOver},
		{exitError{ExitInterrupted, errors.New("interrupted")}, ExitInterrupted},
	} {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("exitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
