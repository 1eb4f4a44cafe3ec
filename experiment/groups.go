package experiment

import "fmt"

// NeighbourGroup names the cgroup of a neighbour in run index: the name
// usage.csv, throttled.csv and the run summary know it by.
func NeighbourGroup(index int, name string) string { return fmt.Sprintf("r%03d-n-%s", index, name) }

// IsNeighbourGroup reports whether group is neighbour name's group in some run.
func IsNeighbourGroup(group, name string) bool {
	return len(group) > 7 && group[0] == 'r' && group[5:7] == "n-" && group[7:] == name
}
