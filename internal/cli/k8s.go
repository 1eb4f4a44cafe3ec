package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/agent"
	"github.com/throttlelab/throttlelab/k8s"
	"github.com/throttlelab/throttlelab/k8s/agentmanifest"
	"github.com/throttlelab/throttlelab/k8s/manifest"
)

type k8sRenderFlags struct {
	namespace string
	image     string
	quick     bool
	cores     int
	// agent only
	owners, podMonitor bool
	agentArgs          []string
	release, state     string
	createNamespace    bool
	hostProc           bool
}

// agentOptions are the agent's render options from the flags.
func (f k8sRenderFlags) agentOptions() (agentmanifest.Options, error) {
	opt := agentmanifest.Options{Namespace: f.namespace, Image: f.image, Owners: f.owners, PodMonitor: f.podMonitor, Args: f.agentArgs,
		Release: f.release, CreateNamespace: f.createNamespace, HostProc: f.hostProc}
	switch f.state {
	case "hostPath":
	case "emptyDir":
		opt.StateEmptyDir = true
	default:
		return opt, usagef("--state %q: give hostPath or emptyDir", f.state)
	}
	return opt, nil
}

func newK8sCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "k8s",
		Short:   "Render Kubernetes objects: an experiment's, or the agent's DaemonSet",
		Example: `  throttlelab k8s render examples/limits.yaml --image registry.example/throttlelab:v1`,
		Args:    exactArgs(0),
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var f k8sRenderFlags
	render := &cobra.Command{
		Use:   "render SPEC.yaml|PRESET|agent",
		Short: "Print the Kubernetes objects that run an experiment, or the agent",
		Long: `Print, as multi-document YAML, the objects that run an experiment on a
Kubernetes cluster: a Namespace enforcing the restricted Pod Security
Standard; per config its server pods (CONFIG-0, CONFIG-1, ...) with the
config's CPU requests and limits (a config with a pod block: one pod CONFIG
whose containers are the instances, under spec.resources with the pod-level
limit), a Service (ClusterIP for the random balancer, headless for the
client-side ones and a pod block), its neighbours as pods, and one load Job
per load. The same spec gives the same bytes.

"agent" renders the per-node agent instead (docs/fleet.md): Namespace,
ServiceAccount, list-pods RBAC with --owners, DaemonSet, headless Service,
and with --pod-monitor a Prometheus Operator PodMonitor; --agent-arg passes
flags to the agent (--agent-arg=--window=24h).

A spec the cluster cannot express (a cpuset, a CPU burst, a CFS period),
a name that is not a DNS label, or an image that is no image reference is
refused before anything is printed.`,
		Example: `  throttlelab k8s render examples/limits.yaml --image registry.example/throttlelab:v1
  throttlelab k8s render f01-logjam --quick --namespace lab`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runK8sRender(cmd, f, args[0]) },
	}
	fl := render.Flags()
	fl.StringVar(&f.namespace, "namespace", "", "namespace of every object (default throttlelab-NAME)")
	fl.StringVar(&f.image, "image", defaultImage(), "throttlelab image the pods run (a release's by default; make image builds one)")
	fl.BoolVar(&f.quick, "quick", false, "render a preset's quick variant")
	fl.IntVar(&f.cores, "cores", 0, "with --quick: scale for nodes of this many cores (default: this machine's)")
	fl.BoolVar(&f.owners, "owners", true, "agent: grant list on pods and name each pod's owner")
	fl.BoolVar(&f.podMonitor, "pod-monitor", false, "agent: add a Prometheus Operator PodMonitor")
	fl.StringArrayVar(&f.agentArgs, "agent-arg", nil, "agent: a flag for the agent (repeat)")
	fl.StringVar(&f.release, "release", agentmanifest.Name, "agent: name the objects as this Helm release of the chart would")
	fl.BoolVar(&f.createNamespace, "create-namespace", false, "agent: add the Namespace, labelled for the hostPath volumes (the chart's namespace.create)")
	fl.BoolVar(&f.hostProc, "host-proc", false, "agent: run in the host's PID namespace to read each container's runtime (the chart's runtime.hostProc; the agent can then read every process's environment)")
	fl.StringVar(&f.state, "state", "hostPath", "agent: where the checkpoints live: hostPath (kept across rollouts) or emptyDir")
	cmd.AddCommand(render, newK8sHoldCmd(), newK8sPackCmd(), newK8sStateDirCmd())
	return cmd
}

// newK8sHoldCmd is the load Job's results container: it keeps the pod up
// until the runner has copied the results out and deletes the Job.
func newK8sHoldCmd() *cobra.Command {
	var d time.Duration
	cmd := &cobra.Command{
		Use:     "hold",
		Example: `  throttlelab k8s hold --for 10m`,
		Short:   "Wait until stopped (SIGTERM) or for a time (in a load Job's pod)",
		Hidden:  true,
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), d)
			defer cancel()
			<-ctx.Done()
			return nil
		},
	}
	durationVar(cmd.Flags(), &d, "for", k8s.HoldFor, "longest wait")
	return cmd
}

// newK8sPackCmd writes a directory as a tar stream on standard output: the
// runner runs it in a load Job's pod, over exec, to copy the results out.
func newK8sPackCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "pack DIR",
		Example: `  throttlelab k8s pack /results > results.tar`,
		Short:   "Write DIR's files as a tar stream on standard output (in a load Job's pod)",
		Hidden:  true,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return k8s.PackDir(cmd.OutOrStdout(), args[0])
		},
	}
}

// newK8sStateDirCmd is the agent's init container: it hands the state
// directory (a hostPath the kubelet made root's) to the agent's user.
func newK8sStateDirCmd() *cobra.Command {
	var owner string
	cmd := &cobra.Command{
		Use:     "state-dir DIR",
		Example: `  throttlelab k8s state-dir /var/lib/throttlelab --owner 65532:65532`,
		Short:   "Check that DIR is a user's, and make it theirs (the agent's init container, with CAP_CHOWN)",
		Hidden:  true,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var uid, gid int
			if _, err := fmt.Sscanf(owner, "%d:%d", &uid, &gid); err != nil || uid < 0 || gid < 0 {
				return usagef("--owner %q: give UID:GID", owner)
			}
			return agent.OwnStateDir(args[0], uid, gid)
		},
	}
	cmd.Flags().StringVar(&owner, "owner", "65532:65532", "UID:GID to own DIR")
	return cmd
}

// runK8sRender renders, and then, when a development build rendered its own
// default image, says that no registry holds it.
func runK8sRender(cmd *cobra.Command, f k8sRenderFlags, arg string) error {
	err := renderK8s(cmd, f, arg)
	if note := devImageNote(); err == nil && note != "" && !cmd.Flags().Changed("image") {
		fmt.Fprintf(cmd.ErrOrStderr(), "throttlelab: warning: %s\n", note)
	}
	return err
}

func renderK8s(cmd *cobra.Command, f k8sRenderFlags, arg string) error {
	if arg == "agent" {
		return runK8sRenderAgent(cmd, f)
	}
	if f.cores != 0 && !f.quick {
		return usagef("--cores is for --quick")
	}
	if f.cores < 0 {
		return usagef("--cores %d: must be positive", f.cores)
	}
	cores := f.cores
	if f.quick {
		var err error
		if cores, err = orHostCores(f.cores); err != nil {
			return err
		}
	}
	e, _, err := specOf(arg, f.quick, cores)
	if err != nil {
		return err
	}
	m, err := k8s.Render(e, k8s.Options{Namespace: f.namespace, Image: f.image})
	var se *k8s.SpecError
	var oe *manifest.OptionError
	switch {
	case errors.As(err, &se):
		return usagef("%s: %v", arg, se)
	case errors.As(err, &oe):
		return usagef("--%s: %s", oe.Option, oe.Msg)
	case err != nil:
		return err
	}
	return m.WriteYAML(cmd.OutOrStdout())
}
