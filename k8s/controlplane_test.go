package k8s

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/testenv"

	"k8s.io/client-go/rest"
)

// The control plane the dry-run test runs: hack/k8s-binaries.sh builds it.
const (
	kubeVersion = "v1.37.0"
	binEnv      = "THROTTLELAB_K8S_BIN"
)

// controlPlaneBinaries returns the directory with etcd and kube-apiserver,
// or skips the test saying how to build them (fails in CI, which builds them).
func controlPlaneBinaries(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(binEnv)
	if dir == "" {
		dir = "/var/cache/throttlelab/k8s-" + kubeVersion
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		fi, err := os.Stat(filepath.Join(dir, b))
		if err == nil && fi.Mode()&0o111 != 0 {
			continue
		}
		msg := fmt.Sprintf("no %s in %s (set %s to another directory): build etcd and kube-apiserver %s once with `make k8s-binaries` (sh hack/k8s-binaries.sh, a few minutes, from the Go module proxy)", b, dir, binEnv, kubeVersion)
		testenv.Unavailable(t, "%s; CI must run it (.ci/run does)", msg)
	}
	out, err := exec.Command(filepath.Join(dir, "kube-apiserver"), "--version").Output()
	if err != nil || strings.TrimSpace(string(out)) != "Kubernetes "+kubeVersion {
		t.Fatalf("%s/kube-apiserver --version: %q %v: want Kubernetes %s (rebuild with make k8s-binaries)", dir, out, err, kubeVersion)
	}
	return dir
}

// controlPlane is etcd and kube-apiserver on loopback, in a temporary directory.
type controlPlane struct {
	url, token string
	caPEM      []byte
	dir        string
}

// proc is a started control-plane process: its log file and its end.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startControlPlane starts etcd and kube-apiserver on free loopback ports,
// waits until the API server is ready, and registers their stop (and the
// removal of their files) with t.Cleanup, so every path leaves nothing.
func startControlPlane(t *testing.T, bin string) *controlPlane {
	t.Helper()
	dir := t.TempDir()
	cp := &controlPlane{dir: dir, token: randomHex(t, 16)}
	ports := freePorts(t, 3)
	client, peer, secure := ports[0], ports[1], ports[2]

	etcdURL := "http://127.0.0.1:" + strconv.Itoa(client)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
	etcd := start(t, dir, "etcd", filepath.Join(bin, "etcd"),
		"--name", "test", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "test="+peerURL, "--unsafe-no-fsync", "--log-level", "warn")
	waitFor(t, etcd, 60*time.Second, func() bool {
		resp, err := http.Get(etcdURL + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	// The caller is a member of system:masters through a static token; the
	// service account keys are only there because the API server needs them.
	tokens := filepath.Join(dir, "tokens.csv")
	write(t, tokens, []byte(cp.token+`,throttlelab-test,throttlelab-test,"system:masters"`+"\n"))
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	write(t, filepath.Join(dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))
	certs := filepath.Join(dir, "certs")
	cp.url = "https://127.0.0.1:" + strconv.Itoa(secure)
	api := start(t, dir, "kube-apiserver", filepath.Join(bin, "kube-apiserver"),
		"--etcd-servers", etcdURL,
		// Loopback only; the kubernetes Service's endpoints would have to be
		// a routable address, so nobody keeps them.
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", strconv.Itoa(secure),
		"--endpoint-reconciler-type", "none",
		// No certificate given: the API server makes a self-signed one here.
		"--cert-dir", certs,
		"--token-auth-file", tokens, "--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file", filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--enable-priority-and-fairness=false")

	var httpc *http.Client
	waitFor(t, api, 180*time.Second, func() bool {
		if httpc == nil {
			ca, err := os.ReadFile(filepath.Join(certs, "apiserver.crt"))
			if err != nil {
				return false
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(ca) {
				return false
			}
			cp.caPEM = ca
			httpc = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		}
		req, _ := http.NewRequest(http.MethodGet, cp.url+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+cp.token)
		resp, err := httpc.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return cp
}

// restConfig is a client configuration for the control plane; warnings go
// to w.
func (cp *controlPlane) restConfig(w rest.WarningHandlerWithContext) *rest.Config {
	return &rest.Config{
		Host: cp.url, BearerToken: cp.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.caPEM},
		QPS:             200, Burst: 400,
		WarningHandlerWithContext: w,
	}
}

// start starts a process with its output in DIR/NAME.log; t.Cleanup stops it
// (SIGTERM, then SIGKILL after 15 s). It dies with the test process, too.
func start(t *testing.T, dir, name, path string, args ...string) *proc {
	t.Helper()
	log := filepath.Join(dir, name+".log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr, cmd.Dir = f, f, dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() { cmd.Wait(); f.Close(); close(p.done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// waitFor polls ready every 100 ms until it holds, failing the test with the
// process's last output if the process ends or the time is up.
func waitFor(t *testing.T, p *proc, limit time.Duration, ready func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !ready() {
		select {
		case <-p.done:
			t.Fatalf("%s ended before it was ready (%v): %s", p.name, p.cmd.ProcessState, tail(p.log))
		case <-ctx.Done():
			t.Fatalf("%s was not ready after %s: %s", p.name, limit, tail(p.log))
		case <-tick.C:
		}
	}
}

// tail is the end of a log file.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// warnings collects the warnings the API server returns.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// take returns the warnings since the last take.
func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.list
	w.list = nil
	return l
}
