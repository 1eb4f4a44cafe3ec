package experiment

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ErrInvalidSpec matches (errors.Is) every error about what an experiment
// spec says, as opposed to errors reading it: the command line exits 2 on it.
var ErrInvalidSpec = errors.New("invalid experiment spec")

// SpecError is a mistake in an experiment spec. Its message is one line:
// "FILE:LINE: PATH: what is wrong and what to write instead".
type SpecError struct {
	// File is the spec's name as given to Parse.
	File string
	// Line is the line at fault, 0 when the YAML parser gave none.
	Line int
	// Path names the field, as spec.configs[1].cpu.limit; "" when the file as
	// a whole is at fault (not YAML, say).
	Path string
	Msg  string
}

func (e *SpecError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	if e.Path != "" {
		b.WriteString(": " + e.Path)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// Is makes every SpecError match ErrInvalidSpec.
func (e *SpecError) Is(target error) bool { return target == ErrInvalidSpec }

// Warning is a value that takes effect otherwise than it is written, because
// Kubernetes would change it the same way (the 1 ms quota floor, millicore
// rounding, the bounds of cpu.shares). The experiment runs with the changed
// value, as a pod would; the warning says so.
type Warning struct {
	File string
	Line int
	Path string
	Msg  string
}

func (w Warning) String() string {
	return (&SpecError{File: w.File, Line: w.Line, Path: w.Path, Msg: w.Msg}).Error()
}

// fieldError is a bad value found while resolving; Parse locates it.
type fieldError struct{ path, msg string }

func (e *fieldError) Error() string { return e.path + ": " + e.msg }

func bad(path, format string, args ...any) error {
	return &fieldError{path, fmt.Sprintf(format, args...)}
}

// yamlLine finds the line number yaml.v3 writes into its messages ("yaml:
// line 3: did not find expected key"); it gives no other way to get it.
var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

// yamlError turns an error of the YAML parser into a one-line SpecError.
func yamlError(file string, err error) *SpecError {
	msg := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n")
	var parts []string
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	se := &SpecError{File: file}
	if len(parts) > 0 {
		if m := yamlLine.FindStringSubmatch(parts[0]); m != nil {
			se.Line, _ = strconv.Atoi(m[1])
			parts[0] = parts[0][len(m[0]):]
		}
		parts[0] = strings.TrimPrefix(parts[0], "yaml: ")
	}
	se.Msg = strings.Join(parts, "; ")
	if se.Msg == "" {
		se.Msg = "not a YAML document"
	}
	return se
}
