package tui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/throttlelab/throttlelab/top"
	"github.com/throttlelab/throttlelab/watch"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// report runs a watcher over a fake tree for one interval, with the v2 pod's
// container busy and throttled in it.
func report(t *testing.T) ([]watch.Stats, *watch.Source) {
	t.Helper()
	root := watchtest.FakeRoot(t, "v2-kubepods-systemd")
	w, err := watch.New(watch.Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Sample(0)
	w.Sample(time.Second)
	return w.Report(), w.Source()
}

func keys(m tea.Model, ks ...string) tea.Model {
	for _, k := range ks {
		var msg tea.KeyMsg
		switch k {
		case "enter":
			msg = tea.KeyMsg{Type: tea.KeyEnter}
		case "esc":
			msg = tea.KeyMsg{Type: tea.KeyEsc}
		default:
			msg = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
		}
		m, _ = m.Update(msg)
	}
	return m
}

// lines returns the table rows on screen (after the title and header).
func lines(m tea.Model) []string {
	var out []string
	for _, l := range strings.Split(m.View(), "\n")[2:] {
		if strings.TrimSpace(l) != "" && !strings.Contains(l, "q quit") && !strings.Contains(l, "esc clear") {
			out = append(out, l)
		}
	}
	return out
}

func TestKeys(t *testing.T) {
	stats, src := report(t)
	var m tea.Model = NewModel(Config{Source: src, View: top.View{Sort: top.ColumnIndex("name")}, Interval: time.Second})
	m, _ = m.Update(tea.WindowSizeMsg{Width: 140, Height: 20})
	if !strings.Contains(m.View(), "first report") {
		t.Errorf("before the first report the title should say one is coming:\n%s", m.View())
	}
	m, _ = m.Update(statsMsg(stats))
	if got := lines(m); len(got) != 9 || !strings.HasPrefix(got[0], "/ ") {
		t.Fatalf("9 groups sorted by name, / first; got\n%s", strings.Join(got, "\n"))
	}

	// Sort: s moves to the next column (kind), S back, </> too; r reverses.
	m = keys(m, "s")
	if !strings.Contains(m.View(), "sort kind") || !strings.Contains(lines(m)[0], "container") {
		t.Errorf("s sorts by kind:\n%s", m.View())
	}
	m = keys(m, "S", "<")
	if !strings.Contains(m.View(), "sort procs") || !strings.Contains(m.View(), "PROCS↓") {
		t.Errorf("S then < go back two columns to procs, high first:\n%s", m.View())
	}
	m = keys(m, "r")
	if !strings.Contains(m.View(), "PROCS↑") {
		t.Errorf("r reverses:\n%s", m.View())
	}

	// Filter: / then text then enter keeps the groups whose name holds it.
	m = keys(m, "/", "api", "enter")
	got := lines(m)
	if len(got) != 2 || !strings.Contains(m.View(), "filter: api") {
		t.Fatalf("filter api: want the pod and its container, got\n%s", strings.Join(got, "\n"))
	}
	// Tree: ancestors come back as context, children indented.
	m = keys(m, "t")
	got = lines(m)
	if len(got) != 5 || !strings.HasPrefix(got[0], "/ ") || !strings.HasPrefix(got[4], "        web/api-0/api") {
		t.Errorf("tree with filter api: want / > kubepods > burstable > pod > container, got\n%s", strings.Join(got, "\n"))
	}
	m = keys(m, "esc", "t")
	if len(lines(m)) != 9 {
		t.Errorf("esc clears the filter, t goes flat:\n%s", m.View())
	}

	// Pause: a report that arrives is held until p again.
	m = keys(m, "p")
	m, _ = m.Update(statsMsg(stats[:1]))
	if len(lines(m)) != 9 || !strings.Contains(m.View(), "PAUSED") {
		t.Errorf("paused, the screen must not change:\n%s", m.View())
	}
	m = keys(m, "p")
	if len(lines(m)) != 1 || strings.Contains(m.View(), "PAUSED") {
		t.Errorf("resumed, the held report shows:\n%s", m.View())
	}

	// Keys typed fast arrive together: each counts.
	m = keys(m, "tp")
	if !strings.Contains(m.View(), "tree") || !strings.Contains(m.View(), "PAUSED") {
		t.Errorf("\"tp\" in one message: tree and paused:\n%s", m.View())
	}
	if _, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")}); cmd == nil {
		t.Error("q does not quit")
	}
}

func TestNarrowScreen(t *testing.T) {
	stats, src := report(t)
	var m tea.Model = NewModel(Config{Source: src, View: top.View{Tree: true}, Interval: time.Second})
	m, _ = m.Update(tea.WindowSizeMsg{Width: 90, Height: 8})
	m, _ = m.Update(statsMsg(stats))
	view := m.View()
	for i, l := range strings.Split(view, "\n") {
		if n := len([]rune(stripANSI(l))); n > 90 {
			t.Errorf("line %d is %d wide on a 90-column screen: %q", i, n, l)
		}
	}
	if got := len(strings.Split(view, "\n")); got != 8 {
		t.Errorf("%d lines on an 8-line screen", got)
	}
	// Scrolling moves the rows, not past the end.
	m = keys(m, "G")
	if last := lines(m); !strings.Contains(last[len(last)-1], "e5e5") {
		t.Errorf("G shows the last rows:\n%s", m.View())
	}
}

func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			for i < len(s) && !(s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z') {
				i++
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
