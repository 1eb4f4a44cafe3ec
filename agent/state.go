package agent

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// stateFile is the checkpoint's name in the state directory; a checkpoint
// that cannot be used is moved aside to stateFile+".bad" (the last one
// only), and one is written to stateFile+".tmp" before it is renamed.
const stateFile = "summaries.gob"

// stateVersion changes when the summaries' layout does: a checkpoint of
// another version is refused with the reason (the window starts again),
// never misread. 2: blocks keep their points' delays packed (packedKnots).
// 3: the same summaries behind a header (stateMagic, the version, the
// payload's length and CRC-32C), so that a truncated or damaged file is
// told from a good one before it is decoded; a version 2 file (bare gob)
// is still read.
const stateVersion = 3

// stateMagic opens every checkpoint since version 3.
const stateMagic = "throttlelab checkpoint\n"

// headerLen is the header after stateMagic: version (4 bytes), payload
// length (8), CRC-32C of the payload (4), big-endian.
const headerLen = 16

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

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

// differs says how cp's configuration differs from c ("" when it does
// not): the summaries of another shape cannot be merged.
func (c *SummaryConfig) differs(cp *checkpoint) string {
	for _, d := range []struct {
		name      string
		then, now time.Duration
	}{{"window", cp.Window, c.Window}, {"block", cp.Block, c.Block}, {"chunk", cp.Chunk, c.Chunk}, {"bucket", cp.Bucket, c.Bucket}, {"period", cp.Period, c.Period}} {
		if d.then != d.now {
			return fmt.Sprintf("its %s is %s, this agent's %s", d.name, d.then, d.now)
		}
	}
	same := len(cp.Ladder) == len(c.Ladder)
	for i := 0; same && i < len(cp.Ladder); i++ {
		same = cp.Ladder[i] == c.Ladder[i]
	}
	if !same {
		return fmt.Sprintf("its ladder of limits is %v, this agent's %v", cp.Ladder, c.Ladder)
	}
	return ""
}

// Checkpoint error reasons: the reason label of
// throttlelab_agent_checkpoint_errors_total.
const (
	// CheckpointCorrupt: a checkpoint truncated (the agent killed while
	// writing it without the rename, a full disk) or damaged.
	CheckpointCorrupt = "corrupt"
	// CheckpointRefused: a whole checkpoint of another format version or
	// configuration (window, block, ladder, ...), which cannot be merged.
	CheckpointRefused = "refused"
	// CheckpointUnreadable: the file is there but cannot be read.
	CheckpointUnreadable = "unreadable"
	// CheckpointWrite: a checkpoint could not be written (a full disk, a
	// directory the agent's user cannot write); the previous one stays.
	CheckpointWrite = "write"
)

// checkpointErrors counts the checkpoints not read or not written, by
// reason (the Checkpoint* constants).
type checkpointErrors struct {
	mu sync.Mutex
	n  map[string]uint64
}

func (c *checkpointErrors) add(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]uint64{}
	}
	c.n[reason]++
}

// CheckpointErrors returns how many checkpoints could not be read or
// written since the agent started, by reason (CheckpointCorrupt, ...).
func (a *Agent) CheckpointErrors() map[string]uint64 {
	a.ckptErrs.mu.Lock()
	defer a.ckptErrs.mu.Unlock()
	out := map[string]uint64{}
	for _, r := range []string{CheckpointCorrupt, CheckpointRefused, CheckpointUnreadable, CheckpointWrite} {
		out[r] = a.ckptErrs.n[r]
	}
	return out
}

// SaveState writes every summary to dir, atomically: a temporary file in
// dir is written and synced, renamed over the previous checkpoint, and the
// directory synced, so that a kill or a crash at any point leaves either
// the previous checkpoint or the new one, whole. A failure leaves the
// previous one and is counted (CheckpointWrite).
func (a *Agent) SaveState(dir string) error {
	err := a.saveState(dir)
	if err != nil {
		a.ckptErrs.add(CheckpointWrite)
	}
	return err
}

func (a *Agent) saveState(dir string) error {
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
	var payload bytes.Buffer
	if err := gob.NewEncoder(&payload).Encode(&cp); err != nil {
		return fmt.Errorf("encoding the summaries: %w", err)
	}
	b := encodeCheckpoint(payload.Bytes())
	return writeAtomic(dir, stateFile, b)
}

// encodeCheckpoint puts the header before a gob payload.
func encodeCheckpoint(payload []byte) []byte {
	b := make([]byte, 0, len(stateMagic)+headerLen+len(payload))
	b = append(b, stateMagic...)
	b = binary.BigEndian.AppendUint32(b, stateVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(len(payload)))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
	return append(b, payload...)
}

// writeAtomic writes b to dir/name through dir/name.tmp: write, fsync,
// rename, fsync of the directory (which makes the rename durable).
func writeAtomic(dir, name string, b []byte) (err error) {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("writing the summaries to %s: %w: give a directory the agent's user can write", dir, err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("syncing %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("renaming the checkpoint: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

// CheckpointError is why a checkpoint was not used: its Reason (a
// Checkpoint* constant) and what was wrong.
type CheckpointError struct {
	Path, Reason string
	Err          error
}

func (e *CheckpointError) Error() string {
	return fmt.Sprintf("checkpoint %s %s: %v", e.Path, e.Reason, e.Err)
}

func (e *CheckpointError) Unwrap() error { return e.Err }

// decodeCheckpoint reads a checkpoint's bytes: version 3 (header, then
// gob) or version 2 (bare gob). Anything else is a *CheckpointError.
func decodeCheckpoint(path string, b []byte) (*checkpoint, error) {
	corrupt := func(format string, args ...any) error {
		return &CheckpointError{Path: path, Reason: CheckpointCorrupt, Err: fmt.Errorf(format, args...)}
	}
	var payload []byte
	legacy := !bytes.HasPrefix(b, []byte(stateMagic))
	if !legacy {
		h := b[len(stateMagic):]
		if len(h) < headerLen {
			return nil, corrupt("truncated in its header (%d bytes)", len(b))
		}
		version := binary.BigEndian.Uint32(h)
		if version != stateVersion {
			return nil, &CheckpointError{Path: path, Reason: CheckpointRefused,
				Err: fmt.Errorf("format version %d, this agent reads versions 2 and %d", version, stateVersion)}
		}
		n, sum := binary.BigEndian.Uint64(h[4:]), binary.BigEndian.Uint32(h[12:])
		payload = h[headerLen:]
		if uint64(len(payload)) != n {
			return nil, corrupt("truncated: %d of its %d bytes of summaries", len(payload), n)
		}
		if crc32.Checksum(payload, castagnoli) != sum {
			return nil, corrupt("its checksum does not match: damaged")
		}
	} else {
		payload = b // version 2 and before: bare gob
	}
	var cp checkpoint
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(&cp); err != nil {
		return nil, corrupt("%w", err)
	}
	if (legacy && cp.Version != 2) || (!legacy && cp.Version != stateVersion) {
		return nil, &CheckpointError{Path: path, Reason: CheckpointRefused,
			Err: fmt.Errorf("format version %d, this agent reads versions 2 and %d", cp.Version, stateVersion)}
	}
	return &cp, nil
}

// LoadState reads the summaries a previous run saved in dir; each is given
// back to its container (same cgroup path) when the container is seen. A
// missing file is no error. A checkpoint that cannot be used (truncated,
// damaged, unreadable, of another format version or configuration) is
// never an error either, so that an agent never fails to start over it:
// the window starts again, the agent's log says why, the
// throttlelab_agent_checkpoint_errors_total counter counts it by reason,
// and the file is moved aside (summaries.gob.bad) for a look.
func (a *Agent) LoadState(dir string) (loaded int, err error) {
	path := filepath.Join(dir, stateFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	var cp *checkpoint
	if err != nil {
		err = &CheckpointError{Path: path, Reason: CheckpointUnreadable, Err: err}
	} else if cp, err = decodeCheckpoint(path, b); err == nil {
		if why := a.cfg.Summary.differs(cp); why != "" {
			err = &CheckpointError{Path: path, Reason: CheckpointRefused, Err: errors.New(why)}
		}
	}
	if err != nil {
		var ce *CheckpointError
		errors.As(err, &ce)
		a.ckptErrs.add(ce.Reason)
		aside := ""
		if ce.Reason != CheckpointUnreadable {
			if rerr := os.Rename(path, path+".bad"); rerr == nil {
				aside = path + ".bad"
			}
		}
		a.cfg.Logger.Warn("the checkpoint is not used: the window starts again", "reason", ce.Reason, "err", ce.Err, "path", path, "moved_to", aside)
		return 0, nil
	}
	a.mu.Lock()
	a.saved, a.savedAt = cp.Summaries, cp.Saved
	a.mu.Unlock()
	return len(cp.Summaries), nil
}

// OwnStateDir hands dir to uid:gid with mode 0700, unless it is theirs
// already: the agent's init container runs it on the hostPath the kubelet
// made root's (it needs CAP_CHOWN, and nothing else: the mode is set while
// the directory is still root's).
func OwnStateDir(dir string, uid, gid int) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("the state directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("the state directory %s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid && int(st.Gid) == gid {
		return nil
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("the state directory: %w", err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		return fmt.Errorf("the state directory: %w: the container needs CAP_CHOWN", err)
	}
	return nil
}
