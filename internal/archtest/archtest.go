// Package archtest checks throttlelab's import graph against the rules of
// its design (docs: DESIGN.md, "One quota model, one advice core"): the
// leaves import nothing of throttlelab but units, the advice model does not
// import the simulator, the report, top, the results directory or the load
// generator, the node agent does not carry the simulator or the report, no
// package imports another in a cycle, and none imports upwards: every
// package stands on a floor of the design (Floors) and imports only from
// its own floor or below.
package archtest

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
)

// Module is throttlelab's module path.
const Module = "github.com/throttlelab/throttlelab"

// Package is one package of the graph as go list describes it.
type Package struct {
	ImportPath string
	Imports    []string // direct imports
	Deps       []string // every package it imports, transitively
}

// Rule forbids packages of the module to From: with Transitive, through
// any path; else directly. Only names other than Allow are checked when
// Only is set: the package may import nothing of the module but Allow.
type Rule struct {
	From       string   // a package, relative to the module ("advise")
	Forbid     []string // packages, relative to the module (a prefix covers its subpackages)
	Only       bool     // From may import nothing of the module but Allow
	Allow      []string
	Transitive bool
	Why        string
}

// Rules are the design's import rules.
var Rules = []Rule{
	{From: "cfs", Only: true, Allow: []string{"units"}, Transitive: true, Why: "the quota model is a leaf"},
	{From: "stats", Only: true, Allow: []string{"units"}, Transitive: true, Why: "statistics are a leaf"},
	{From: "advise", Forbid: []string{"sim", "report", "top", "watch", "record", "loadgen", "cgroup"}, Transitive: true, Why: "advise is the model: demand in, advice out; sources (cgroup files, the watcher) and rendering live elsewhere"},
	{From: "agent", Forbid: []string{"sim", "report"}, Transitive: true, Why: "a DaemonSet must not carry the simulator or the HTML charts"},
	{From: "agent", Forbid: []string{"top"}, Transitive: true, Why: "top is the live view; the agent stands on watch, the sampling engine"},
	{From: "demand", Forbid: []string{"top"}, Transitive: true, Why: "top is the live view; demand sources stand on watch, the sampling engine"},
	{From: "fleet", Forbid: []string{"top"}, Transitive: true, Why: "top is the live view; fleet stands on watch, the sampling engine"},
	{From: "report", Forbid: []string{"presets"}, Why: "the report reads a run's verdict from its record; presets judge runs, the report only draws them"},
}

// Floor is one level of the design's picture (DESIGN.md, "One quota model,
// one advice core"): its packages, relative to the module; a package covers
// its subpackages unless a longer one is placed elsewhere.
type Floor struct {
	Name     string
	Packages []string
}

// Floors are the design's levels, ground first. A package imports only
// packages of its own floor or a lower one; a package on no floor is an
// error, so that a new package is placed when it is made.
var Floors = []Floor{
	{"ground", []string{"units", "stats", "settle", "cfs", "startup", "verdict", "servertiming", "testenv", "deploy", "internal/golden", "internal/progress", "internal/hostmounts", "source", "schemas", "schemas/schematest"}},
	{"kernel files and the model", []string{"cgroup", "workload", "advise", "runtimes", "internal/ociimage", "internal/doccheck", "internal/archtest", "internal/browsertest", "internal/vmtest"}},
	{"instruments, specs and records", []string{"server", "loadgen", "experiment", "record", "watch", "top", "demand", "k8s/manifest", "k8s/resize", "k8s/k8stest"}},
	{"callers", []string{"agent", "sim", "runner", "local", "report", "presets", "fleet", "limitmap", "k8s", "k8s/agentmanifest", "top/tui", "internal/agreement"}},
	{"the command line", []string{"internal/cli"}},
	{"programs", []string{"cmd", "hack", "bench"}},
}

// floorOf returns the index in floors of the floor that holds pkg (the
// longest placed path that covers it), or -1.
func floorOf(floors []Floor, pkg string) int {
	best, at := -1, ""
	for i, f := range floors {
		for _, p := range f.Packages {
			if under(pkg, p) && len(p) > len(at) {
				best, at = i, p
			}
		}
	}
	return best
}

// Upward returns one line per package of the module on no floor, and one
// per direct import of a package from a higher floor than its own.
func Upward(pkgs []Package, floors []Floor) []string {
	var out []string
	for _, p := range pkgs {
		r, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		f := floorOf(floors, r)
		if f < 0 {
			out = append(out, fmt.Sprintf("%s: on no floor of archtest.Floors: place it (a package imports only from its floor or below)", r))
			continue
		}
		for _, d := range p.Imports {
			dr, ok := rel(d)
			if !ok {
				continue
			}
			if g := floorOf(floors, dr); g > f {
				out = append(out, fmt.Sprintf("%s (%s) imports %s (%s): an import upwards", r, floors[f].Name, dr, floors[g].Name))
			}
		}
	}
	return out
}

// List runs go list over the module's packages in dir (any directory of
// the module) and returns them.
func List(goBin, dir string) ([]Package, error) {
	cmd := exec.Command(goBin, "list", "-e", "-json=ImportPath,Imports,Deps", Module+"/...")
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	pkgs, derr := decode(out)
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return pkgs, derr
}

func decode(r io.Reader) ([]Package, error) {
	var pkgs []Package
	dec := json.NewDecoder(r)
	for dec.More() {
		var p Package
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("reading go list's output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// rel returns p relative to the module, and whether it is in the module.
func rel(p string) (string, bool) {
	if p == Module {
		return "", true
	}
	r, ok := strings.CutPrefix(p, Module+"/")
	return r, ok
}

// under reports whether pkg is p or one of its subpackages.
func under(pkg, p string) bool { return pkg == p || strings.HasPrefix(pkg, p+"/") }

// Check returns one line per broken rule, and one per cycle in the
// module's direct imports; none when the graph keeps the rules.
func Check(pkgs []Package, rules []Rule) []string {
	byPath := map[string]Package{}
	for _, p := range pkgs {
		if r, ok := rel(p.ImportPath); ok {
			byPath[r] = p
		}
	}
	var out []string
	for _, rule := range rules {
		p, ok := byPath[rule.From]
		if !ok {
			out = append(out, fmt.Sprintf("%s: no such package in the module (the rule %q checks nothing)", rule.From, rule.Why))
			continue
		}
		deps := p.Imports
		how := "imports"
		if rule.Transitive {
			deps, how = p.Deps, "depends on"
		}
		for _, d := range deps {
			r, ok := rel(d)
			if !ok {
				continue
			}
			bad := false
			if rule.Only {
				bad = true
				for _, a := range rule.Allow {
					bad = bad && !under(r, a)
				}
			}
			for _, f := range rule.Forbid {
				bad = bad || under(r, f)
			}
			if bad {
				out = append(out, fmt.Sprintf("%s %s %s: %s", rule.From, how, r, rule.Why))
			}
		}
	}
	return append(out, Cycles(byPath)...)
}

// Cycles returns each cycle of direct imports among the module's packages
// (keyed relative to the module), as "a -> b -> a".
func Cycles(byPath map[string]Package) []string {
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var path []string
	var out []string
	var visit func(p string)
	visit = func(p string) {
		state[p] = onPath
		path = append(path, p)
		imps := byPath[p].Imports
		for _, d := range imps {
			r, ok := rel(d)
			if !ok {
				continue
			}
			if _, in := byPath[r]; !in {
				continue
			}
			switch state[r] {
			case onPath:
				i := len(path) - 1
				for path[i] != r {
					i--
				}
				out = append(out, "import cycle: "+strings.Join(append(append([]string(nil), path[i:]...), r), " -> "))
			case unseen:
				visit(r)
			}
		}
		path = path[:len(path)-1]
		state[p] = done
	}
	keys := make([]string, 0, len(byPath))
	for k := range byPath {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if state[k] == unseen {
			visit(k)
		}
	}
	return out
}
