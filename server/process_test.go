package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/units"
)

// TestProcessServesAndStops runs a process on a free port: it prints the
// address, answers /api, and returns when its context ends.
func TestProcessServesAndStops(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	policy, err := units.ParseGOMAXPROCS("1")
	if err != nil {
		t.Fatal(err)
	}
	p := Process{Name: "p0", Listen: "127.0.0.1:0", GOMAXPROCS: policy, MaxInflight: 4, MaxCPU: time.Second, BurnIterationsPerMs: 1000}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, pw, slog.New(slog.NewTextHandler(io.Discard, nil))); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	addr, _, _ := strings.Cut(strings.TrimPrefix(line, "listening on "), " ")
	if !strings.HasPrefix(addr, "http://127.0.0.1:") || !strings.Contains(line, "name=p0 gomaxprocs=1 ") {
		t.Fatalf("first line %q", line)
	}
	resp, err := http.Get(addr + "/api")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Instance") != "p0" {
		t.Errorf("/api: %s, X-Instance %q", resp.Status, resp.Header.Get("X-Instance"))
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Run after its context ended: %v", err)
	}
}

func TestProcessBadListen(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	p := Process{Listen: "nonsense", MaxInflight: 1, MaxCPU: time.Second, BurnIterationsPerMs: 1000}
	err := p.Run(context.Background(), io.Discard, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if !errors.Is(err, ErrListen) {
		t.Errorf("listening on nonsense: %v, want ErrListen", err)
	}
}
