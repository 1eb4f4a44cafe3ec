package runtimes

import (
	"fmt"
	"slices"
	"strings"
)

// Kind names a runtime.
type Kind string

// The runtimes Detect names. Anything else is Unknown.
const (
	Unknown Kind = "unknown"
	Go      Kind = "go"
	JVM     Kind = "jvm"
	Node    Kind = "node"
	Nginx   Kind = "nginx"
	Envoy   Kind = "envoy"
	Python  Kind = "python"
	DotNet  Kind = "dotnet"
)

// Setting is the knob that decides a runtime's parallelism, as found in
// one process.
type Setting struct {
	// Name is the knob spelled as the runtime takes it: "GOMAXPROCS",
	// "-XX:ActiveProcessorCount", "worker_processes", Envoy's concurrency.
	Name string `json:"name"`
	// Set reports whether the process sets it; else the runtime's default
	// rule applies (Process.Procs).
	Set bool `json:"set"`
	// Value is the count set; 0 when not set or not a count ("auto").
	Value int `json:"value,omitempty"`
	// Raw is the value as written ("8", "auto"), also when it is not valid.
	Raw string `json:"raw,omitempty"`
	// From says where it was found: "environ", "cmdline",
	// "JAVA_TOOL_OPTIONS", a configuration file's path.
	From string `json:"from,omitempty"`
}

// Process is what one process runs and how parallel it will be.
type Process struct {
	PID  int  `json:"pid"`
	Kind Kind `json:"runtime"`
	// Server is the Python server ("gunicorn", "uvicorn"), if any.
	Server string `json:"server,omitempty"`
	// Version is the runtime's version where readable ("go1.25.3",
	// "17.0.15"), else "".
	Version string `json:"version,omitempty"`
	// Exe is the binary's path as the process sees it.
	Exe string `json:"exe,omitempty"`
	// Setting is the knob that decides the parallelism; its Name is "" for
	// a runtime without one (Unknown, Python without a known server).
	Setting Setting `json:"setting"`
	// Extra are further knobs of the same kind: a JVM's ParallelGCThreads
	// and ConcGCThreads.
	Extra []Setting `json:"extra,omitempty"`
	// CPUs is the size of the process's affinity mask (Cpus_allowed_list).
	CPUs int `json:"cpus,omitempty"`
	// Layout is the cgroup layout holding the process's cpu controller:
	// "v1", "v2", or "" when none.
	Layout string `json:"cgroup_layout,omitempty"`
	// ContainerAware reports whether the runtime's default reads the
	// group's CPU limit (Go 1.25+ with containermaxprocs on, a JDK that
	// reads Layout with UseContainerSupport on, .NET); Aware says why.
	ContainerAware bool   `json:"container_aware"`
	Aware          string `json:"container_aware_why,omitempty"`
}

// Runtime is the runtime of a group of processes: the process that
// decides it (the first known runtime in PID order, the one a master or
// a launcher starts first) and every process read.
type Runtime struct {
	Process
	Processes []Process `json:"processes,omitempty"`
}

// Warning says why a process's runtime could not be read. Detect and
// Inspect return warnings, never errors: the caller advises the group
// without the runtime and shows the warning.
type Warning struct {
	PID int    `json:"pid"`
	Why string `json:"why"`
	// Err is the underlying error, for errors.Is (fs.ErrNotExist when the
	// process exited); nil when nothing failed (a runtime not known).
	Err error `json:"-"`
}

func (w Warning) String() string { return fmt.Sprintf("pid %d: %s", w.PID, w.Why) }

// Procs is how many threads the process will run at once under a CPU
// limit of limitCores (quota/period; 0: none) on cpus CPUs (0: the
// process's own affinity mask): the setting found, else its runtime's
// default rule; rule says which, in words. 0 when it cannot be said.
func (p Process) Procs(limitCores float64, cpus int) (n int, rule string) {
	if cpus <= 0 {
		cpus = p.CPUs
	}
	s := p.Setting
	if s.Set && s.Value > 0 {
		return s.Value, fmt.Sprintf("%s=%d set (%s)", s.Name, s.Value, s.From)
	}
	switch p.Kind {
	case Go:
		if !p.ContainerAware {
			return cpus, "GOMAXPROCS unset: the CPUs (" + p.Aware + ")"
		}
		n, ok := GoDefaultProcs(p.Version, limitCores, cpus)
		if !ok {
			return 0, "GOMAXPROCS unset; Go version unknown"
		}
		return n, "GOMAXPROCS unset: the limit rounded up, at least 2, at most the CPUs"
	case JVM:
		if !p.ContainerAware {
			return cpus, "-XX:ActiveProcessorCount unset: the CPUs (" + p.Aware + ")"
		}
		return ceilProcs(limitCores, cpus), "-XX:ActiveProcessorCount unset: the limit rounded up, at most the CPUs"
	case DotNet:
		return ceilProcs(limitCores, cpus), "DOTNET_PROCESSOR_COUNT unset: the limit rounded up, at most the CPUs"
	case Nginx:
		if s.Raw == "auto" {
			return cpus, "worker_processes auto: the CPUs, not the limit"
		}
		if !s.Set {
			return 1, "worker_processes unset: 1"
		}
	case Envoy:
		return cpus, s.Name + " unset: the CPUs, not the limit"
	case Node:
		return 4, "UV_THREADPOOL_SIZE unset: libuv's 4 (not the CPUs); JavaScript runs on one thread"
	case Python:
		if p.Server != "" {
			return 1, "workers unset (command line and WEB_CONCURRENCY): one worker"
		}
	}
	if s.Raw != "" {
		return 0, fmt.Sprintf("%s=%q (%s) is not a count", s.Name, s.Raw, s.From)
	}
	return 0, "no setting known for this runtime"
}

// Detect reads the runtime of a group's processes under root (the host's
// root, "/": /proc is read below it). Processes that cannot be read or run
// no known runtime are skipped for the choice; their warnings are returned
// when no process of the group names a runtime, and always for processes
// that failed while read. A group with no known runtime has Kind Unknown.
func Detect(root string, pids []int) (Runtime, []Warning) {
	pids = slices.Sorted(slices.Values(pids))
	var rt Runtime
	rt.Kind = Unknown
	var failed, unknown []Warning
	for _, pid := range pids {
		p, w := Inspect(root, pid)
		rt.Processes = append(rt.Processes, p)
		if w != nil {
			if p.Kind == Unknown && w.Err == nil {
				unknown = append(unknown, *w)
			} else {
				failed = append(failed, *w)
			}
		}
		if p.Kind != Unknown && rt.Kind == Unknown {
			rt.Process = p
		}
	}
	if rt.Kind == Unknown {
		rt.PID = 0
		failed = append(failed, unknown...)
		slices.SortFunc(failed, func(a, b Warning) int { return a.PID - b.PID })
	}
	for _, p := range rt.Processes {
		if p.Kind != Unknown && p.Kind != rt.Kind {
			failed = append(failed, Warning{PID: p.PID, Why: fmt.Sprintf("runs %s beside the group's %s (pid %d); the group is advised by the first", p.Kind, rt.Kind, rt.PID)})
		}
	}
	return rt, failed
}

// Inspect reads one process's runtime under root. The warning, when not
// nil, names why the runtime is Unknown or a part of it (the version) is
// missing.
func Inspect(root string, pid int) (Process, *Warning) {
	p := Process{PID: pid, Kind: Unknown}
	r := reader{root: root, pid: pid}
	in, err := r.read()
	if err != nil {
		return p, r.warn(err)
	}
	p.Exe, p.CPUs, p.Layout = in.exe, in.cpus, in.layout
	base := exeBase(in.exe)
	switch {
	case base == "java":
		p.Kind = JVM
		return p, inspectJVM(&p, r, in)
	case base == "node" || base == "nodejs":
		p.Kind = Node
		inspectNode(&p, in)
	case base == "nginx":
		p.Kind = Nginx
		return p, inspectNginx(&p, r, in)
	case base == "envoy":
		p.Kind = Envoy
		inspectEnvoy(&p, in)
	case strings.HasPrefix(base, "python") || pythonServer(in.args) != "":
		p.Kind = Python
		inspectPython(&p, in, base)
	case base == "dotnet":
		p.Kind = DotNet
		inspectDotNet(&p, r, in)
	default:
		goErr := inspectGo(&p, r, in)
		if goErr == nil {
			return p, nil
		}
		if r.hasCoreCLR() {
			p.Kind = DotNet
			inspectDotNet(&p, r, in)
			return p, nil
		}
		return p, &Warning{PID: pid, Why: fmt.Sprintf("runtime unknown: %s is no runtime known by name and has no Go build information (%v)", in.exe, goErr)}
	}
	return p, nil
}

// exeBase is the binary's file name, without the " (deleted)" the kernel
// adds to a binary replaced while it runs.
func exeBase(exe string) string {
	exe = strings.TrimSuffix(exe, " (deleted)")
	return exe[strings.LastIndexByte(exe, '/')+1:]
}
