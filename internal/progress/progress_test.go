package progress

import (
	"strings"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func newFake(terminal bool, total int) (*Bar, *strings.Builder, *fakeClock) {
	var out strings.Builder
	clk := &fakeClock{t: time.Unix(1000, 0)}
	b := New(&out, "work", total)
	b.terminal, b.now, b.start = terminal, clk.now, clk.t
	return b, &out, clk
}

func TestPlainLinesAreThrottled(t *testing.T) {
	b, out, clk := newFake(false, 100)
	b.Set(1) // first update draws
	for i := 2; i < 50; i++ {
		clk.t = clk.t.Add(100 * time.Millisecond) // 4.8 s in all: no new line
		b.Set(i)
	}
	clk.t = clk.t.Add(time.Second)
	b.Set(50) // 5.9 s since the first line: draws, ETA = elapsed for the other half
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2:\n%s", len(lines), out)
	}
	if !strings.HasPrefix(lines[1], "work: 50/100 (50%) elapsed 6s eta 6s") {
		t.Errorf("line %q", lines[1])
	}
	b.Set(100) // completion always draws
	b.Finish()
	if !strings.Contains(out.String(), "100/100 (100%)") || strings.Contains(out.String(), "\r") {
		t.Errorf("plain output must end with the total and never use carriage returns:\n%s", out)
	}
}

func TestTerminalRedrawsInPlace(t *testing.T) {
	b, out, clk := newFake(true, 10)
	for i := 1; i <= 10; i++ {
		clk.t = clk.t.Add(200 * time.Millisecond)
		b.Set(i)
	}
	b.Finish()
	s := out.String()
	if strings.Count(s, "\r") != 11 || !strings.HasSuffix(s, "\n") || !strings.Contains(s, "[##############################] 10/10 100% eta 0s") {
		t.Errorf("terminal output %q", s)
	}
}

func TestSetNeverGoesBack(t *testing.T) {
	b, out, _ := newFake(false, 10)
	b.Set(5)
	b.Set(3) // a slower worker reporting late
	b.Finish()
	if strings.Contains(out.String(), "3/10") {
		t.Errorf("progress went backwards:\n%s", out)
	}
}

func TestIsTerminal(t *testing.T) {
	var sb strings.Builder
	if IsTerminal(&sb) {
		t.Error("a strings.Builder is not a terminal")
	}
}

func TestMillis(t *testing.T) {
	b, out, _ := newFake(false, 3000)
	b.Millis(true)
	b.Set(1500)
	if !strings.Contains(out.String(), "work: 1.5s/3s (50%)") {
		t.Errorf("timed progress %q", out.String())
	}
}
