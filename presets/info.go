package presets

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/runner"
)

// Info is preset.json: which preset a results directory ran, and how it was
// scaled, so --resume and the checks know.
type Info struct {
	Preset string `json:"preset"`
	Scaled string `json:"scaled,omitempty"`
}

// ReadInfo reads dir/preset.json; nil if the directory ran no preset.
func ReadInfo(dir string) (*Info, error) {
	b, err := os.ReadFile(filepath.Join(dir, record.PresetFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var i Info
	if err := json.Unmarshal(b, &i); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, record.PresetFile), err)
	}
	return &i, nil
}

// Write records the preset in dir (nothing for a nil Info).
func (i *Info) Write(dir string) error {
	if i == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return record.WriteJSON(filepath.Join(dir, record.PresetFile), i)
}

// Judge computes the preset's check over the results in dir and writes
// verdict.json (nil verdict for a nil Info: no preset). s, if not nil, is
// dir's summary with its intervals, already read (runner.Run's): the
// requests are then not read again.
func (i *Info) Judge(dir string, s *record.ExperimentSummary) (runner.Verdict, error) {
	if i == nil {
		return nil, nil
	}
	p, ok := Lookup(i.Preset)
	if !ok {
		return nil, fmt.Errorf("%s ran preset %q, which this version does not have", dir, i.Preset)
	}
	v, err := p.evaluate(dir, i.Scaled, s)
	if v == nil {
		return nil, err // no *verdict.Verdict(nil) inside a non-nil runner.Verdict
	}
	return v, err
}
