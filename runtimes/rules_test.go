package runtimes

import "testing"

func TestGoDefaultProcs(t *testing.T) {
	for _, c := range []struct {
		version string
		limit   float64
		cpus    int
		want    int
		ok      bool
	}{
		{"go1.24.6", 0.3, 8, 8, true}, // before 1.25: the CPUs, whatever the limit
		{"go1.25.0", 0, 8, 8, true},   // no limit: the CPUs
		{"go1.25.0", 0.3, 8, 2, true}, // rounded up to 1, raised to 2
		{"go1.25.3", 2.5, 8, 3, true}, // rounded up
		{"go1.26rc1", 3, 8, 3, true},  // whole limits stay
		{"go1.26.1", 16, 8, 8, true},  // at most the CPUs
		{"go1.25.0", 0.5, 1, 1, true}, // the minimum of 2 is still capped by the CPUs
		{"devel go1.27-abc", 1.2, 4, 2, true},
		{"gccgo", 1, 4, 0, false},
	} {
		got, ok := GoDefaultProcs(c.version, c.limit, c.cpus)
		if got != c.want || ok != c.ok {
			t.Errorf("GoDefaultProcs(%q, %v, %d) = %d, %v; want %d, %v", c.version, c.limit, c.cpus, got, ok, c.want, c.ok)
		}
	}
}

func TestJVMReadsLayout(t *testing.T) {
	for _, c := range []struct {
		version, layout string
		want            bool
	}{
		{"1.8.0_181", "v1", false},
		{"1.8.0_191", "v1", true},
		{"1.8.0_362", "v2", false},
		{"1.8.0_372", "v2", true},
		{"9.0.4", "v1", false},
		{"10.0.2", "v1", true},
		{"11.0.15", "v2", false},
		{"11.0.16", "v2", true},
		{"14.0.2", "v2", false},
		{"14.0.2", "v1", true},
		{"15", "v2", true},
		{"17.0.15", "v2", true},
		{"25-ea", "v2", true},
		{"21.0.1", "", false},
	} {
		v, ok := parseJavaVersion(c.version)
		if !ok {
			t.Fatalf("parseJavaVersion(%q) failed", c.version)
		}
		if got := jvmReadsLayout(v, c.layout); got != c.want {
			t.Errorf("JDK %s on %q: reads %v, want %v", c.version, c.layout, got, c.want)
		}
	}
}

func TestParseNginxWorkers(t *testing.T) {
	for _, c := range []struct {
		name, conf, want string
		found            bool
	}{
		{"auto", "user www-data;\nworker_processes auto;\npid /run/nginx.pid;\n", "auto", true},
		{"count after comment", "# worker_processes 8;\nworker_processes  4 ; # four\n", "4", true},
		{"absent", "events { worker_connections 768; }\n", "", false},
		{"inside a block is not main", "http { worker_processes 3; }\n", "", false},
		{"last wins", "worker_processes 2;\nworker_processes 6;", "6", true},
	} {
		got, found := parseNginxWorkers([]byte(c.conf))
		if got != c.want || found != c.found {
			t.Errorf("%s: got %q, %v; want %q, %v", c.name, got, found, c.want, c.found)
		}
	}
}

func TestFlagValue(t *testing.T) {
	args := []string{"app:app", "-w", "3", "--bind", "0:80"}
	for _, c := range []struct {
		args        []string
		long, short string
		want        string
		found       bool
	}{
		{args, "--workers", "-w", "3", true},
		{[]string{"--workers=5"}, "--workers", "-w", "5", true},
		{[]string{"-w7"}, "--workers", "-w", "7", true},
		{[]string{"--concurrency", "2", "--concurrency", "4"}, "--concurrency", "", "4", true},
		{[]string{"--worker-class", "gevent"}, "--workers", "-w", "", false},
		{[]string{"--workers"}, "--workers", "-w", "", false},
	} {
		got, found := flagValue(c.args, c.long, c.short)
		if got != c.want || found != c.found {
			t.Errorf("flagValue(%q, %s) = %q, %v; want %q, %v", c.args, c.long, got, found, c.want, c.found)
		}
	}
}

func TestParseStatState(t *testing.T) {
	for _, c := range []struct {
		stat string
		want byte
	}{
		{"123 (go) R 1 123", 'R'},
		{"124 (a ) S (b)) S 1 2", 'S'},
	} {
		got, err := parseStatState([]byte(c.stat))
		if err != nil || got != c.want {
			t.Errorf("parseStatState(%q) = %c, %v; want %c", c.stat, got, err, c.want)
		}
	}
	if _, err := parseStatState([]byte("123 (trunc")); err == nil {
		t.Error("a stat without the name's end parsed")
	}
}
