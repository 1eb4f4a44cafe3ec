package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// flagWord is a CLI flag written in text: "--csv", "(give --cores 4)".
var flagWord = regexp.MustCompile(`(^|[^A-Za-z0-9_-])--[a-z][a-z0-9-]*`)

// Flags a library builds or speaks of without spelling one out:
//   - flagFormat: a flag's name formatted in ("--%s", "--%v: %s"), the way a
//     library turns a value's name into a flag;
//   - a literal ending in "--" that is an operand of +, the same by
//     concatenation ("--" + name), see dashesJoined;
//   - shortFlag in a throttlelab command line (selfCommand): "run
//     throttlelab advise -o json" (another tool's short flags, kubectl -n or
//     mount -t, are common in messages and stay allowed);
//   - flagTalk: prose about flags ("the window flag", "flags"): a library
//     names the value, not how the command line carries it.
var (
	flagFormat  = regexp.MustCompile(`(^|[^A-Za-z0-9_-])--%`)
	selfCommand = regexp.MustCompile(`\bthrottlelab [a-z]`)
	shortFlag   = regexp.MustCompile(`(^|[\s(\[])-[a-zA-Z]($|[\s=),.\]])`)
	flagTalk    = regexp.MustCompile(`(?i)\bflags?\b`)
)

// FlagOwners are the directories, relative to the module root, whose code
// may name the command line's flags: the CLI itself, its tests' driver
// and the rigs and benchmarks that run the binary.
// internal/archtest itself is one: its lists name other tools' flags.
var FlagOwners = []string{"internal/cli", "cmd", "hack", "bench", "internal/archtest"}

// ArgvBuilders are the files outside FlagOwners whose strings are command
// lines for child processes, not messages: a flag there is an argument.
var ArgvBuilders = map[string]string{
	"experiment/args.go":                 "the serve, noise and burst command lines of a run's processes",
	"k8s/pods.go":                        "the load command line of an experiment's load pod",
	"k8s/render.go":                      "the load and hold command lines of an experiment's pods",
	"k8s/agentmanifest/agentmanifest.go": "the agent command line of the agent's DaemonSet",
	"k8s/k8stest/k8stest.go":             "the etcd and kube-apiserver command lines of the tests' control plane",
	"internal/ociimage/ociimage.go":      "the image's default command line",
	"presets/reproduce/main.go":          "a program (package main) that runs throttlelab and writes the command lines it ran",
	"fleet/patch.go":                     "kubectl command lines (kubectl's own flags)",
	"internal/vmtest/suite.go":           "the init script of the test VMs (busybox's own flags)",
	"internal/doccheck/doccheck.go":      "reads the command lines the docs cite, flags and all",
	"internal/doccheck/generated.go":     "selects the flag lines of a --help output that the docs show",
	"presets/validation/table.go":        "writes docs/validation.md, a page that cites the command lines it ran",
	"runtimes/flags.go":                  "the command lines of the runtimes it reads (java's, Envoy's, gunicorn's and uvicorn's own flags)",
}

// OtherTools are texts outside FlagOwners that name another program's
// flag, not throttlelab's: they stay true when throttlelab's flags change.
var OtherTools = []string{
	"docker --cpus",          // a study's setup (presets/studies.go)
	"--cpu-cfs-quota-period", // the kubelet's flag (k8s/check.go)
	" --quick",               // a preset's quick variant as a spec name ("f01-logjam --quick")
}

// FlagWords returns, for every string literal in the module's non-test Go
// files under root that names a flag ("--csv"), builds one ("--%s", "--" +
// name), gives a throttlelab command line a short flag ("throttlelab advise
// -o json") or speaks of flags, outside FlagOwners, ArgvBuilders and
// OtherTools, a line FILE:LINE: "TEXT". A library says which value was
// wrong; the CLI says which flag carried it.
func FlagWords(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || ownedByCLI(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || ArgvBuilders[rel] != "" {
			return nil
		}
		found, err := flagWordsIn(path, rel)
		out = append(out, found...)
		return err
	})
	return out, err
}

func ownedByCLI(rel string) bool {
	for _, o := range FlagOwners {
		if rel == o {
			return true
		}
	}
	return false
}

func flagWordsIn(path, rel string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []string
	report := func(n *ast.BasicLit, s string) {
		out = append(out, rel+":"+strconv.Itoa(fset.Position(n.Pos()).Line)+": "+strconv.Quote(s))
	}
	joined := dashesJoined(f)
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ImportSpec:
			return false
		case *ast.Field:
			// A struct tag is not text anyone reads; walk the rest.
			if n.Tag != nil {
				return false
			}
		case *ast.BasicLit:
			if n.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(n.Value)
			if err != nil {
				return true
			}
			if namesFlag(s) || joined[n] {
				report(n, s)
			}
		}
		return true
	})
	return out, nil
}

// namesFlag reports whether a string names, formats or speaks of a flag.
func namesFlag(s string) bool {
	switch {
	case flagWord.MatchString(s) && !otherTool(s):
		return true
	case flagFormat.MatchString(s), flagTalk.MatchString(s):
		return true
	}
	return selfCommand.MatchString(s) && shortFlag.MatchString(s)
}

// dashesJoined returns the string literals ending in "--" that are an
// operand of +: a flag put together from its name.
func dashesJoined(f *ast.File) map[*ast.BasicLit]bool {
	out := map[*ast.BasicLit]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		b, ok := n.(*ast.BinaryExpr)
		if !ok || b.Op != token.ADD {
			return true
		}
		for _, x := range []ast.Expr{b.X, b.Y} {
			if l, ok := x.(*ast.BasicLit); ok && l.Kind == token.STRING {
				if s, err := strconv.Unquote(l.Value); err == nil && strings.HasSuffix(s, "--") {
					out[l] = true
				}
			}
		}
		return true
	})
	return out
}

func otherTool(s string) bool {
	for _, o := range OtherTools {
		s = strings.ReplaceAll(s, o, "")
	}
	return !flagWord.MatchString(s)
}
