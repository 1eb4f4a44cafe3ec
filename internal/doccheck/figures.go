package doccheck

import (
	"fmt"
	"regexp"
	"strings"
)

// A measured figure must say when and where it was measured. The rule, as
// docs/testing.md states it:
//
// A paragraph (prose lines between blank lines, or one table row) holds a
// measured figure when one of its sentences (or clauses, split at a period,
// semicolon or colon) has a number with a unit (ms, µs, ns, s, %, cores,
// MiB, KiB, req/s, events/s) and a word that says it was measured here:
// "measured", "took", "on this machine", "on the reference machine", "on a
// VM". Such a paragraph needs a date (YYYY-MM-DD) and a machine ("machine",
// "VM", "rig", "node" or "host"): in itself, in the first paragraph of its
// section (a section dated once, under its heading), or in the page's first
// paragraph (a page measured at once, as docs/findings.md).
// Generated blocks are exempt (a test regenerates them), and so are code
// blocks (commands and their output).

var (
	figureRE  = regexp.MustCompile(`\d(\.\d+)?\s*(ms|µs|us|ns|s|%|cores?|MiB|KiB|req/s|events/s)\b|\d%`)
	measureRE = regexp.MustCompile(`(?i)\b(measured|took)\b|on (this|the reference) machine|on a VM`)
	dateRE    = regexp.MustCompile(`\b20\d\d-\d\d-\d\d\b`)
	machineRE = regexp.MustCompile(`(?i)\b(machine|VM|rig|node|host)\b`)
)

// dated says whether a paragraph names a date and a machine.
func dated(p string) bool { return dateRE.MatchString(p) && machineRE.MatchString(p) }

// sentenceRE splits a paragraph into sentences (and clauses after a
// semicolon or a colon): the word that says a figure was measured must be in
// the figure's own sentence.
var sentenceRE = regexp.MustCompile(`[.;:]\s+`)

// measuredFigure says whether a paragraph holds a measured figure: a
// sentence with a number and a unit, and a word that says it was measured.
func measuredFigure(p string) bool {
	for _, s := range sentenceRE.Split(p, -1) {
		if figureRE.MatchString(s) && measureRE.MatchString(s) {
			return true
		}
	}
	return false
}

// UndatedFigures returns the paragraphs of the checked files (Files) that
// hold a measured figure without a date and a machine, each as "FILE:LINE:
// the paragraph's start".
func UndatedFigures(root string) ([]string, error) {
	var out []string
	err := eachFile(root, func(f string, src []byte) error {
		out = append(out, undatedIn(f, string(src))...)
		return nil
	})
	return out, err
}

// undatedIn applies the rule to one file's text.
func undatedIn(file, src string) []string {
	type para struct {
		line int
		text string
	}
	var (
		out       []string
		cur       []string
		start     int
		sectionOK bool // the section's first paragraph is dated
		first     bool // the next paragraph is the section's first
		pageOK    bool // the page's first paragraph is dated
		pageFirst = true
		fenced    bool
		generated bool
	)
	flush := func() {
		if len(cur) == 0 {
			return
		}
		p := para{start, strings.Join(cur, " ")}
		cur = nil
		if first {
			sectionOK, first = dated(p.text), false
		}
		if pageFirst {
			pageOK, pageFirst = dated(p.text), false
		}
		if measuredFigure(p.text) && !dated(p.text) && !sectionOK && !pageOK {
			out = append(out, fmt.Sprintf("%s:%d: %.100s", file, p.line, p.text))
		}
	}
	lines := strings.Split(src, "\n")
	for i, line := range lines {
		n := i + 1
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "<!-- generated"):
			flush()
			generated = true
			continue
		case strings.HasPrefix(t, "<!-- end generated"):
			generated = false
			continue
		case strings.HasPrefix(t, "```"):
			flush()
			fenced = !fenced
			continue
		}
		if fenced || generated {
			continue
		}
		switch {
		case strings.HasPrefix(t, "# "):
			flush() // the page's title: its first paragraph follows
		case strings.HasPrefix(t, "#"):
			flush()
			pageFirst = false
			// A heading that carries a date dates its whole section.
			sectionOK, first = dated(t), !dated(t)
		case t == "":
			flush()
		case strings.HasPrefix(line, "    ") && len(cur) == 0:
			// an indented code block
		case strings.HasPrefix(t, "|"):
			flush()
			if strings.Trim(t, "|-: ") == "" {
				continue
			}
			start, cur = n, []string{t}
			flush()
		default:
			if len(cur) == 0 {
				start = n
			}
			cur = append(cur, t)
		}
	}
	flush()
	return out
}
