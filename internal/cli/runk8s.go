package cli

import (
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/k8s"
	"github.com/throttlelab/throttlelab/k8s/manifest"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/runner"
)

// runK8sFlags are run's flags for --backend kubernetes.
type runK8sFlags struct {
	backend      string
	kubeconfig   string
	context      string
	namespace    string
	image        string
	readyTimeout time.Duration
	hostNetwork  bool
	hostPort     int
}

func addRunK8sFlags(cmd *cobra.Command, f *runK8sFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.backend, "backend", "local", `where the runs happen: "local" (cgroups on this machine) or "kubernetes" (pods on a cluster)`)
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubernetes: kubeconfig file (default $KUBECONFIG, then ~/.kube/config)")
	fl.StringVar(&f.context, "context", "", "kubernetes: kubeconfig context (default the current one)")
	fl.StringVar(&f.namespace, "namespace", "", "kubernetes: namespace of every object (default throttlelab-NAME, made and deleted by the run)")
	fl.StringVar(&f.image, "image", defaultImage(), "kubernetes: the throttlelab image the pods run (make image builds it)")
	durationVar(fl, &f.readyTimeout, "ready-timeout", 3*time.Minute, "kubernetes: longest wait for a run's pods to be ready")
	fl.BoolVar(&f.hostNetwork, "host-network", false, "kubernetes, test rigs only: pods on the node's network, servers on loopback ports (no network plugin needed)")
	fl.IntVar(&f.hostPort, "host-port", k8s.DefaultHostPort, "kubernetes with --host-network: the first server port")
}

// backendFor picks the backend of a run: --backend, or when resuming the one
// the results directory was made with.
func (f runK8sFlags) resolve(cmd *cobra.Command, resumeDir string) (string, error) {
	if resumeDir != "" && !cmd.Flags().Changed("backend") {
		if env, err := record.ReadEnv(resumeDir); err == nil && env.Backend == "kubernetes" {
			return "kubernetes", nil
		}
	}
	switch f.backend {
	case "local", "kubernetes":
		return f.backend, nil
	}
	return "", usagef("--backend %q: want local or kubernetes (throttlelab sim simulates)", f.backend)
}

// k8sBackend is the kubernetes backend the flags describe.
func (f runK8sFlags) k8sBackend(cmd *cobra.Command) (runner.Backend, error) {
	if err := manifest.CheckImage(f.image); err != nil {
		return nil, usagef("--image: %v", err)
	}
	if f.readyTimeout <= 0 {
		return nil, usagef("--ready-timeout %s: must be positive", f.readyTimeout)
	}
	if f.hostPort < 1024 || f.hostPort > 65000 {
		return nil, usagef("--host-port %d: want 1024 to 65000", f.hostPort)
	}
	return k8s.NewBackend(k8s.BackendOptions{Kubeconfig: f.kubeconfig, Context: f.context, Namespace: f.namespace, Image: f.image,
		HostNetwork: f.hostNetwork, HostPort: f.hostPort, ReadyTimeout: f.readyTimeout, Log: cmd.ErrOrStderr()}), nil
}

// errNotLocal marks flags of one backend given to the other.
var errNotLocal = errors.New("--kubeconfig, --context, --namespace, --image, --ready-timeout, --host-network and --host-port are for --backend kubernetes")

func (f runK8sFlags) checkLocal(cmd *cobra.Command) error {
	for _, n := range []string{"kubeconfig", "context", "namespace", "image", "ready-timeout", "host-network", "host-port"} {
		if cmd.Flags().Changed(n) {
			return usageError{errNotLocal}
		}
	}
	return nil
}
