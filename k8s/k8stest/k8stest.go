// Package k8stest runs a real control plane (etcd and kube-apiserver on
// loopback, built by hack/k8s-binaries.sh) for the tests of the Kubernetes
// packages, and applies manifests to it. Without the binaries a test skips,
// saying how to build them, or fails where testenv requires every real part
// (CI).
package k8stest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// The control plane the tests run: hack/k8s-binaries.sh builds it.
const (
	// KubeVersion is the version of the kube-apiserver that
	// hack/k8s-binaries.sh builds and Binaries requires.
	KubeVersion = "v1.37.0"
	// BinEnv names the environment variable that points at another
	// directory of binaries.
	BinEnv = "THROTTLELAB_K8S_BIN"
)

// Binaries returns the directory with etcd and kube-apiserver,
// or skips the test saying how to build them (fails in CI, which builds them).
func Binaries(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(BinEnv)
	if dir == "" {
		dir = "/var/cache/throttlelab/k8s-" + KubeVersion
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		fi, err := os.Stat(filepath.Join(dir, b))
		if err == nil && fi.Mode()&0o111 != 0 {
			continue
		}
		msg := fmt.Sprintf("no %s in %s (set %s to another directory): build etcd and kube-apiserver %s once with `make k8s-binaries` (sh hack/k8s-binaries.sh, a few minutes, from the Go module proxy)", b, dir, BinEnv, KubeVersion)
		testenv.Unavailable(t, "%s; CI must run it (.ci/run does)", msg)
	}
	out, err := exec.Command(filepath.Join(dir, "kube-apiserver"), "--version").Output()
	if err != nil || strings.TrimSpace(string(out)) != "Kubernetes "+KubeVersion {
		t.Fatalf("%s/kube-apiserver --version: %q %v: want Kubernetes %s (rebuild with make k8s-binaries)", dir, out, err, KubeVersion)
	}
	return dir
}

// ControlPlane is etcd and kube-apiserver on loopback, in a temporary directory.
type ControlPlane struct {
	URL, Token string
	CAPEM      []byte
	Dir        string
}

// proc is a started control-plane process: its log file and its end.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// Start starts etcd and kube-apiserver on free loopback ports,
// waits until the API server is ready, and registers their stop (and the
// removal of their files) with t.Cleanup, so every path leaves nothing.
// apiArgs are added to the API server's flags (a feature gate turned off).
func Start(t testing.TB, bin string, apiArgs ...string) *ControlPlane {
	t.Helper()
	dir := t.TempDir()
	cp := &ControlPlane{Dir: dir, Token: randomHex(t, 16)}
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
	write(t, tokens, []byte(cp.Token+`,throttlelab-test,throttlelab-test,"system:masters"`+"\n"))
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
	cp.URL = "https://127.0.0.1:" + strconv.Itoa(secure)
	args := []string{"--etcd-servers", etcdURL,
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
		"--enable-priority-and-fairness=false"}
	api := start(t, dir, "kube-apiserver", filepath.Join(bin, "kube-apiserver"), append(args, apiArgs...)...)

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
			cp.CAPEM = ca
			httpc = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		}
		req, _ := http.NewRequest(http.MethodGet, cp.URL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+cp.Token)
		resp, err := httpc.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return cp
}

// restConfig is a client configuration for the control plane; Warnings go
// to w.
func (cp *ControlPlane) RESTConfig(w rest.WarningHandlerWithContext) *rest.Config {
	return &rest.Config{
		Host: cp.URL, BearerToken: cp.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.CAPEM},
		QPS:             200, Burst: 400,
		WarningHandlerWithContext: w,
	}
}

// Kubeconfig writes a kubeconfig for the control plane (context "test",
// namespace ns if given) into the control plane's directory and returns
// its path: what kubectl, helm and a kubectl plugin read.
func (cp *ControlPlane) Kubeconfig(t testing.TB, ns string) string {
	t.Helper()
	path := filepath.Join(cp.Dir, "kubeconfig")
	ca := filepath.Join(cp.Dir, "kubeconfig-ca.crt")
	write(t, ca, cp.CAPEM)
	nsLine := ""
	if ns != "" {
		nsLine = "\n    namespace: " + ns
	}
	write(t, path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: test
  user:
    token: %s
contexts:
- name: test
  context:
    cluster: test
    user: test%s
current-context: test
`, cp.URL, ca, cp.Token, nsLine)))
	return path
}

// start starts a process with its output in DIR/NAME.log; t.Cleanup stops it
// (SIGTERM, then SIGKILL after 15 s). It dies with the test process, too.
func start(t testing.TB, dir, name, path string, args ...string) *proc {
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
func waitFor(t testing.TB, p *proc, limit time.Duration, ready func() bool) {
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

// AwaitRBAC waits until a role or binding just created is in force: the
// API server's RBAC authorizer sees it through its informers, a moment
// later (longer on a loaded machine or an unoptimized build). try makes
// a request the grant allows; it is polled until it returns anything but
// Forbidden, and the test fails after 30 s of Forbidden or on any other
// error, naming what (the request in words).
func AwaitRBAC(t testing.TB, what string, try func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := try()
		if err == nil {
			return
		}
		if !apierrors.IsForbidden(err) || time.Now().After(deadline) {
			t.Fatalf("%s after the grant: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond) // polling the condition, bounded by the deadline
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

func freePorts(t testing.TB, n int) []int {
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

func write(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// Warnings collects the Warnings the API server returns.
type Warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *Warnings) HandleWarningHeaderWithContext(_ context.Context, code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// take returns the Warnings since the last take.
func (w *Warnings) Take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.list
	w.list = nil
	return l
}

// Applier applies unstructured objects through the dynamic client.
type Applier struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
	cs     kubernetes.Interface
}

func NewApplier(t testing.TB, cp *ControlPlane, w *Warnings) *Applier {
	t.Helper()
	cfg := cp.RESTConfig(w)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(dc)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &Applier{dyn: dyn, mapper: restmapper.NewDiscoveryRESTMapper(groups), cs: cs}
}

// apply applies one object (server-side apply, a dry run if dryRun) and
// fails the test on any error.
func (a *Applier) Apply(ctx context.Context, t testing.TB, file string, u *unstructured.Unstructured, dryRun bool) *unstructured.Unstructured {
	t.Helper()
	out, err := a.TryApply(ctx, u, dryRun)
	if err != nil {
		t.Errorf("%s: %s %s: %v", file, u.GetKind(), u.GetName(), err)
	}
	return out
}

func (a *Applier) TryApply(ctx context.Context, u *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	gvk := u.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	var r dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		r = a.dyn.Resource(m.Resource).Namespace(u.GetNamespace())
	}
	opts := metav1.ApplyOptions{FieldManager: "throttlelab-test", Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return r.Apply(ctx, u.GetName(), u, opts)
}

// TryCreate creates one object (a dry run if dryRun): unlike an apply, it
// fails with AlreadyExists when an object of that name is there, which is
// how a test sees two sets of objects collide.
func (a *Applier) TryCreate(ctx context.Context, u *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	gvk := u.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	var r dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		r = a.dyn.Resource(m.Resource).Namespace(u.GetNamespace())
	}
	opts := metav1.CreateOptions{FieldManager: "throttlelab-test"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return r.Create(ctx, u, opts)
}

// defaultServiceAccount makes the namespace's default service account, which
// a cluster's controller manager would (there is none here) and which the
// ServiceAccount admission looks up for every pod.
func (a *Applier) DefaultServiceAccount(ctx context.Context, t testing.TB, ns string) {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
	if _, err := a.cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// ReadDocuments reads a multi-document YAML file as unstructured objects.
func ReadDocuments(t testing.TB, path string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if obj == nil {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)})
	}
	if len(out) == 0 {
		t.Fatalf("%s: no documents", path)
	}
	return out
}
