package top

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/watch"
)

// Column is one column of the table: how a cell reads and how rows sort by
// it.
type Column struct {
	// Key names the column for --sort and the interactive view.
	Key string
	// Header is its heading.
	Header string
	// Help says what it shows.
	Help string
	// Left aligns the cell left (names); numbers align right.
	Left bool
	// Cell formats a row's value ("-" where there is none).
	Cell func(*watch.Stats) string
	// value orders rows: numbers (text columns compare their cells).
	value func(*watch.Stats) float64
}

func cores(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 2, 64)
}

func orNeg(v *float64) float64 {
	if v == nil {
		return -1
	}
	return *v
}

// Columns are the table's columns, in order.
var Columns = []Column{
	{Key: "name", Header: "NAME", Left: true, Help: "the group as its owner knows it", Cell: func(s *watch.Stats) string { return s.Name }},
	{Key: "kind", Header: "KIND", Left: true, Help: "pod, container, qos, slice, service, scope, throttlelab, cgroup", Cell: func(s *watch.Stats) string { return string(s.Kind) }},
	{Key: "limit", Header: "LIMIT", Help: "quota per period, cores", Cell: func(s *watch.Stats) string { return cores(s.LimitCores) }, value: func(s *watch.Stats) float64 { return orNeg(s.LimitCores) }},
	{Key: "burst", Header: "BURST", Help: "burst per period, cores", Cell: func(s *watch.Stats) string {
		if s.LimitCores == nil {
			return "-"
		}
		return cores(&s.BurstCores)
	}, value: func(s *watch.Stats) float64 { return s.BurstCores }},
	{Key: "request", Header: "REQ", Help: "request read back from shares or weight, cores", Cell: func(s *watch.Stats) string { return cores(s.RequestCores) }, value: func(s *watch.Stats) float64 { return orNeg(s.RequestCores) }},
	{Key: "usage", Header: "USAGE", Help: "mean use over the interval, cores", Cell: func(s *watch.Stats) string { return cores(s.UsageCores) }, value: func(s *watch.Stats) float64 { return orNeg(s.UsageCores) }},
	{Key: "peak", Header: "PEAK", Help: "highest use within one period, cores (* over sliding windows: no quota, or the period timer idle)", Cell: func(s *watch.Stats) string {
		c := cores(s.PeakPeriodCores)
		if s.PeakBasis == watch.BasisWindow {
			c += "*"
		} else if s.PeakPeriodCores != nil {
			c += " "
		}
		return c
	}, value: func(s *watch.Stats) float64 { return orNeg(s.PeakPeriodCores) }},
	{Key: "throttled", Header: "THR%", Help: "throttled share of periods", Cell: func(s *watch.Stats) string {
		if s.Periods == 0 {
			return "-"
		}
		return strconv.FormatFloat(100*s.ThrottledPeriodsRatio, 'f', 1, 64)
	}, value: func(s *watch.Stats) float64 { return s.ThrottledPeriodsRatio }},
	{Key: "throttled-time", Header: "THR s/s", Help: "throttled time per second", Cell: func(s *watch.Stats) string {
		if s.Periods == 0 && s.ThrottledSecondsPerSecond == 0 {
			return "-"
		}
		return strconv.FormatFloat(s.ThrottledSecondsPerSecond, 'f', 3, 64)
	}, value: func(s *watch.Stats) float64 { return s.ThrottledSecondsPerSecond }},
	{Key: "bursts", Header: "BURSTS", Help: "periods that used burst", Cell: func(s *watch.Stats) string {
		if s.LimitCores == nil {
			return "-"
		}
		return strconv.FormatUint(s.Bursts, 10)
	}, value: func(s *watch.Stats) float64 { return float64(s.Bursts) }},
	{Key: "pressure", Header: "PSI%", Help: "cpu.pressure some, share of the interval (v2)", Cell: func(s *watch.Stats) string {
		if s.PressureSomeRatio == nil {
			return "-"
		}
		return strconv.FormatFloat(100**s.PressureSomeRatio, 'f', 1, 64)
	}, value: func(s *watch.Stats) float64 { return orNeg(s.PressureSomeRatio) }},
	{Key: "stall-quota", Header: "QUOTA%", Help: "the part of PSI% the quota held the group back, share of the interval (? unknown: no cpu.pressure)", Cell: func(s *watch.Stats) string {
		return stallCell(s, s.StallQuotaRatio)
	}, value: func(s *watch.Stats) float64 { return orNeg(s.StallQuotaRatio) }},
	{Key: "stall-contention", Header: "CONT%", Help: "the part of PSI% the group waited for a CPU while not throttled, share of the interval (? unknown: no cpu.pressure)", Cell: func(s *watch.Stats) string {
		return stallCell(s, s.StallContentionRatio)
	}, value: func(s *watch.Stats) float64 { return orNeg(s.StallContentionRatio) }},
	{Key: "procs", Header: "PROCS", Help: "processes in the group itself", Cell: func(s *watch.Stats) string { return strconv.Itoa(s.Procs) }, value: func(s *watch.Stats) float64 { return float64(s.Procs) }},
}

// stallCell is a cell of the stall's split: "?" where it is unknown.
func stallCell(s *watch.Stats, v *float64) string {
	if v == nil {
		if s.StallSplit == watch.StallSplitUnknown {
			return "?"
		}
		return "-"
	}
	return strconv.FormatFloat(100**v, 'f', 1, 64)
}

// ColumnIndex returns the index of the column with key, or -1.
func ColumnIndex(key string) int {
	return slices.IndexFunc(Columns, func(c Column) bool { return c.Key == key })
}

// ColumnKeys lists the column keys, for help texts.
func ColumnKeys() []string {
	keys := make([]string, len(Columns))
	for i, c := range Columns {
		keys[i] = c.Key
	}
	return keys
}

// View says how to lay rows out.
type View struct {
	// Sort is the index of the column to sort by; Desc sorts high first.
	Sort int
	Desc bool
	// Tree lays groups out under their parents (sorted among siblings).
	Tree bool
	// Filter keeps groups whose name or path holds it (case-insensitive);
	// in a tree their ancestors stay too.
	Filter string
}

// Row is one line of the table.
type Row struct {
	*watch.Stats
	// Depth is the number of shown ancestors (tree view).
	Depth int
	// Context is true for an ancestor kept only to hold a match (tree view
	// with a filter).
	Context bool
}

func (v View) compare(a, b *watch.Stats) int {
	c := 0
	col := Columns[max(0, min(v.Sort, len(Columns)-1))]
	if col.value != nil {
		c = cmp.Compare(col.value(a), col.value(b))
	} else {
		c = strings.Compare(col.Cell(a), col.Cell(b))
	}
	if v.Desc {
		c = -c
	}
	if c == 0 {
		c = strings.Compare(a.Path, b.Path)
	}
	return c
}

// Rows orders and filters stats for display.
func (v View) Rows(stats []watch.Stats) []Row {
	f := strings.ToLower(v.Filter)
	match := func(s *watch.Stats) bool {
		return f == "" || strings.Contains(strings.ToLower(s.Name), f) || strings.Contains(strings.ToLower(s.Path), f)
	}
	if !v.Tree {
		var rows []Row
		for i := range stats {
			if match(&stats[i]) {
				rows = append(rows, Row{Stats: &stats[i]})
			}
		}
		slices.SortFunc(rows, func(a, b Row) int { return v.compare(a.Stats, b.Stats) })
		return rows
	}
	byPath := make(map[string]*watch.Stats, len(stats))
	for i := range stats {
		byPath[stats[i].Path] = &stats[i]
	}
	parentOf := func(p string) string {
		for p != "/" && p != "" {
			i := strings.LastIndexByte(p, '/')
			if i <= 0 {
				p = "/"
			} else {
				p = p[:i]
			}
			if _, ok := byPath[p]; ok {
				return p
			}
		}
		return ""
	}
	keep := map[string]bool{} // path -> kept as a match (true) or as context (false)
	for i := range stats {
		s := &stats[i]
		if !match(s) {
			continue
		}
		keep[s.Path] = true
		for p := parentOf(s.Path); p != ""; p = parentOf(p) {
			if _, ok := keep[p]; ok {
				break
			}
			keep[p] = false
		}
	}
	children := map[string][]*watch.Stats{}
	var roots []*watch.Stats
	for p := range keep {
		s := byPath[p]
		if par := parentOf(p); par != "" {
			children[par] = append(children[par], s)
		} else {
			roots = append(roots, s)
		}
	}
	var rows []Row
	var walk func([]*watch.Stats, int)
	walk = func(level []*watch.Stats, depth int) {
		slices.SortFunc(level, func(a, b *watch.Stats) int { return v.compare(a, b) })
		for _, s := range level {
			rows = append(rows, Row{Stats: s, Depth: depth, Context: !keep[s.Path]})
			walk(children[s.Path], depth+1)
		}
	}
	walk(roots, 0)
	return rows
}

// Cells returns a row's cells, the name indented by its depth.
func (r Row) Cells() []string {
	out := make([]string, len(Columns))
	for i, c := range Columns {
		out[i] = c.Cell(r.Stats)
	}
	if r.Error != "" {
		for i := 2; i < len(out); i++ {
			out[i] = ""
		}
		out[len(out)-1] = r.Error
	}
	out[0] = strings.Repeat("  ", r.Depth) + out[0]
	return out
}

// Widths returns each column's width for the rows (at least the header's).
func Widths(rows []Row) []int {
	w := make([]int, len(Columns))
	for i, c := range Columns {
		w[i] = len(c.Header)
	}
	for _, r := range rows {
		for i, c := range r.Cells() {
			if r.Error != "" && i == len(Columns)-1 {
				continue // the error runs on past the last column
			}
			w[i] = max(w[i], len(c))
		}
	}
	return w
}

// FormatLine lays cells out in columns of the given widths.
func FormatLine(cells []string, widths []int) string {
	var b strings.Builder
	for i, c := range cells {
		if i > 0 {
			b.WriteString("  ")
		}
		pad := max(0, widths[i]-len(c))
		switch {
		case Columns[i].Left && i == len(cells)-1:
			b.WriteString(c)
		case Columns[i].Left:
			b.WriteString(c + strings.Repeat(" ", pad))
		default:
			b.WriteString(strings.Repeat(" ", pad) + c)
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// Headers returns the column headings.
func Headers() []string {
	h := make([]string, len(Columns))
	for i, c := range Columns {
		h[i] = c.Header
	}
	return h
}

// WriteTable prints the rows as a plain table, with a line saying what the
// figures cover.
func WriteTable(w io.Writer, src *watch.Source, rows []Row, interval time.Duration) error {
	widths := Widths(rows)
	fmt.Fprintf(w, "%d groups, cgroup %s (%s), interval %s; PEAK* is over sliding windows (no quota, or no period seen)\n", len(rows), src.Version, src.Mode, interval)
	if _, err := fmt.Fprintln(w, FormatLine(Headers(), widths)); err != nil {
		return err
	}
	for _, r := range rows {
		if _, err := fmt.Fprintln(w, FormatLine(r.Cells(), widths)); err != nil {
			return err
		}
	}
	return nil
}
