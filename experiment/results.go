package experiment

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/throttlelab/throttlelab/workload"
)

// NeighbourGroup names the cgroup of a neighbour in run index: the name
// usage.csv, throttled.csv and the run summary know it by.
func NeighbourGroup(index int, name string) string { return fmt.Sprintf("r%03d-n-%s", index, name) }

// IsNeighbourGroup reports whether group is neighbour name's group in some run.
func IsNeighbourGroup(group, name string) bool {
	return len(group) > 7 && group[0] == 'r' && group[5:7] == "n-" && group[7:] == name
}

// ReadBurstCycles reads a burst neighbour's burst-NAME.jsonl in a run's
// directory: one line per finished cycle.
func ReadBurstCycles(runDir, name string) ([]workload.BurstCycle, error) {
	f, err := os.Open(filepath.Join(runDir, "burst-"+name+".jsonl"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []workload.BurstCycle
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		var c workload.BurstCycle
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", f.Name(), line, err)
		}
		out = append(out, c)
	}
	return out, sc.Err()
}
