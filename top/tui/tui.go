// Package tui is throttlelab top's interactive table, on bubbletea: sort by
// any column, filter by name, tree or flat, pause.
//
//	updates := make(chan []watch.Stats, 1)
//	go w.Run(ctx, time.Second, func(s []watch.Stats) bool { updates <- s; return true })
//	err := tui.Run(ctx, os.Stdin, os.Stdout, tui.Config{Source: w.Source(), View: top.View{Sort: 5, Desc: true}, Interval: time.Second, Updates: updates})
package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/throttlelab/throttlelab/top"
	"github.com/throttlelab/throttlelab/watch"
)

// Config is what the screen shows.
type Config struct {
	// Source names the hierarchy in the title.
	Source *watch.Source
	// View is the initial sort, order, layout and filter.
	View top.View
	// Interval is the time each report covers, for the title.
	Interval time.Duration
	// Updates delivers each report; the screen quits when it is closed.
	Updates <-chan []watch.Stats
}

// Run shows the table on out, reading keys from in, until the user quits,
// ctx ends or Updates closes.
func Run(ctx context.Context, in io.Reader, out io.Writer, cfg Config) error {
	p := tea.NewProgram(NewModel(cfg), tea.WithInput(in), tea.WithOutput(out), tea.WithAltScreen(), tea.WithContext(ctx))
	_, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // Ctrl-C or SIGTERM through ctx: a normal end
	}
	return err
}

// statsMsg is a report; closedMsg says there will be no more.
type (
	statsMsg  []watch.Stats
	closedMsg struct{}
)

// Model is the screen's state, a bubbletea model. Tests drive it with
// Update and read View.
type Model struct {
	cfg       Config
	view      top.View
	stats     []watch.Stats
	pending   []watch.Stats // arrived while paused
	paused    bool
	filtering bool // typing a filter
	offset    int  // first row shown
	width     int
	height    int
	updated   time.Time
}

// NewModel returns the screen for cfg.
func NewModel(cfg Config) Model {
	return Model{cfg: cfg, view: cfg.View, width: 120, height: 40}
}

func (m Model) wait() tea.Cmd {
	ch := m.cfg.Updates
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		s, ok := <-ch
		if !ok {
			return closedMsg{}
		}
		return statsMsg(s)
	}
}

// Init implements tea.Model.
func (m Model) Init() tea.Cmd { return m.wait() }

// Update implements tea.Model.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case statsMsg:
		if m.paused {
			m.pending = msg
		} else {
			m.stats, m.updated = msg, time.Now()
		}
		return m, m.wait()
	case closedMsg:
		return m, tea.Quit
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		return m, nil
	case tea.KeyMsg:
		// Keys typed faster than the screen reads arrive as one message
		// ("/cart" or "ssp"): each rune is a key of its own.
		if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Paste {
			var cmd tea.Cmd
			var next tea.Model = m
			for _, r := range msg.Runes {
				next, cmd = next.(Model).Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
				if cmd != nil {
					return next, cmd // quit
				}
			}
			return next, nil
		}
		if m.filtering {
			return m.filterKey(msg), nil
		}
		return m.key(msg)
	}
	return m, nil
}

func (m Model) filterKey(k tea.KeyMsg) Model {
	switch k.Type {
	case tea.KeyEnter:
		m.filtering = false
	case tea.KeyEsc:
		m.filtering, m.view.Filter = false, ""
	case tea.KeyBackspace:
		if r := []rune(m.view.Filter); len(r) > 0 {
			m.view.Filter = string(r[:len(r)-1])
		}
	case tea.KeyRunes, tea.KeySpace:
		m.view.Filter += string(k.Runes)
		if k.Type == tea.KeySpace {
			m.view.Filter += " "
		}
	}
	m.offset = 0
	return m
}

func (m Model) key(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	n := len(top.Columns)
	switch k.String() {
	case "q", "ctrl+c":
		return m, tea.Quit
	case "s", ">", "right":
		m.setSort((m.view.Sort + 1) % n)
	case "S", "<", "left":
		m.setSort((m.view.Sort + n - 1) % n)
	case "r":
		m.view.Desc = !m.view.Desc
	case "t":
		m.view.Tree = !m.view.Tree
		m.offset = 0
	case "p", " ":
		m.paused = !m.paused
		if !m.paused && m.pending != nil {
			m.stats, m.pending, m.updated = m.pending, nil, time.Now()
		}
	case "/":
		m.filtering = true
	case "esc":
		m.view.Filter = ""
	case "down", "j":
		m.offset++
	case "up", "k":
		m.offset--
	case "pgdown", "f":
		m.offset += m.pageRows()
	case "pgup", "b":
		m.offset -= m.pageRows()
	case "home", "g":
		m.offset = 0
	case "end", "G":
		m.offset = 1 << 30
	}
	return m, nil
}

// setSort sorts by column i: numbers high first, names A to Z.
func (m *Model) setSort(i int) {
	m.view.Sort, m.view.Desc = i, !top.Columns[i].Left
}

// pageRows is how many table rows fit: the screen less the title, the
// header and the help line.
func (m Model) pageRows() int { return max(1, m.height-3) }

var (
	titleStyle   = lipgloss.NewStyle().Bold(true)
	headerStyle  = lipgloss.NewStyle().Reverse(true)
	dimStyle     = lipgloss.NewStyle().Faint(true)
	hotStyle     = lipgloss.NewStyle().Foreground(lipgloss.Color("9"))  // throttled
	warmStyle    = lipgloss.NewStyle().Foreground(lipgloss.Color("11")) // peak at the limit
	errorStyle   = lipgloss.NewStyle().Foreground(lipgloss.Color("13"))
	pausedStyle  = lipgloss.NewStyle().Reverse(true).Bold(true)
	filterPrompt = lipgloss.NewStyle().Bold(true)
)

// View implements tea.Model.
func (m Model) View() string {
	rows := m.view.Rows(m.stats)
	widths := top.Widths(rows)
	fitName(widths, m.width)

	var b strings.Builder
	b.WriteString(m.title(len(rows)))
	b.WriteByte('\n')
	headers := top.Headers()
	arrow := "↑"
	if m.view.Desc {
		arrow = "↓"
	}
	headers[m.view.Sort] += arrow
	widths[m.view.Sort] = max(widths[m.view.Sort], len(headers[m.view.Sort])-len(arrow)+1)
	line := clip(top.FormatLine(headers, widths), m.width)
	b.WriteString(headerStyle.Render(pad(line, m.width)))
	b.WriteByte('\n')

	page := m.pageRows()
	off := max(0, min(m.offset, len(rows)-page))
	shown := 0
	for _, r := range rows[off:] {
		if shown == page {
			break
		}
		cells := r.Cells()
		cells[0] = shorten(cells[0], widths[0])
		b.WriteString(style(r).Render(clip(top.FormatLine(cells, widths), m.width)))
		b.WriteByte('\n')
		shown++
	}
	for ; shown < page; shown++ {
		b.WriteByte('\n')
	}
	b.WriteString(m.help())
	return b.String()
}

func (m Model) title(n int) string {
	src := "cgroups"
	if m.cfg.Source != nil {
		src = fmt.Sprintf("cgroup %s (%s)", m.cfg.Source.Version, m.cfg.Source.Mode)
	}
	layout := "flat"
	if m.view.Tree {
		layout = "tree"
	}
	t := titleStyle.Render("throttlelab top") + fmt.Sprintf("  %d groups  %s  interval %s  sort %s  %s", n, src, m.cfg.Interval, top.Columns[m.view.Sort].Key, layout)
	if m.stats == nil {
		t += "  (first report after one interval)"
	}
	if m.view.Filter != "" || m.filtering {
		t += "  " + filterPrompt.Render("filter: ") + m.view.Filter
		if m.filtering {
			t += "_"
		}
	}
	if m.paused {
		t += "  " + pausedStyle.Render(" PAUSED ")
	}
	return clip(t, m.width+40) // styles add escape bytes
}

func (m Model) help() string {
	if m.filtering {
		return dimStyle.Render("type to filter by name or path  enter keep  esc clear")
	}
	return dimStyle.Render(clip("s/S,</> sort  r reverse  / filter  t tree  p pause  ↑↓ scroll  q quit   PEAK* sliding windows (no quota)", m.width))
}

// style colours a row: throttled red, a peak at its limit yellow, context
// rows (ancestors kept for a filtered tree) dim.
func style(r top.Row) lipgloss.Style {
	switch {
	case r.Error != "":
		return errorStyle
	case r.Context:
		return dimStyle
	case r.ThrottledPeriods > 0:
		return hotStyle
	case r.LimitCores != nil && r.PeakPeriodCores != nil && *r.PeakPeriodCores >= 0.9**r.LimitCores:
		return warmStyle
	}
	return lipgloss.NewStyle()
}

// fitName narrows the name column so the table fits the screen.
func fitName(widths []int, screen int) {
	total := 0
	for _, w := range widths {
		total += w + 2
	}
	if over := total - 2 - screen; over > 0 {
		widths[0] = max(12, widths[0]-over)
	}
}

// shorten keeps a name's indentation and its end, which tells groups apart.
func shorten(s string, w int) string {
	r := []rune(s)
	if len(r) <= w {
		return s
	}
	indent := len(r) - len([]rune(strings.TrimLeft(s, " ")))
	keep := w - indent - 1
	if keep < 1 {
		return string(r[:w])
	}
	return string(r[:indent]) + "…" + string(r[len(r)-keep:])
}

func clip(s string, w int) string {
	if r := []rune(s); w > 0 && len(r) > w {
		return string(r[:w])
	}
	return s
}

func pad(s string, w int) string {
	if n := len([]rune(s)); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}
