package record

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
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

// SampledAt reports whether c (nil: none) was sampled at exactly the
// times at, as a throttled.csv beside the usage.csv it matches.
func (c *Columns) SampledAt(at []time.Duration) bool {
	if c == nil || len(c.At) != len(at) {
		return false
	}
	for i := range at {
		if c.At[i] != at[i] {
			return false
		}
	}
	return true
}

// Column returns the column of group name (nil: none, or c is nil).
func (c *Columns) Column(name string) []int64 {
	if c == nil {
		return nil
	}
	for i, n := range c.Names {
		if n == name {
			return c.Cols[i]
		}
	}
	return nil
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
		// By hand, not strings.Split and strconv: a run has one line every
		// 10 ms, so a long run's files hold hundreds of thousands.
		b := sc.Bytes()
		field := 0
		for {
			n, rest, ok := parseInt(b)
			if !ok {
				return nil, fmt.Errorf("%s:%d: field %d: want an integer", path, line, field+1)
			}
			if field >= len(head) {
				return nil, fmt.Errorf("%s:%d: more than %d fields", path, line, len(head))
			}
			if field == 0 {
				c.At = append(c.At, time.Duration(n))
			} else {
				c.Cols[field-1] = append(c.Cols[field-1], n)
			}
			field++
			if len(rest) == 0 {
				break
			}
			b = rest[1:] // the comma
		}
		if field != len(head) {
			return nil, fmt.Errorf("%s:%d: %d fields, want %d", path, line, field, len(head))
		}
	}
	return c, sc.Err()
}

// parseInt parses a decimal integer at the start of b, up to a comma or
// the end, and returns the rest from the comma.
func parseInt(b []byte) (n int64, rest []byte, ok bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	i := 0
	for ; i < len(b) && b[i] != ','; i++ {
		d := b[i] - '0'
		if d > 9 || n > (math.MaxInt64-int64(d))/10 {
			return 0, nil, false
		}
		n = n*10 + int64(d)
	}
	if i == 0 {
		return 0, nil, false
	}
	if neg {
		n = -n
	}
	return n, b[i:], true
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
