package validation

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

//go:embed programs/Server.java
var javaServer []byte

// pgBin is Debian's PostgreSQL 15 programs.
const pgBin = "/usr/lib/postgresql/15/bin/"

func secs(d time.Duration) string { return strconv.Itoa(max(1, int(d.Round(time.Second)/time.Second))) }

// Programs are the real programs validated with standard clients (from
// Debian: nginx-light, postgresql, openjdk-17-jdk-headless; fortio from the
// Go module proxy). All are driven at a fixed rate (open loop), the demand
// advise's model replays: a closed-loop client such as wrk asks for less
// while the server is throttled, so the kernel counts less than predicted.
var Programs = []Program{
	{Name: "nginx", What: "nginx 1.22, 2 workers, gzip level 6 on a 64 KB text file; fortio 1.68 at a fixed 360 requests/s on 8 connections spread over each request's interval with 10% jitter (-uniform -jitter: independent clients, not 8 firing in lockstep; it catches up when behind: an open loop, as advise's model assumes)",
		Addr: "127.0.0.1:18080",
		Setup: func(_ context.Context, dir string) error {
			www := filepath.Join(dir, "www")
			os.MkdirAll(www, 0o755)
			os.MkdirAll(filepath.Join(dir, "tmp"), 0o755)
			var b strings.Builder
			for i := 0; b.Len() < 64*1024; i++ {
				fmt.Fprintf(&b, "line %d of the validation text: %x %x\n", i, i*2654435761, i*i*40503)
			}
			if err := os.WriteFile(filepath.Join(www, "big.txt"), []byte(b.String()), 0o644); err != nil {
				return err
			}
			t := filepath.Join(dir, "tmp")
			conf := fmt.Sprintf(`worker_processes 2;
daemon off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 256; }
http {
  access_log off;
  gzip on; gzip_comp_level 6; gzip_min_length 0; gzip_types text/plain;
  client_body_temp_path %[2]s; proxy_temp_path %[2]s; fastcgi_temp_path %[2]s; uwsgi_temp_path %[2]s; scgi_temp_path %[2]s;
  types { text/plain txt; }
  server { listen 127.0.0.1:18080; root %[3]s; }
}
`, dir, t, www)
			return os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644)
		},
		Server: func(dir string) []string { return []string{"nginx", "-c", filepath.Join(dir, "nginx.conf"), "-p", dir} },
		Client: func(dir string, d time.Duration) []string {
			return []string{"fortio", "load", "-quiet", "-qps", "360", "-c", "8", "-uniform", "-jitter", "-t", secs(d) + "s", "-H", "Accept-Encoding: gzip", "http://127.0.0.1:18080/big.txt"}
		},
	},
	{Name: "postgresql", What: "PostgreSQL 15 (its own background work: autovacuum, checkpoints); pgbench TPC-B-like at a fixed 600 transactions/s (-R), 8 clients on 2 threads, scale 5",
		Addr: "127.0.0.1:54329",
		Setup: func(ctx context.Context, dir string) error {
			pg := filepath.Join(dir, "pg")
			os.RemoveAll(pg)
			os.MkdirAll(pg, 0o700)
			if err := exec.CommandContext(ctx, "chown", "-R", "postgres:postgres", dir).Run(); err != nil {
				return err
			}
			return runClient(ctx, []string{"runuser", "-u", "postgres", "--", pgBin + "initdb", "-D", pg, "-A", "trust", "-U", "postgres"}, nil)
		},
		Server: func(dir string) []string {
			return []string{"runuser", "-u", "postgres", "--", pgBin + "postgres", "-D", filepath.Join(dir, "pg"), "-k", dir, "-p", "54329",
				"-c", "listen_addresses=127.0.0.1", "-c", "shared_buffers=64MB", "-c", "autovacuum_naptime=5s"}
		},
		Prime: func(ctx context.Context, dir string) error {
			return runClient(ctx, []string{"pgbench", "-i", "-q", "-s", "5", "-h", "127.0.0.1", "-p", "54329", "-U", "postgres", "postgres"}, nil)
		},
		Client: func(dir string, d time.Duration) []string {
			return []string{"pgbench", "-h", "127.0.0.1", "-p", "54329", "-U", "postgres", "-R", "600", "-c", "8", "-j", "2", "-T", secs(d), "postgres"}
		},
	},
	{Name: "jvm", What: "OpenJDK 17 HTTP service (com.sun.net.httpserver, 8 worker threads, ~1 ms of SHA-256 per request, JIT and GC threads); fortio 1.68 at a fixed 300 requests/s on 4 connections (-uniform -jitter, an open loop; wrk's closed loop, used before 2026-11-24 13:45, asks for less while the server is throttled)",
		Addr: "127.0.0.1:18081",
		Setup: func(_ context.Context, dir string) error {
			return os.WriteFile(filepath.Join(dir, "Server.java"), javaServer, 0o644)
		},
		Server: func(dir string) []string {
			return []string{"java", "-Xmx256m", "-XX:+UseParallelGC", filepath.Join(dir, "Server.java"), "18081"}
		},
		Client: func(dir string, d time.Duration) []string {
			return []string{"fortio", "load", "-quiet", "-qps", "300", "-c", "4", "-uniform", "-jitter", "-t", secs(d) + "s", "http://127.0.0.1:18081/"}
		},
	},
}

// FindProgram returns the program named name.
func FindProgram(name string) (Program, error) {
	var names []string
	for _, p := range Programs {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return Program{}, fmt.Errorf("program %q: want one of %v", name, names)
}
