package record

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Usage is a run's usage.csv: the cumulative CPU time of each sampled group
// (instances, then neighbours) at each sample, every 10 ms.
type Usage struct {
	// Groups are the column names ("r003-limited-0", "r003-n-burst").
	Groups []string
	// At is each sample's time since sampling started.
	At []time.Duration
	// Usage[g][i] is group g's cumulative CPU time at sample i.
	Usage [][]time.Duration
}

// Column returns the samples of the group that instance or neighbour name
// ran in, in run index (its group is rNNN-NAME or rNNN-n-NAME), or false.
func (u *Usage) Column(index int, name string) ([]time.Duration, bool) {
	for i, g := range u.Groups {
		if g == InstanceGroup(index, name) || g == NeighbourGroup(index, name) {
			return u.Usage[i], true
		}
	}
	return nil, false
}

// Columns is a run's cumulative per-group CSV (usage.csv, throttled.csv):
// a t_ns column, then one column per group.
type Columns struct {
	Names []string
	At    []time.Duration
	Cols  [][]int64
}

// ReadColumns reads one of a run's cumulative CSV files.
func ReadColumns(path string) (*Columns, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	if !sc.Scan() {
		return nil, fmt.Errorf("%s: empty", path)
	}
	head := strings.Split(sc.Text(), ",")
	if head[0] != "t_ns" {
		return nil, fmt.Errorf("%s: first column is %q, not t_ns", path, head[0])
	}
	c := &Columns{Names: head[1:], Cols: make([][]int64, len(head)-1)}
	for line := 2; sc.Scan(); line++ {
		fs := strings.Split(sc.Text(), ",")
		if len(fs) != len(head) {
			return nil, fmt.Errorf("%s:%d: %d fields, want %d", path, line, len(fs), len(head))
		}
		for i, v := range fs {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, line, err)
			}
			if i == 0 {
				c.At = append(c.At, time.Duration(n))
			} else {
				c.Cols[i-1] = append(c.Cols[i-1], n)
			}
		}
	}
	return c, sc.Err()
}

// ReadUsage reads usage.csv in a run's directory.
func ReadUsage(runDir string) (*Usage, error) {
	c, err := ReadColumns(filepath.Join(runDir, UsageFile))
	if err != nil {
		return nil, err
	}
	u := &Usage{At: c.At, Groups: c.Names, Usage: make([][]time.Duration, len(c.Cols))}
	for i, col := range c.Cols {
		u.Usage[i] = make([]time.Duration, len(col))
		for k, v := range col {
			u.Usage[i][k] = time.Duration(v)
		}
	}
	return u, nil
}
