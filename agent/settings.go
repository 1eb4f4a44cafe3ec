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

// SettingError is a setting the user must change: Setting names the field
// of Settings (Sample, Targets, ...), Msg says what was wrong with its
// value and what to give. It wraps ErrSettings; the CLI says which flag
// carried the setting.
type SettingError struct{ Setting, Msg string }

func (e *SettingError) Error() string { return e.Msg }
func (e *SettingError) Unwrap() error { return ErrSettings }

// Settings are the agent's settings as a user gives them, before they are
// checked and turned into a Config.
type Settings struct {
	Root, Node, Mapping, StateDir string
	Window, Block, Chunk          time.Duration
	Sample, Interval              time.Duration
	Startup                       time.Duration
	StartupShare                  string // "10%" or "0.1"; "": startup.DefaultShare
	Targets                       []string
}

// Config checks s and returns the agent's Config. An error about a
// setting is a *SettingError.
func (s Settings) Config(logger *slog.Logger) (Config, error) {
	bad := func(setting, format string, args ...any) (Config, error) {
		return Config{}, &SettingError{Setting: setting, Msg: fmt.Sprintf(format, args...)}
	}
	if s.Sample < 10*time.Millisecond {
		return bad("Sample", "sampling interval %s: give 10ms or more (reading every group costs CPU)", s.Sample)
	}
	if s.Interval < s.Sample {
		return bad("Interval", "refresh interval %s: give at least the sampling interval (%s)", s.Interval, s.Sample)
	}
	mapping := cgroup.WeightMapping(s.Mapping)
	if _, err := cgroup.SharesToWeight(1024, mapping); err != nil {
		return bad("Mapping", "%v", err)
	}
	if len(s.Targets) > 4 {
		return bad("Targets", "%d targets: give at most 4 (each adds two series per container)", len(s.Targets))
	}
	var targets []NamedTarget
	for _, ts := range s.Targets {
		t, err := ParseTarget(ts)
		if err != nil {
			return bad("Targets", "%v", err)
		}
		targets = append(targets, t)
	}
	sum := SummaryConfig{Window: s.Window, Block: s.Block, Chunk: s.Chunk}
	if err := (&SummaryConfig{Window: s.Window, Block: s.Block, Chunk: s.Chunk, Period: 100 * time.Millisecond, Bucket: 15 * time.Second}).Check(); err != nil {
		return bad("Window", "%v", err)
	}
	if s.Startup < 0 {
		return bad("Startup", "start-up %s: give 0 (keep start-ups in the advice) or a duration", s.Startup)
	}
	share, err := parseShare(s.StartupShare)
	if err != nil {
		return bad("StartupShare", "start-up share %q: give a share above 0 and at most 100%% such as 10%% or 0.1 (within 10%% of the start-up's unlimited length)", s.StartupShare)
	}
	if s.StateDir != "" {
		if fi, err := os.Stat(s.StateDir); err != nil || !fi.IsDir() {
			return bad("StateDir", "%s: not a directory: make it first", s.StateDir)
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
	return Config{Root: root, ProcRoot: ProcRoot(s.Root, root), Node: node, SampleEvery: s.Sample, Interval: s.Interval, Mapping: mapping, Targets: targets,
		Summary: sum, Logger: logger, StateDir: s.StateDir, Startup: s.Startup, StartupShare: share}, nil
}
