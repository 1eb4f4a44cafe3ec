// Package progress draws a progress bar with an ETA on a terminal, or writes a
// plain line every few seconds when the output is a pipe or a file.
package progress

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// Bar reports the progress of a job with a known number of steps. It is safe for
// concurrent use.
type Bar struct {
	w        io.Writer
	label    string
	total    int
	terminal bool
	now      func() time.Time

	mu       sync.Mutex
	start    time.Time
	lastDraw time.Time
	done     int
	drawn    int // done at the last draw, -1 before the first
	// millis shows done and total as durations (they count milliseconds).
	millis bool
}

// Millis makes the bar show its counts as durations: for jobs that run for a
// time rather than a number of steps.
func (b *Bar) Millis(on bool) {
	b.mu.Lock()
	b.millis = on
	b.mu.Unlock()
}

func (b *Bar) count(n int) string {
	if b.millis {
		return (time.Duration(n) * time.Millisecond).Round(100 * time.Millisecond).String()
	}
	return strconv.Itoa(n)
}

// New returns a bar for total steps written to w. It redraws in place when w is a
// terminal and writes a line at most every 5 seconds otherwise.
func New(w io.Writer, label string, total int) *Bar {
	return &Bar{w: w, label: label, total: total, terminal: IsTerminal(w), now: time.Now, start: time.Now(), drawn: -1}
}

// IsTerminal reports whether w is a terminal (on any system x/term knows).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return term.IsTerminal(int(f.Fd()))
}

// SetTotal changes the number of steps (for jobs that learn it as they start).
func (b *Bar) SetTotal(total int) {
	b.mu.Lock()
	b.total = total
	b.mu.Unlock()
}

// Set records that done steps are complete and redraws if it is time to.
func (b *Bar) Set(done int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if done > b.done {
		b.done = done
	}
	now := b.now()
	every := 5 * time.Second
	if b.terminal {
		every = 100 * time.Millisecond
	}
	if (b.done < b.total && now.Sub(b.lastDraw) < every) || (b.done == b.drawn && !b.terminal) {
		return
	}
	b.lastDraw = now
	b.draw(now)
}

// Finish draws the final state (unless a plain line already showed it) and ends
// the line.
func (b *Bar) Finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.terminal || b.done != b.drawn {
		b.draw(b.now())
	}
	if b.terminal {
		fmt.Fprintln(b.w)
	}
}

func (b *Bar) draw(now time.Time) {
	b.drawn = b.done
	elapsed := now.Sub(b.start)
	frac := 0.0
	if b.total > 0 {
		frac = float64(b.done) / float64(b.total)
	}
	eta := "?"
	if b.done > 0 && b.done < b.total {
		rem := time.Duration(float64(elapsed) * (1 - frac) / frac)
		eta = rem.Round(time.Second).String()
	} else if b.done >= b.total {
		eta = "0s"
	}
	if !b.terminal {
		fmt.Fprintf(b.w, "%s: %s/%s (%.0f%%) elapsed %s eta %s\n", b.label, b.count(b.done), b.count(b.total), 100*frac, elapsed.Round(time.Second), eta)
		return
	}
	const width = 30
	n := int(frac * width)
	fmt.Fprintf(b.w, "\r%s [%s%s] %s/%s %3.0f%% eta %s  ", b.label, strings.Repeat("#", n), strings.Repeat(".", width-n), b.count(b.done), b.count(b.total), 100*frac, eta)
}
