package local

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/throttlelab/throttlelab/cgroup"
)

// proc is a process the runner started in a group.
type proc struct {
	name   string
	cmd    *exec.Cmd
	url    string // servers only
	done   chan struct{}
	err    error // set when done closes
	stderr *tailBuffer
}

// placeScript moves the shell into each directory of $TL_CGROUPS, then execs the
// program: the program never runs outside its group.
const placeScript = `for d in $TL_CGROUPS; do echo $$ > "$d/cgroup.procs" || exit 97; done; exec "$0" "$@"`

// startInGroup starts binary args... inside group g. Children die with the runner
// (PDEATHSIG), so even a killed runner leaves no process behind.
// Without wantURL, the program's standard output goes to stdout (if not nil).
func startInGroup(g *cgroup.Group, name, binary string, args []string, wantURL bool, stdout io.Writer) (*proc, error) {
	var dirs []string
	for _, d := range g.Dirs {
		if strings.ContainsAny(d, " \t\n") {
			return nil, fmt.Errorf("cgroup directory %q has white space: not supported", d)
		}
		dirs = append(dirs, d)
	}
	cmd := exec.Command("/bin/sh", append([]string{"-c", placeScript, binary}, args...)...)
	cmd.Env = append(cmd.Environ(), "TL_CGROUPS="+strings.Join(dirs, " "))
	cmd.SysProcAttr = sysProcAttr()
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), stderr: &tailBuffer{max: 4096}}
	cmd.Stderr = p.stderr
	var out io.ReadCloser
	var err error
	if wantURL {
		if out, err = cmd.StdoutPipe(); err != nil {
			return nil, err
		}
	} else {
		cmd.Stdout = stdout
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	urlc := make(chan string, 1)
	if wantURL {
		go func() {
			r := bufio.NewReader(out)
			line, _ := r.ReadString('\n')
			f := strings.Fields(line)
			if len(f) >= 3 && f[0] == "listening" {
				urlc <- f[2]
			} else {
				urlc <- ""
			}
			io.Copy(io.Discard, r)
		}()
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	if wantURL {
		select {
		case p.url = <-urlc:
		case <-time.After(30 * time.Second):
		}
		if p.url == "" {
			p.kill()
			return nil, fmt.Errorf("%s did not start: %s", name, p.stderr.String())
		}
	}
	return p, nil
}

// waitHealthy polls /healthz until it answers.
func (p *proc) waitHealthy(ctx context.Context) error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(p.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was healthy: %v %s", p.name, p.err, p.stderr.String())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s was not healthy after 30 s", p.name)
		}
	}
}

// stop asks the process to end (SIGTERM), and kills it after grace.
func (p *proc) stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.kill()
	}
}

func (p *proc) kill() {
	p.cmd.Process.Kill()
	<-p.done
}

// exited reports whether the process ended, and how.
func (p *proc) exited() (bool, error) {
	select {
	case <-p.done:
		if p.err == nil {
			return true, errors.New("exited")
		}
		return true, p.err
	default:
		return false, nil
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
