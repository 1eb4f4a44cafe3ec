package agent

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/testenv"
)

// restartedAgent is a new agent on n's node with n's configuration, its
// log in the returned buffer: the agent after a restart.
func restartedAgent(t *testing.T, n *fakeNode) (*Agent, *bytes.Buffer) {
	t.Helper()
	var log bytes.Buffer
	a, err := New(Config{Root: n.root, Node: "node-1", MaxMilli: 2000, Logger: slog.New(slog.NewTextHandler(&log, nil)),
		Summary: SummaryConfig{Window: 20 * time.Second, Block: 5 * time.Second, Chunk: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, &log
}

// savedCheckpoint runs a fake node for 3 s and returns it and the bytes of
// its checkpoint in dir.
func savedCheckpoint(t *testing.T, dir string) (*fakeNode, []byte) {
	t.Helper()
	n := newFakeNode(t, "v2-kubepods-systemd", nil)
	n.run(3 * time.Second)
	if err := n.a.SaveState(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, stateFile+".tmp")); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left after a checkpoint: %v", err)
	}
	return n, b
}

// TestCheckpointUnusable: a checkpoint truncated anywhere (the agent killed
// while writing it without the rename, a full disk), damaged, of another
// format version or of another configuration is not used, and the agent
// starts: LoadState gives no error (the agent's start does not fail, so no
// crash loop), says why in the log, counts it by reason in
// throttlelab_agent_checkpoint_errors_total, and moves the file aside; the
// next start finds nothing to refuse.
func TestCheckpointUnusable(t *testing.T) {
	dir := t.TempDir()
	n, good := savedCheckpoint(t, dir)
	magic := len(stateMagic)
	flipped := bytes.Clone(good)
	flipped[len(flipped)-10] ^= 0x40
	otherVersion := bytes.Clone(good)
	binary.BigEndian.PutUint32(otherVersion[magic:], stateVersion+1)
	var v1 bytes.Buffer
	if err := gob.NewEncoder(&v1).Encode(&checkpoint{Version: 1, Window: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, reason, why string
		b                 []byte
	}{
		{"empty", CheckpointCorrupt, "EOF", nil},
		{"cut in the magic", CheckpointCorrupt, "", good[:magic-3]},
		{"cut in the header", CheckpointCorrupt, "truncated in its header", good[:magic+7]},
		{"cut in the summaries", CheckpointCorrupt, "truncated:", good[:len(good)/2]},
		{"one byte short", CheckpointCorrupt, "truncated:", good[:len(good)-1]},
		{"a bit flipped", CheckpointCorrupt, "checksum", flipped},
		{"garbage", CheckpointCorrupt, "", []byte("\x00\x01not a checkpoint at all\xff")},
		{"zeros (a full disk's hole)", CheckpointCorrupt, "", make([]byte, 4096)},
		{"another format version", CheckpointRefused, "format version 4", otherVersion},
		{"version 1 without header", CheckpointRefused, "format version 1", v1.Bytes()},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, stateFile)
			if err := os.WriteFile(path, c.b, 0o600); err != nil {
				t.Fatal(err)
			}
			a, log := restartedAgent(t, n)
			got, err := a.LoadState(dir)
			if err != nil || got != 0 {
				t.Fatalf("loaded %d, err %v: want nothing loaded and no error", got, err)
			}
			if e := a.CheckpointErrors(); e[c.reason] != 1 || sum(e) != 1 {
				t.Errorf("checkpoint errors %v, want one %s", e, c.reason)
			}
			if !strings.Contains(log.String(), "the window starts again") || !strings.Contains(log.String(), "reason="+c.reason) || !strings.Contains(log.String(), c.why) {
				t.Errorf("log %q: want the window starting again, reason=%s, %q", log, c.reason, c.why)
			}
			_, metrics := get(t, a.Handler(), "/metrics")
			if want := `throttlelab_agent_checkpoint_errors_total{reason="` + c.reason + `"} 1`; !strings.Contains(metrics, want) {
				t.Errorf("/metrics has no %s", want)
			}
			if b, err := os.ReadFile(path + ".bad"); err != nil || !bytes.Equal(b, c.b) {
				t.Errorf("the checkpoint is not moved aside to %s.bad: %v", stateFile, err)
			}
			again, _ := restartedAgent(t, n)
			if got, err := again.LoadState(dir); err != nil || got != 0 || sum(again.CheckpointErrors()) != 0 {
				t.Errorf("the next start: loaded %d, err %v, errors %v: want a clean start", got, err, again.CheckpointErrors())
			}
		})
	}
}

// TestCheckpointInterrupted: a write killed before its rename leaves the
// temporary file and the previous checkpoint, which is read whole; the
// next checkpoint replaces the leftover. A checkpoint that cannot be
// written (no such directory, as on a full or unwritable disk) keeps the
// previous one and is counted.
func TestCheckpointInterrupted(t *testing.T) {
	dir := t.TempDir()
	n, good := savedCheckpoint(t, dir)
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, good[:len(good)/3], 0o600); err != nil {
		t.Fatal(err)
	}
	a, _ := restartedAgent(t, n)
	if got, err := a.LoadState(dir); err != nil || got != 1 || sum(a.CheckpointErrors()) != 0 {
		t.Fatalf("loaded %d, err %v, errors %v: want the previous checkpoint's 1 summary", got, err, a.CheckpointErrors())
	}
	n.a = a
	n.run(2 * time.Second)
	if err := a.SaveState(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("the leftover temporary file is still there: %v", err)
	}
	after, _ := restartedAgent(t, n)
	if got, err := after.LoadState(dir); err != nil || got != 1 {
		t.Fatalf("after the next checkpoint: loaded %d, err %v", got, err)
	}

	missing := filepath.Join(dir, "gone")
	if err := a.SaveState(missing); err == nil {
		t.Fatal("a checkpoint into a missing directory: no error")
	}
	if got := a.CheckpointErrors()[CheckpointWrite]; got != 1 {
		t.Errorf("write errors %d, want 1", got)
	}
	if b, err := os.ReadFile(filepath.Join(dir, stateFile)); err != nil || len(b) == 0 {
		t.Errorf("the previous checkpoint: %v", err)
	}
}

// TestCheckpointVersion2 reads a checkpoint of the previous format (bare
// gob, version 2), which holds the same summaries.
func TestCheckpointVersion2(t *testing.T) {
	dir := t.TempDir()
	n, good := savedCheckpoint(t, dir)
	cp, err := decodeCheckpoint("test", good)
	if err != nil {
		t.Fatal(err)
	}
	cp.Version = 2
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(cp); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, stateFile), b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	a, _ := restartedAgent(t, n)
	if got, err := a.LoadState(dir); err != nil || got != 1 || sum(a.CheckpointErrors()) != 0 {
		t.Fatalf("a version 2 checkpoint: loaded %d, err %v, errors %v", got, err, a.CheckpointErrors())
	}
}

// TestOwnStateDir hands a directory to another user and makes it 0700, and
// leaves one already theirs alone.
func TestOwnStateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := OwnStateDir(dir, os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o755 {
		t.Errorf("a directory already the user's changed to %v", fi.Mode().Perm())
	}
	if err := OwnStateDir(filepath.Join(dir, "missing"), 1, 1); err == nil {
		t.Error("a missing directory: no error")
	}
	if os.Getuid() != 0 {
		testenv.Unavailable(t, "handing a directory to another user needs root")
	}
	if err := OwnStateDir(dir, 65532, 65532); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(dir)
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 65532 || st.Gid != 65532 || fi.Mode().Perm() != 0o700 {
		t.Errorf("owner %d:%d mode %v, want 65532:65532 0700", st.Uid, st.Gid, fi.Mode().Perm())
	}
}

func sum(m map[string]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}
