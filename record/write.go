package record

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/loadgen"
)

// WriteJSON writes v as indented JSON.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// WriteHist writes a latency histogram as latency.hdr.
func WriteHist(path string, h *hdrhistogram.Histogram, start time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := loadgen.WriteHistogram(f, h, start); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteSpec writes the resolved spec as dir/spec.yaml: what every reader of
// the directory takes the experiment from.
func WriteSpec(dir string, e *experiment.Experiment) error {
	b, err := experiment.Marshal(e)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, SpecFile), b, 0o644)
}

// WriteFileAtomic writes path through a temporary file in the same directory
// and renames it into place, so a reader never sees half a file.
func WriteFileAtomic(path string, write func(*os.File) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path))
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600; the result is an ordinary readable file.
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
