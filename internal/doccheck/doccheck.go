// Package doccheck finds the throttlelab command lines in the project's
// Markdown (README.md and docs/*.md), so that tests can parse them against
// the real command tree and run the ones that need no root: the docs cannot
// name a command or a flag that does not exist.
//
//	cmds, err := doccheck.Load("../..")
//	for _, c := range cmds {
//		fmt.Println(c.Pos(), c.Args) // README.md:42 [sim examples/limits.yaml]
//	}
//
// A command line is a line of a code block (fenced with ``` or indented by four
// spaces) whose first word, after an optional `sudo`, `flock FILE` or `$ `
// prompt, is `throttlelab`, `bin/throttlelab` or `./bin/throttlelab`. Lines
// ending in a backslash continue on the next. The command ends at the first
// shell operator (`|`, `&&`, `;`, `&`, `>`, `<`) or comment; anything after it
// is not throttlelab's.
package doccheck

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Command is one throttlelab command line found in the docs.
type Command struct {
	// File is the Markdown file, relative to the repository root; Line its
	// line (the first, for a command continued over several).
	File string
	Line int
	// Args are the words after the binary's name, unquoted as the shell
	// would.
	Args []string
	// Sudo says the docs run it as root.
	Sudo bool
	// Text is the command line as written (continuations joined).
	Text string
}

// Pos is where the command is written: FILE:LINE.
func (c Command) Pos() string { return fmt.Sprintf("%s:%d", c.File, c.Line) }

// Files returns the Markdown files whose commands are checked: README.md and
// docs/*.md under root, relative to root, in a fixed order.
func Files(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	files := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			return nil, err
		}
		files = append(files, rel)
	}
	slices.Sort(files[1:])
	return files, nil
}

// Load extracts the commands of every file Files lists.
func Load(root string) ([]Command, error) {
	var all []Command
	err := eachFile(root, func(f string, src []byte) error {
		cmds, err := Extract(f, src)
		all = append(all, cmds...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return all, nil
}

// eachFile calls fn with the name and text of every file Files lists, in
// order, until fn returns an error.
func eachFile(root string, fn func(name string, src []byte) error) error {
	files, err := Files(root)
	if err != nil {
		return err
	}
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return err
		}
		if err := fn(f, src); err != nil {
			return err
		}
	}
	return nil
}

// Extract returns the throttlelab command lines in the code blocks of one
// Markdown file, named file in the results. An unbalanced quote in a command
// line is an error naming the line.
func Extract(file string, src []byte) ([]Command, error) {
	var (
		out       []Command
		fenced    bool
		pending   strings.Builder // a command line continued with a backslash
		start     int
		prevBlank = true // an indented block starts after a blank line
		indented  bool
	)
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			fenced = !fenced
			prevBlank = false
			continue
		}
		if !fenced {
			// An indented code block: four spaces after a blank line, or
			// continuing one; a list item's continuation is not one.
			switch {
			case trimmed == "":
				prevBlank = true
				continue
			case strings.HasPrefix(line, "    ") && (prevBlank || indented):
				indented = true
			default:
				indented = false
			}
			prevBlank = false
			if !indented {
				continue
			}
		}
		if pending.Len() == 0 {
			start = n
		}
		if body, ok := strings.CutSuffix(strings.TrimRight(line, " \t"), "\\"); ok {
			pending.WriteString(body)
			pending.WriteString(" ")
			continue
		}
		pending.WriteString(line)
		text := strings.TrimSpace(pending.String())
		pending.Reset()
		c, ok, err := parseLine(text)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, start, err)
		}
		if ok {
			c.File, c.Line = file, start
			out = append(out, c)
		}
	}
	return out, sc.Err()
}

// binaries are the names the docs call the binary by.
var binaries = []string{"throttlelab", "bin/throttlelab", "./bin/throttlelab"}

// parseLine reads one shell command line; ok is false when it does not run
// throttlelab.
func parseLine(text string) (Command, bool, error) {
	text = strings.TrimPrefix(text, "$ ")
	// Only a line that runs throttlelab is read as shell: prose and output
	// in code blocks may hold anything.
	if !runsBinary(strings.Fields(text)) {
		return Command{}, false, nil
	}
	words, err := shellWords(text)
	if err != nil {
		return Command{}, false, err
	}
	c := Command{Text: text, Sudo: len(words) > 0 && words[0] == "sudo"}
	words = skipPrefix(words)
	if len(words) == 0 || !slices.Contains(binaries, words[0]) {
		return Command{}, false, nil
	}
	c.Args = words[1:]
	return c, true, nil
}

// skipPrefix drops the words before the binary: sudo, and flock FILE.
func skipPrefix(words []string) []string {
	for len(words) > 0 {
		switch {
		case words[0] == "sudo":
			words = words[1:]
		case words[0] == "flock" && len(words) > 1:
			words = words[2:]
		default:
			return words
		}
	}
	return words
}

// runsBinary says whether the words, split on spaces alone, start with the
// binary's name after skipPrefix's words.
func runsBinary(fields []string) bool {
	fields = skipPrefix(fields)
	return len(fields) > 0 && slices.Contains(binaries, fields[0])
}

// shellWords splits a command line as sh would, for the subset the docs use:
// single and double quotes, backslash escapes outside single quotes, and
// the end of the command at a comment or an operator.
func shellWords(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		inW   bool
	)
	flush := func() {
		if inW {
			words = append(words, cur.String())
			cur.Reset()
			inW = false
		}
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t':
			flush()
		case ch == '#' && !inW:
			flush()
			return words, nil
		case strings.IndexByte("|&;<>", ch) >= 0:
			flush()
			return words, nil
		case ch == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unbalanced ' in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			inW = true
			i += j + 1
		case ch == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unbalanced \" in %q", s)
			}
			inW = true
		case ch == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inW = true
		default:
			cur.WriteByte(ch)
			inW = true
		}
	}
	flush()
	return words, nil
}

// Pending is a command or flag the docs name before it lands: documented with
// a change that is being built alongside. A doc command that needs one is
// skipped with Reason, and the tests fail once it exists, so the entry is
// removed when the change lands.
type Pending struct {
	// Path is the command's path below throttlelab ("agent", "k8s render").
	Path string
	// Flag, if set, is the long flag of that command that is pending
	// ("prometheus"); empty means the whole command is.
	Flag string
	// Reason says what brings it.
	Reason string
}

// Pendings are the commands and flags the docs may name before they exist.
// Keep it short: every entry is a promise that a change is landing.
var Pendings = []Pending{}

// PendingFor returns the entry that covers a command whose first words are
// args (the command's path, then its flags and arguments), if any.
func PendingFor(args []string) (Pending, bool) {
	for _, p := range Pendings {
		path := strings.Fields(p.Path)
		if len(args) < len(path) || !slices.Equal(args[:len(path)], path) {
			continue
		}
		if p.Flag == "" {
			return p, true
		}
		for _, a := range args[len(path):] {
			if a == "--"+p.Flag || strings.HasPrefix(a, "--"+p.Flag+"=") {
				return p, true
			}
		}
	}
	return Pending{}, false
}

// PendingFiles are pages the docs link to before they land, with what brings
// them; a link to one is not an error until it exists, and then the entry
// must go.
var PendingFiles = map[string]string{}

var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// BrokenLinks returns the relative links of the checked files (Files) that
// point at no file, or at a heading the target Markdown file does not have,
// each as "FILE: LINK: why". Links to PendingFiles are left out.
func BrokenLinks(root string) ([]string, error) {
	files, err := Files(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		for _, m := range linkRE.FindAllStringSubmatch(string(src), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(link, "#")
			target := f
			if file != "" {
				target = filepath.ToSlash(filepath.Join(filepath.Dir(f), file))
			}
			if _, ok := PendingFiles[target]; ok {
				continue
			}
			body, err := os.ReadFile(filepath.Join(root, target))
			if err != nil {
				out = append(out, fmt.Sprintf("%s: %s: no file %s", f, link, target))
				continue
			}
			if anchor != "" && strings.HasSuffix(target, ".md") && !slices.Contains(headingAnchors(body), anchor) {
				out = append(out, fmt.Sprintf("%s: %s: %s has no heading #%s", f, link, target, anchor))
			}
		}
	}
	return out, nil
}

// headingAnchors returns the anchors GitHub gives a Markdown file's headings:
// lower case, punctuation other than - and _ dropped, spaces as -.
func headingAnchors(src []byte) []string {
	var out []string
	for _, line := range strings.Split(string(src), "\n") {
		t := strings.TrimLeft(line, "#")
		if len(t) == len(line) || !strings.HasPrefix(t, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(t)) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}
