package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
)

// ErrSettings marks a setting the user must change (the CLI exits 2 on it).
var ErrSettings = errors.New("agent")

// Settings are the agent's settings as a user gives them (flags), before
// they are checked and turned into a Config.
type Settings struct {
	Root, Node, Mapping, StateDir string
	Window, Block, Chunk          time.Duration
	Sample, Interval              time.Duration
	Startup                       time.Duration
	Targets                       []string
}

// Config checks s and returns the agent's Config. Errors about a setting
// wrap ErrSettings and name the flag.
func (s Settings) Config(logger *slog.Logger) (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("%w: "+format, append([]any{ErrSettings}, args...)...)
	}
	if s.Sample < 10*time.Millisecond {
		return bad("--sample %s: give 10ms or more (reading every group costs CPU)", s.Sample)
	}
	if s.Interval < s.Sample {
		return bad("--interval %s: give at least --sample (%s)", s.Interval, s.Sample)
	}
	mapping := cgroup.WeightMapping(s.Mapping)
	if _, err := cgroup.SharesToWeight(1024, mapping); err != nil {
		return bad("--weight-mapping: %v", err)
	}
	if len(s.Targets) > 4 {
		return bad("--target given %d times: give at most 4 (each adds two series per container)", len(s.Targets))
	}
	var targets []NamedTarget
	for _, ts := range s.Targets {
		t, err := ParseTarget(ts)
		if err != nil {
			return bad("--target: %v", err)
		}
		targets = append(targets, t)
	}
	sum := SummaryConfig{Window: s.Window, Block: s.Block, Chunk: s.Chunk}
	if err := (&SummaryConfig{Window: s.Window, Block: s.Block, Chunk: s.Chunk, Period: 100 * time.Millisecond, Bucket: 15 * time.Second}).Check(); err != nil {
		return bad("--window/--block/--chunk: %v", err)
	}
	if s.Startup < 0 {
		return bad("--startup %s: give 0 (keep start-ups in the advice) or a duration", s.Startup)
	}
	if s.StateDir != "" {
		if fi, err := os.Stat(s.StateDir); err != nil || !fi.IsDir() {
			return bad("--state-dir %s: not a directory: make it first", s.StateDir)
		}
	}
	node := s.Node
	if node == "" {
		node, _ = os.Hostname()
	}
	root, err := HostRoot(s.Root, os.TempDir())
	if err != nil {
		return Config{}, err
	}
	return Config{Root: root, Node: node, SampleEvery: s.Sample, Interval: s.Interval, Mapping: mapping, Targets: targets,
		Summary: sum, Logger: logger, StateDir: s.StateDir, Startup: s.Startup}, nil
}
