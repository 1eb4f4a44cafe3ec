package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Block is a figure of the docs that a command generates: its output (or
// some of its lines), between the markers
//
//	<!-- generated: throttlelab ARGS... [(lines FROM-TO) | (flags NAME...)] -->
//	```
//	the output
//	```
//	<!-- end generated -->
//
// A test runs the command and compares; with -update it rewrites the block.
type Block struct {
	// File is the Markdown file, relative to the root; Line the marker's.
	File string
	Line int
	// Args are the command's words after throttlelab.
	Args []string
	// From and To select the output's lines, 1-based and inclusive (0, 0:
	// all of it).
	From, To int
	// Flags select, instead, the lines of a --help output's Flags section
	// that describe these flags (names without dashes), in the output's
	// order: they stay selected when the help around them changes.
	Flags []string
	// Body is the block's text as the doc has it, without the fences.
	Body string
}

// Pos is where the block's marker is: FILE:LINE.
func (b Block) Pos() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// Select returns the lines of out the block shows, ending in a newline.
func (b Block) Select(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if b.From > 0 {
		from, to := min(b.From, len(lines)+1), min(b.To, len(lines))
		lines = lines[from-1 : max(to, from-1)]
	}
	if len(b.Flags) > 0 {
		var kept []string
		inFlags := false // in the help's "Flags:" section
		for _, l := range lines {
			switch {
			case l == "Flags:":
				inFlags = true
			case strings.TrimSpace(l) == "":
				inFlags = false
			case inFlags && b.describes(l):
				kept = append(kept, l)
			}
		}
		lines = kept
	}
	return strings.Join(lines, "\n") + "\n"
}

// describes reports whether a line of a --help output's Flags section
// describes one of b.Flags ("      --max-delay duration   ...", "  -o, --output string ...").
func (b Block) describes(line string) bool {
	t := strings.TrimSpace(line)
	if len(t) > 4 && t[0] == '-' && t[1] != '-' && t[2] == ',' {
		t = strings.TrimSpace(t[3:]) // the shorthand
	}
	for _, f := range b.Flags {
		if rest, ok := strings.CutPrefix(t, "--"+f); ok && (rest == "" || rest[0] == ' ') {
			return true
		}
	}
	return false
}

var (
	startRE = regexp.MustCompile(`^<!-- generated: (.*?)(?: \((?:lines (\d+)-(\d+)|flags ([a-z0-9 -]+))\))? -->$`)
	endMark = "<!-- end generated -->"
)

// Blocks returns the generated blocks of one Markdown file's text. A block
// without its fences or its end marker, or whose command is not
// throttlelab's, is an error naming the line.
func Blocks(file, src string) ([]Block, error) {
	var out []Block
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); i++ {
		m := startRE.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			continue
		}
		c, ok, err := parseLine(m[1])
		if err != nil || !ok {
			return nil, fmt.Errorf("%s:%d: a generated block's command must run throttlelab: %q", file, i+1, m[1])
		}
		b := Block{File: file, Line: i + 1, Args: c.Args}
		if m[2] != "" {
			b.From, _ = strconv.Atoi(m[2])
			b.To, _ = strconv.Atoi(m[3])
		}
		b.Flags = strings.Fields(m[4])
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			return nil, fmt.Errorf("%s:%d: a generated block's output must follow in a ``` block", file, i+1)
		}
		j := i + 2
		for j < len(lines) && !strings.HasPrefix(lines[j], "```") {
			j++
		}
		if j+1 >= len(lines) || strings.TrimSpace(lines[j+1]) != endMark {
			return nil, fmt.Errorf("%s:%d: a generated block must end with %s after its ``` block", file, i+1, endMark)
		}
		b.Body = strings.Join(lines[i+2:j], "\n") + "\n"
		out = append(out, b)
		i = j + 1
	}
	return out, nil
}

// LoadBlocks returns the generated blocks of every checked file (Files).
func LoadBlocks(root string) ([]Block, error) {
	files, err := Files(root)
	if err != nil {
		return nil, err
	}
	var all []Block
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		bs, err := Blocks(f, string(src))
		if err != nil {
			return nil, err
		}
		all = append(all, bs...)
	}
	return all, nil
}

// Rewrite replaces the body of the block whose marker is at line in src
// with body (ending in a newline), and returns the new text.
func Rewrite(src string, line int, body string) (string, error) {
	lines := strings.Split(src, "\n")
	if line < 1 || line+1 > len(lines) || !startRE.MatchString(strings.TrimSpace(lines[line-1])) {
		return "", fmt.Errorf("line %d holds no generated block", line)
	}
	j := line + 1
	for j < len(lines) && !strings.HasPrefix(lines[j], "```") {
		j++
	}
	if j >= len(lines) {
		return "", fmt.Errorf("line %d: the block does not end", line)
	}
	out := append([]string{}, lines[:line+1]...)
	out = append(out, strings.Split(strings.TrimSuffix(body, "\n"), "\n")...)
	out = append(out, lines[j:]...)
	return strings.Join(out, "\n"), nil
}
