package watch

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/throttlelab/throttlelab/cgroup"
)

// Pressure is a cpu.pressure file (PSI, cgroup v2), as package cgroup
// parses it.
type Pressure = cgroup.Pressure

// ReadPressure reads dir/cpu.pressure.
func ReadPressure(dir string) (Pressure, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.pressure"))
	if err != nil {
		return Pressure{}, err
	}
	return cgroup.ParsePressure(b)
}

// CountProcs counts the processes in dir/cgroup.procs.
func CountProcs(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return 0, err
	}
	return bytes.Count(b, []byte("\n")), nil
}
