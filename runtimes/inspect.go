package runtimes

import (
	"fmt"
	"os"
	"path"
	"strings"
)

// envSetting reads a count from the environment.
func envSetting(name string, env map[string]string) Setting {
	s := Setting{Name: name}
	v, ok := env[name]
	if !ok {
		return s
	}
	s.Raw, s.From = v, "environ"
	if n, err := positive(v); err == nil {
		s.Set, s.Value = true, n
	}
	return s
}

// argSetting reads a count from command-line flags.
func argSetting(name, long, short string, args []string, from string) (Setting, bool) {
	v, ok := flagValue(args, long, short)
	if !ok {
		return Setting{Name: name}, false
	}
	s := Setting{Name: name, Raw: v, From: from}
	if n, err := positive(v); err == nil {
		s.Set, s.Value = true, n
	}
	return s, true
}

func inspectGo(p *Process, r reader, in procInfo) error {
	bi, err := r.buildInfo()
	if err != nil {
		return err
	}
	p.Kind, p.Version = Go, bi.GoVersion
	// The runtime takes GOMAXPROCS only as a number above zero; anything
	// else leaves the default.
	p.Setting = envSetting("GOMAXPROCS", in.env)
	minor, ok := goMinor(bi.GoVersion)
	switch {
	case !ok:
		p.Aware = "version " + bi.GoVersion + " not read"
	case minor < 25:
		p.Aware = bi.GoVersion + " predates the container-aware default (Go 1.25)"
	default:
		// The build's default (from the main module's go line and
		// //go:debug lines), overridden by GODEBUG in the environment.
		v := "1"
		from := "default"
		for _, s := range bi.Settings {
			if s.Key == "DefaultGODEBUG" {
				if d, ok := godebug(s.Value, "containermaxprocs"); ok {
					v, from = d, "the build's DefaultGODEBUG (its go.mod's go line or a //go:debug line)"
				}
			}
		}
		if d, ok := godebug(in.env["GODEBUG"], "containermaxprocs"); ok {
			v, from = d, "GODEBUG in the environment"
		}
		p.ContainerAware = v != "0"
		if p.ContainerAware {
			p.Aware = bi.GoVersion + " reads its cgroup's cpu.max"
		} else {
			p.Aware = "containermaxprocs=0 from " + from
		}
	}
	return nil
}

// godebug finds key's value in a GODEBUG list ("a=1,b=0"); the last wins.
func godebug(list, key string) (string, bool) {
	val, found := "", false
	for _, kv := range strings.Split(list, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k == key {
			val, found = v, true
		}
	}
	return val, found
}

// jvmOptions are the JVM's options in the order the VM applies them:
// JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS (the java launcher puts them before
// the command line's), the command line up to the main class or jar,
// _JAVA_OPTIONS last. Each with where it came from.
func jvmOptions(args []string, env map[string]string) (opts, from []string) {
	add := func(src string, list []string) {
		for _, o := range list {
			opts, from = append(opts, o), append(from, src)
		}
	}
	add("JAVA_TOOL_OPTIONS", strings.Fields(env["JAVA_TOOL_OPTIONS"]))
	add("JDK_JAVA_OPTIONS", strings.Fields(env["JDK_JAVA_OPTIONS"]))
	var cmd []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-jar" || a == "-m" || a == javaModule {
			break // the main class, jar or module: what follows is the program's
		}
		cmd = append(cmd, a)
		if javaOptionsWithValue[a] {
			i++ // the option's value
		}
	}
	add("cmdline", cmd)
	add("_JAVA_OPTIONS", strings.Fields(env["_JAVA_OPTIONS"]))
	return opts, from
}

// jvmFlag finds -XX:name=N among the options; the last wins.
func jvmFlag(name string, opts, from []string) Setting {
	s := Setting{Name: "-XX:" + name}
	for i, o := range opts {
		if v, ok := strings.CutPrefix(o, "-XX:"+name+"="); ok {
			s = Setting{Name: s.Name, Raw: v, From: from[i]}
			if n, err := positive(v); err == nil {
				s.Set, s.Value = true, n
			}
		}
	}
	return s
}

func inspectJVM(p *Process, r reader, in procInfo) *Warning {
	opts, from := jvmOptions(in.args, in.env)
	p.Setting = jvmFlag("ActiveProcessorCount", opts, from)
	p.Extra = []Setting{jvmFlag("ParallelGCThreads", opts, from), jvmFlag("ConcGCThreads", opts, from)}
	support := true
	for _, o := range opts {
		switch o {
		case "-XX:-UseContainerSupport":
			support = false
		case "-XX:+UseContainerSupport":
			support = true
		}
	}
	// JAVA_HOME/bin/java, or JAVA_HOME/jre/bin/java on JDK 8.
	bin := path.Dir(strings.TrimSuffix(in.exe, " (deleted)"))
	var tried []string
	for _, home := range []string{path.Dir(bin), path.Dir(path.Dir(bin))} {
		f := r.inRoot(path.Join(home, "release"))
		tried = append(tried, f)
		if b, err := os.ReadFile(f); err == nil {
			if v, ok := parseReleaseVersion(b); ok {
				p.Version = v
				break
			}
		}
	}
	var w *Warning
	v, ok := parseJavaVersion(p.Version)
	switch {
	case !support:
		p.Aware = "-XX:-UseContainerSupport"
	case p.Version == "":
		p.Aware = "JDK version unknown"
		w = &Warning{PID: p.PID, Why: "JVM version unknown: no JAVA_VERSION in " + strings.Join(tried, " or ")}
	case !ok:
		p.Aware = "JDK version " + p.Version + " not read"
	case p.Layout == "":
		p.Aware = "no cgroup cpu controller seen"
	default:
		p.ContainerAware = jvmReadsLayout(v, p.Layout)
		if p.ContainerAware {
			p.Aware = fmt.Sprintf("JDK %s reads cgroup %s", p.Version, p.Layout)
		} else {
			p.Aware = fmt.Sprintf("JDK %s does not read cgroup %s (v1: 8u191 and 10 on; v2: 8u372, 11.0.16 and 15 on)", p.Version, p.Layout)
		}
	}
	return w
}

func inspectNode(p *Process, in procInfo) {
	p.Setting = envSetting("UV_THREADPOOL_SIZE", in.env)
	// The official images set NODE_VERSION; the binary does not say.
	p.Version = in.env["NODE_VERSION"]
}

// nginxDefaultConf is where Debian's and the official image's nginx look
// without -c; a relative -c is taken from its directory, as nginx takes
// it from its configuration prefix.
const nginxDefaultConf = "/etc/nginx/nginx.conf"

// nginxArgs are the master's arguments: the master and workers rewrite
// their command line into one title ("nginx: master process /usr/sbin/nginx
// -c /etc/nginx/nginx.conf"), so the title is split back into words.
func nginxArgs(args []string) []string {
	if len(args) > 0 && strings.HasPrefix(args[0], "nginx: ") {
		f := strings.Fields(strings.Join(args, " "))
		for i, w := range f {
			if w == "process" {
				return f[i+1:]
			}
		}
		return nil
	}
	if len(args) > 0 {
		return args[1:]
	}
	return nil
}

func inspectNginx(p *Process, r reader, in procInfo) *Warning {
	args := nginxArgs(in.args)
	p.Setting = Setting{Name: "worker_processes"}
	if g, ok := flagValue(args, "-g", ""); ok {
		if v, ok := parseNginxWorkers([]byte(g)); ok {
			p.Setting = nginxSetting(v, "cmdline -g")
			return nil
		}
	}
	conf := nginxDefaultConf
	if c, ok := flagValue(args, "-c", ""); ok {
		conf = c
		if !path.IsAbs(c) {
			conf = path.Join(path.Dir(nginxDefaultConf), c)
		}
	}
	b, err := os.ReadFile(r.inRoot(conf))
	if err != nil {
		return &Warning{PID: p.PID, Why: "nginx's worker_processes unknown: " + err.Error(), Err: err}
	}
	if v, ok := parseNginxWorkers(b); ok {
		p.Setting = nginxSetting(v, conf)
	}
	return nil
}

func nginxSetting(v, from string) Setting {
	s := Setting{Name: "worker_processes", Raw: v, From: from, Set: true}
	if v == "auto" {
		return s
	}
	n, err := positive(v)
	s.Value, s.Set = n, err == nil
	return s
}

func inspectEnvoy(p *Process, in procInfo) {
	if len(in.args) > 1 {
		p.Setting, _ = argSetting(envoyConcurrency, envoyConcurrency, "", in.args[1:], "cmdline")
	} else {
		p.Setting = Setting{Name: envoyConcurrency}
	}
}

// pythonServer names the Python server in a command line.
func pythonServer(args []string) string {
	for i, a := range args {
		if i > 2 {
			break // python [-m] SERVER ...
		}
		switch b := path.Base(a); {
		case b == "gunicorn" || strings.HasPrefix(a, "gunicorn:"):
			return "gunicorn"
		case b == "uvicorn":
			return "uvicorn"
		}
	}
	return ""
}

func inspectPython(p *Process, in procInfo, base string) {
	p.Server = pythonServer(in.args)
	p.Version = in.env["PYTHON_VERSION"]
	if v, ok := strings.CutPrefix(base, "python"); ok && p.Version == "" && strings.Contains(v, ".") {
		p.Version = v
	}
	if p.Server == "" {
		return
	}
	// gunicorn: the command line over GUNICORN_CMD_ARGS over
	// WEB_CONCURRENCY; uvicorn: its command line over WEB_CONCURRENCY.
	short := ""
	if p.Server == "gunicorn" {
		short = gunicornWorkers
	}
	if s, ok := argSetting(serverWorkers, serverWorkers, short, in.args[1:], "cmdline"); ok {
		p.Setting = s
		return
	}
	if p.Server == "gunicorn" {
		if s, ok := argSetting(serverWorkers, serverWorkers, short, strings.Fields(in.env["GUNICORN_CMD_ARGS"]), "GUNICORN_CMD_ARGS"); ok {
			p.Setting = s
			return
		}
	}
	p.Setting = envSetting("WEB_CONCURRENCY", in.env)
}

func inspectDotNet(p *Process, r reader, in procInfo) {
	p.Setting = envSetting("DOTNET_PROCESSOR_COUNT", in.env)
	if !p.Setting.Set {
		if s := envSetting("COMPlus_PROCESSOR_COUNT", in.env); s.Raw != "" {
			p.Setting = s
		}
	}
	p.ContainerAware, p.Aware = true, ".NET reads its cgroup's CPU limit (since .NET Core 3.0)"
	p.Version = in.env["DOTNET_VERSION"]
	if lib, ok := r.coreCLR(); ok && p.Version == "" {
		// A shared runtime: .../shared/Microsoft.NETCore.App/8.0.1/libcoreclr.so;
		// a self-contained application's directory says nothing.
		if d := path.Dir(lib); path.Base(path.Dir(d)) == "Microsoft.NETCore.App" {
			p.Version = path.Base(d)
		}
	}
}
