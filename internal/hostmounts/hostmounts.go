// Package hostmounts tells whether the host's mounts changed: a snapshot of
// /proc/self/mountinfo before a run, compared with one after. The VM harness
// and CI use it to show that the tests left the host's mounts (its cgroup
// hierarchies above all) as they found them.
//
//	before, err := hostmounts.Read()
//	...run...
//	after, err := hostmounts.Read()
//	if d := hostmounts.Diff(before, after); len(d) > 0 { ... }
package hostmounts

import (
	"os"
	"slices"
	"strings"
)

// Path is the file Read reads: the calling process's mount table.
const Path = "/proc/self/mountinfo"

// Read returns the calling process's mount table (Path).
func Read() ([]byte, error) { return os.ReadFile(Path) }

// Diff compares two mount tables line by line, as multisets: it returns a
// line "- LINE" for each mount in before and not in after, then "+ LINE"
// for each mount in after and not in before, each group in its table's
// order; nil when they hold the same mounts. A mount unmounted and mounted
// again shows as both (its mount ID changes). Order alone is no difference.
func Diff(before, after []byte) []string {
	b, a := lines(before), lines(after)
	count := map[string]int{}
	for _, l := range a {
		count[l]++
	}
	var gone []string
	for _, l := range b {
		if count[l] > 0 {
			count[l]--
			continue
		}
		gone = append(gone, "- "+l)
	}
	count = map[string]int{}
	for _, l := range b {
		count[l]++
	}
	var added []string
	for _, l := range a {
		if count[l] > 0 {
			count[l]--
			continue
		}
		added = append(added, "+ "+l)
	}
	return slices.Concat(gone, added)
}

func lines(b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
