package runtimes

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/throttlelab/throttlelab/cgroup"
)

// parseCmdline splits /proc/PID/cmdline (arguments ended by NUL bytes).
func parseCmdline(b []byte) []string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\x00")
}

// parseEnviron reads /proc/PID/environ (KEY=VALUE entries ended by NUL
// bytes) into a map; of a name given twice the last wins, as getenv's
// callers see it in most libcs.
func parseEnviron(b []byte) map[string]string {
	env := map[string]string{}
	for _, kv := range bytes.Split(b, []byte{0}) {
		k, v, ok := bytes.Cut(kv, []byte{'='})
		if ok && len(k) > 0 {
			env[string(k)] = string(v)
		}
	}
	return env
}

// parseStatusCPUs counts the CPUs of Cpus_allowed_list in /proc/PID/status:
// the affinity mask, the CPUs a runtime that counts CPUs sees.
func parseStatusCPUs(b []byte) (int, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Cpus_allowed_list:"); ok {
			cpus, err := cgroup.ParseCPUList(v)
			if err != nil {
				return 0, err
			}
			return len(cpus), nil
		}
	}
	return 0, errors.New("status: no Cpus_allowed_list")
}

// parseCPULayout says which cgroup layout holds the cpu controller of a
// process from its /proc/PID/cgroup: "v1" when a v1 hierarchy carries cpu
// (also on hybrid hosts, where runtimes read v1), "v2" when only the
// unified hierarchy is there, "" when neither.
func parseCPULayout(b []byte) (string, error) {
	lines, err := cgroup.ParseProcCgroup(bytes.NewReader(b))
	if err != nil {
		return "", err
	}
	layout := ""
	for _, l := range lines {
		if l.HierarchyID == 0 {
			layout = "v2"
			continue
		}
		for _, c := range l.Controllers {
			if c == "cpu" {
				return "v1", nil
			}
		}
	}
	return layout, nil
}

// parseStatState returns the state letter of /proc/PID/stat (field 3,
// after the command name, which may hold spaces and parentheses).
func parseStatState(b []byte) (byte, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, errors.New("stat: no state after the command name")
	}
	return b[i+2], nil
}

// parseReleaseVersion reads JAVA_VERSION from a JDK's release file.
func parseReleaseVersion(b []byte) (string, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "JAVA_VERSION="); ok {
			return strings.Trim(v, `"`), true
		}
	}
	return "", false
}

// parseNginxWorkers finds the main-context worker_processes directive in
// an nginx configuration: its value ("4", "auto") and whether it is there.
// Directives inside blocks and comments are skipped; included files are
// not followed (worker_processes belongs in the main file).
func parseNginxWorkers(b []byte) (string, bool) {
	depth := 0
	var stmt []string
	var word strings.Builder
	end := func() {
		if word.Len() > 0 {
			stmt = append(stmt, word.String())
			word.Reset()
		}
	}
	found, val := false, ""
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '#':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			end()
		case c == ';':
			end()
			if depth == 0 && len(stmt) == 2 && stmt[0] == "worker_processes" {
				found, val = true, strings.Trim(stmt[1], `"'`)
			}
			stmt = stmt[:0]
		case c == '{':
			end()
			depth++
			stmt = stmt[:0]
		case c == '}':
			end()
			depth--
			stmt = stmt[:0]
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			end()
		default:
			word.WriteByte(c)
		}
	}
	return val, found
}

// flagValue finds a flag's value in args: "--name N", "--name=N", and for
// a short name "-w N" and "-wN". The last occurrence wins.
func flagValue(args []string, long, short string) (string, bool) {
	val, found := "", false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == long || (short != "" && a == short):
			if i+1 < len(args) {
				val, found = args[i+1], true
				i++
			}
		case strings.HasPrefix(a, long+"="):
			val, found = a[len(long)+1:], true
		case short != "" && strings.HasPrefix(a, short) && len(a) > len(short) && !strings.HasPrefix(a, "--"):
			val, found = strings.TrimPrefix(a[len(short):], "="), true
		}
	}
	return val, found
}

// positive parses a setting's value as a count above zero.
func positive(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if n <= 0 {
		return 0, fmt.Errorf("%q is not above zero", s)
	}
	return n, nil
}
