package runtimes

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// GoDefaultProcs is the GOMAXPROCS a Go program of version ("go1.25.3", as
// its build information spells it) chooses when GOMAXPROCS is not set,
// under a CPU limit of limitCores (quota/period; 0 or less: no limit) on
// cpus CPUs (its affinity mask). Before Go 1.25 it is the CPUs. From 1.25
// on (runtime/cgroup_linux.go, adjustCgroupGOMAXPROCS) the limit is rounded
// up, raised to at least 2, and used when below the CPUs. Go reads the limit
// of its own leaf cgroup only, not a tighter ancestor's (golang/go#81180):
// pass that group's limit. ok is false when version cannot be read.
//
// The 1.25 rule also needs containermaxprocs on, which a main module whose
// go line is older than 1.25 turns off: Process.ContainerAware says which.
func GoDefaultProcs(version string, limitCores float64, cpus int) (procs int, ok bool) {
	minor, ok := goMinor(version)
	if !ok {
		return 0, false
	}
	if minor < 25 {
		return cpus, true
	}
	return goCgroupProcs(limitCores, cpus), true
}

func goCgroupProcs(limitCores float64, cpus int) int {
	if limitCores <= 0 {
		return cpus
	}
	n := max(int(math.Ceil(limitCores)), 2)
	return min(n, cpus)
}

var goVersionRE = regexp.MustCompile(`go1\.(\d+)`)

// goMinor returns the minor version of a Go release name ("go1.25.3",
// "go1.26rc1", "devel go1.27-abcdef").
func goMinor(v string) (int, bool) {
	m := goVersionRE.FindStringSubmatch(v)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

// ceilProcs is the rule of the JVM and .NET: the limit rounded up, at
// least 1, at most the CPUs; the CPUs without a limit.
func ceilProcs(limitCores float64, cpus int) int {
	if limitCores <= 0 {
		return cpus
	}
	return min(max(int(math.Ceil(limitCores)), 1), cpus)
}

// javaVersion is a JDK version: feature release (8, 11, 17) and update
// (8u372: 372; 11.0.16: 16).
type javaVersion struct{ feature, update int }

// parseJavaVersion reads JAVA_VERSION as the release file spells it:
// "1.8.0_372", "11.0.16", "17.0.15", "21", "25-ea".
func parseJavaVersion(s string) (javaVersion, bool) {
	s, _, _ = strings.Cut(s, "-")
	s, _, _ = strings.Cut(s, "+")
	if rest, ok := strings.CutPrefix(s, "1."); ok {
		// JDK 8 and older: 1.8.0_372.
		feat, upd, _ := strings.Cut(rest, "_")
		f, err := strconv.Atoi(strings.SplitN(feat, ".", 2)[0])
		if err != nil {
			return javaVersion{}, false
		}
		u := 0
		if upd != "" {
			if u, err = strconv.Atoi(upd); err != nil {
				return javaVersion{}, false
			}
		}
		return javaVersion{f, u}, true
	}
	parts := strings.Split(s, ".")
	f, err := strconv.Atoi(parts[0])
	if err != nil {
		return javaVersion{}, false
	}
	u := 0
	if len(parts) >= 3 {
		if u, err = strconv.Atoi(parts[2]); err != nil {
			return javaVersion{}, false
		}
	}
	return javaVersion{f, u}, true
}

// jvmReadsLayout reports whether a JDK reads the CPU limit on a cgroup
// layout ("v1", "v2"). Container support (JDK-8146115) came with JDK 10
// and 8u191 for v1; cgroup v2 (JDK-8230305) with JDK 15, backported to
// 11.0.16 and 8u372. So JDK 9 reads neither, and 12 to 14 read v1 only.
func jvmReadsLayout(v javaVersion, layout string) bool {
	switch layout {
	case "v1":
		return v.feature >= 10 || (v.feature == 8 && v.update >= 191)
	case "v2":
		return v.feature >= 15 || (v.feature == 11 && v.update >= 16) || (v.feature == 8 && v.update >= 372)
	}
	return false
}
