package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/throttlelab/throttlelab/agent"
	"github.com/throttlelab/throttlelab/fleet"
	"github.com/throttlelab/throttlelab/k8s/agentmanifest"
)

// Agent is the throttlelab agent pod of a node, reached through the API
// server's pods/proxy.
type Agent struct {
	Node, Namespace, Pod string
	Port                 int
}

// Agents finds the ready agent pod of every node: pods in any namespace
// labelled agentmanifest.PodSelector (every release of the chart, and
// k8s render agent), by node. A node with two (two releases) gets the
// first by namespace and name.
func Agents(ctx context.Context, cs kubernetes.Interface) (map[string]Agent, error) {
	sel := labels.SelectorFromSet(agentmanifest.PodSelector).String()
	pods, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, apiError(err, "list", "pods", "", "")
	}
	items := pods.Items
	sort.Slice(items, func(i, j int) bool {
		return items[i].Namespace+"/"+items[i].Name < items[j].Namespace+"/"+items[j].Name
	})
	out := map[string]Agent{}
	for i := range items {
		p := &items[i]
		if _, seen := out[p.Spec.NodeName]; seen || p.Spec.NodeName == "" || !podReady(p) {
			continue
		}
		out[p.Spec.NodeName] = Agent{Node: p.Spec.NodeName, Namespace: p.Namespace, Pod: p.Name, Port: metricsPort(p)}
	}
	return out, nil
}

// metricsPort is the agent container's port named metrics (the chart's),
// else agent.DefaultPort.
func metricsPort(p *corev1.Pod) int {
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.Name == "metrics" {
				return int(port.ContainerPort)
			}
		}
	}
	return agent.DefaultPort
}

// ProxyBase is the base URL of an agent through the API server: its
// /advice is ProxyBase+"/advice".
func (a Agent) ProxyBase(cfg *rest.Config) (string, error) {
	u, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return "", fmt.Errorf("the API server's URL: %w", err)
	}
	return strings.TrimRight(u.String(), "/") + "/api/v1/namespaces/" + a.Namespace + "/pods/" + a.Pod + ":" + strconv.Itoa(a.Port) + "/proxy", nil
}

// Reader reads agents through the API server.
type Reader struct {
	cs  kubernetes.Interface
	cfg *rest.Config
	hc  *http.Client
}

// NewReader makes a Reader from a client configuration.
func NewReader(cfg *rest.Config) (*Reader, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &Reader{cs: cs, cfg: cfg, hc: hc}, nil
}

// Clientset is the Reader's API client.
func (r *Reader) Clientset() kubernetes.Interface { return r.cs }

// Node is what one node's agent said: its containers as fleet rows and as
// the agent's own views (with the full advice).
type Node struct {
	Agent      Agent
	Containers []*fleet.Container
	Views      []fleet.AgentContainer
}

// ReadAgent reads one agent's /advice through the API server. RBAC that
// refuses the proxy is ErrForbidden naming "get pods/proxy"; an agent
// that does not answer, ErrUnreachable naming its node.
func (r *Reader) ReadAgent(ctx context.Context, a Agent) (*Node, error) {
	raw, err := r.cs.CoreV1().Pods(a.Namespace).ProxyGet("http", a.Pod, strconv.Itoa(a.Port), "/advice", nil).DoRaw(ctx)
	if err != nil {
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			return nil, fmt.Errorf("get pods/proxy of agent %s/%s (node %s): %w (RBAC): %v", a.Namespace, a.Pod, a.Node, ErrForbidden, apierrors.ReasonForError(err))
		}
		return nil, fmt.Errorf("the agent of node %s (%s/%s) through the API server is %w: %v", a.Node, a.Namespace, a.Pod, ErrUnreachable, err)
	}
	var doc fleet.AgentDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("the agent of node %s (%s/%s): not the agent's JSON: %v", a.Node, a.Namespace, a.Pod, err)
	}
	base, err := a.ProxyBase(r.cfg)
	if err != nil {
		return nil, err
	}
	// The rows, with the predictions /advice does not hold asked of
	// /evaluate: fleet reads an agent the same way at any base URL.
	cs, err := fleet.FromAgent(ctx, r.hc, base)
	if err != nil && !errors.Is(err, fleet.ErrNoData) {
		return nil, fmt.Errorf("the agent of node %s: %w", a.Node, err)
	}
	return &Node{Agent: a, Containers: cs, Views: doc.Containers}, nil
}

// Advice reads the advice of the workloads' containers from the agents of
// their nodes. A node without an agent is ErrNoAgent naming the node and a
// pod of the workload on it; an unscheduled pod is skipped.
func (r *Reader) Advice(ctx context.Context, ws []Workload) ([]*fleet.Container, map[string]*fleet.AgentContainer, error) {
	agents, err := Agents(ctx, r.cs)
	if err != nil {
		return nil, nil, err
	}
	want := map[string]bool{}
	var nodes []string
	seen := map[string]bool{}
	for _, w := range ws {
		for _, p := range w.Pods {
			want[p.Namespace+"/"+p.Name] = true
			if p.Node == "" || seen[p.Node] {
				continue
			}
			seen[p.Node] = true
			if _, ok := agents[p.Node]; !ok {
				return nil, nil, fmt.Errorf("node %s (pod %s/%s of %s) has %w running and ready: install the chart (helm install) or wait for its pod", p.Node, p.Namespace, p.Name, w, ErrNoAgent)
			}
			nodes = append(nodes, p.Node)
		}
	}
	sort.Strings(nodes)
	var rows []*fleet.Container
	views := map[string]*fleet.AgentContainer{}
	for _, n := range nodes {
		got, err := r.ReadAgent(ctx, agents[n])
		if err != nil {
			return nil, nil, err
		}
		for _, c := range got.Containers {
			if want[c.Namespace+"/"+c.Pod] {
				rows = append(rows, c)
			}
		}
		for i := range got.Views {
			v := &got.Views[i]
			if want[v.Namespace+"/"+v.Pod] {
				views[v.Namespace+"/"+v.Pod+"/"+v.Container] = v
			}
		}
	}
	if len(rows) == 0 {
		return nil, nil, fmt.Errorf("the agents of nodes %s have no demand yet for %s: %w", strings.Join(nodes, ", "), ws[0], fleet.ErrNoData)
	}
	return rows, views, nil
}

// All reads every node's agent: every container of the cluster the agents
// summarise. A node whose agent cannot be read is left out and its error
// joined to the one returned with what the others said.
func (r *Reader) All(ctx context.Context) ([]*fleet.Container, error) {
	agents, err := Agents(ctx, r.cs)
	if err != nil {
		return nil, err
	}
	if len(agents) == 0 {
		return nil, fmt.Errorf("%w on any node (pods labelled %s in any namespace): install the chart (helm install)", ErrNoAgent, labels.SelectorFromSet(agentmanifest.PodSelector))
	}
	nodes := make([]string, 0, len(agents))
	for n := range agents {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	var rows []*fleet.Container
	var errs []error
	for _, n := range nodes {
		got, err := r.ReadAgent(ctx, agents[n])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rows = append(rows, got.Containers...)
	}
	return rows, errors.Join(errs...)
}
