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
		if g == fmt.Sprintf("r%03d-%s", index, name) || g == fmt.Sprintf("r%03d-n-%s", index, name) {
			return u.Usage[i], true
		}
	}
	return nil, false
}

// ReadUsage reads usage.csv in a run's directory.
func ReadUsage(runDir string) (*Usage, error) {
	path := filepath.Join(runDir, "usage.csv")
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
	u := &Usage{Groups: head[1:], Usage: make([][]time.Duration, len(head)-1)}
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
				u.At = append(u.At, time.Duration(n))
			} else {
				u.Usage[i-1] = append(u.Usage[i-1], time.Duration(n))
			}
		}
	}
	return u, sc.Err()
}
