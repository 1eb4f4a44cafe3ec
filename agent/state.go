package agent

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// stateFile is the checkpoint's name in the state directory.
const stateFile = "summaries.gob"

// stateVersion changes when the checkpoint's layout does: an older file is
// ignored (the window starts again), never misread. 2: blocks keep their
// points' delays packed (packedKnots).
const stateVersion = 2

// summaryState is what a checkpoint keeps of a summary: everything but the
// open chunk's raw samples (at most one chunk, lost on a restart).
type summaryState struct {
	Blocks     []*Block
	BucketWork []float32
	BucketTime []float32
	LastBucket int64
	Cores      int
	// Startup and StartupUntil: the start-up's block and its end
	// (ContainerSummary.SetStartup); absent in older checkpoints (no start-up).
	Startup      *Block
	StartupUntil time.Duration
}

type checkpoint struct {
	Version int
	// Config the summaries were kept with: a checkpoint of another shape
	// is ignored.
	Window, Block, Chunk, Bucket, Period time.Duration
	Ladder                               []int64
	Summaries                            map[string]summaryState // by cgroup path
	// Saved is when it was written (zero in checkpoints before it was
	// kept).
	Saved time.Time
}

func (s *ContainerSummary) state() summaryState {
	blocks := make([]*Block, len(s.blocks))
	for i, b := range s.blocks {
		blocks[i] = b.clone()
	}
	st := summaryState{Blocks: blocks, BucketWork: append([]float32(nil), s.bucketWork...),
		BucketTime: append([]float32(nil), s.bucketTime...), LastBucket: s.lastBucket, Cores: s.cores, StartupUntil: s.startupUntil}
	if s.startup != nil {
		st.Startup = s.startup.clone()
	}
	return st
}

// clone is a copy of b that shares nothing with it (the checkpoint is
// written while the summaries go on).
func (b *Block) clone() *Block {
	c := *b
	c.Points = append([]PointAcc(nil), b.Points...)
	return &c
}

func (s *ContainerSummary) restore(st summaryState) {
	s.blocks, s.lastBucket, s.cores, s.closed = st.Blocks, st.LastBucket, st.Cores, nil
	s.startup, s.startupUntil = st.Startup, st.StartupUntil
	if len(st.BucketWork) == len(s.bucketWork) && len(st.BucketTime) == len(s.bucketTime) {
		copy(s.bucketWork, st.BucketWork)
		copy(s.bucketTime, st.BucketTime)
	}
}

func (c *SummaryConfig) same(cp *checkpoint) bool {
	if cp.Version != stateVersion || cp.Window != c.Window || cp.Block != c.Block || cp.Chunk != c.Chunk || cp.Bucket != c.Bucket || cp.Period != c.Period || len(cp.Ladder) != len(c.Ladder) {
		return false
	}
	for i := range cp.Ladder {
		if cp.Ladder[i] != c.Ladder[i] {
			return false
		}
	}
	return true
}

// SaveState writes every summary to dir (atomically: a new file renamed
// over the old one).
func (a *Agent) SaveState(dir string) error {
	cfg := &a.cfg.Summary
	cp := checkpoint{Version: stateVersion, Window: cfg.Window, Block: cfg.Block, Chunk: cfg.Chunk, Bucket: cfg.Bucket, Period: cfg.Period,
		Ladder: cfg.Ladder, Summaries: map[string]summaryState{}, Saved: time.Now()}
	a.mu.Lock()
	cs := make([]*container, 0, len(a.containers))
	for _, c := range a.containers {
		cs = append(cs, c)
	}
	a.mu.Unlock()
	for _, c := range cs {
		c.mu.Lock()
		cp.Summaries[c.path] = c.sum.state()
		c.mu.Unlock()
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&cp); err != nil {
		return fmt.Errorf("encoding the summaries: %w", err)
	}
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("writing the summaries to %s: %w: give a writable directory", dir, err)
	}
	return os.Rename(tmp, filepath.Join(dir, stateFile))
}

// LoadState reads the summaries a previous run saved in dir; each is given
// back to its container (same cgroup path) when the container is seen. A
// missing file is no error; a checkpoint of another configuration or
// version is ignored, and Loaded says so.
func (a *Agent) LoadState(dir string) (loaded int, err error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var cp checkpoint
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&cp); err != nil {
		return 0, fmt.Errorf("%s: %w: remove it to start the window again", filepath.Join(dir, stateFile), err)
	}
	if !a.cfg.Summary.same(&cp) {
		return 0, nil
	}
	a.mu.Lock()
	a.saved, a.savedAt = cp.Summaries, cp.Saved
	a.mu.Unlock()
	return len(cp.Summaries), nil
}
