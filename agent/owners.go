package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/watch"
)

// PodOwners reads the owners of the pods on one node from the Kubernetes
// API: one list of pods with a field selector on the node (the RBAC it
// needs: list pods). A ReplicaSet that a Deployment made (its name is the
// Deployment's plus the pod-template-hash) is reported as the Deployment,
// which needs no read of ReplicaSets.
type PodOwners struct {
	// Server is the API server's URL; Token the bearer token.
	Server string
	Token  string
	Node   string
	Client *http.Client
}

// serviceAccountDir is where Kubernetes mounts a pod's service account.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// InClusterOwners returns a PodOwners for the agent's own pod: the API
// server from KUBERNETES_SERVICE_HOST and _PORT, the service account's
// token and CA from their mount.
func InClusterOwners(node string) (*PodOwners, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, fmt.Errorf("owner lookup: KUBERNETES_SERVICE_HOST/PORT unset: not in a pod; run without the owner lookup")
	}
	tok, err := os.ReadFile(filepath.Join(serviceAccountDir, "token"))
	if err != nil {
		return nil, fmt.Errorf("owner lookup: %w: mount the service account token (automountServiceAccountToken)", err)
	}
	ca, err := os.ReadFile(filepath.Join(serviceAccountDir, "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("owner lookup: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("owner lookup: %s/ca.crt holds no certificate", serviceAccountDir)
	}
	if node == "" {
		return nil, fmt.Errorf("owner lookup: no node name: name the node (the manifests set it from spec.nodeName)")
	}
	return &PodOwners{Server: "https://" + net.JoinHostPort(host, port), Token: strings.TrimSpace(string(tok)), Node: node,
		Client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}}, nil
}

type podList struct {
	Items []struct {
		Metadata struct {
			Namespace       string            `json:"namespace"`
			Name            string            `json:"name"`
			UID             string            `json:"uid"`
			Labels          map[string]string `json:"labels"`
			OwnerReferences []struct {
				Kind       string `json:"kind"`
				Name       string `json:"name"`
				Controller *bool  `json:"controller"`
			} `json:"ownerReferences"`
		} `json:"metadata"`
		Spec struct {
			Containers     []specContainer `json:"containers"`
			InitContainers []specContainer `json:"initContainers"`
		} `json:"spec"`
		Status struct {
			ContainerStatuses     []containerStatus `json:"containerStatuses"`
			InitContainerStatuses []containerStatus `json:"initContainerStatuses"`
		} `json:"status"`
	} `json:"items"`
}

type specContainer struct {
	Name      string `json:"name"`
	Resources struct {
		Limits   map[string]string `json:"limits"`
		Requests map[string]string `json:"requests"`
	} `json:"resources"`
}

type containerStatus struct {
	Name        string `json:"name"`
	ContainerID string `json:"containerID"` // containerd://ID, cri-o://ID
}

// Pods is what the pod list says about the node's pods: their owners, and
// their names and containers' names by pod UID and container ID (what the
// kubelet's log directories give, for a node whose /var/log/pods the agent
// cannot open).
type Pods struct {
	Owners map[watch.PodName]Owner
	Names  *watch.PodNames
	// Spec is each container's CPU resources as its pod's spec asks for
	// them (by pod, then container name): after an in-place resize the
	// spec changes at once, the cgroup when the kubelet has applied it.
	Spec map[watch.PodName]map[string]SpecCPU
}

// Lookup lists the node's pods and returns their owners and names.
func (p *PodOwners) Lookup(ctx context.Context) (Pods, error) {
	u := p.Server + "/api/v1/pods?fieldSelector=" + url.QueryEscape("spec.nodeName="+p.Node)
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return Pods{}, err
	}
	if p.Token != "" {
		req.Header.Set("Authorization", "Bearer "+p.Token)
	}
	req.Header.Set("Accept", "application/json")
	c := p.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return Pods{}, fmt.Errorf("listing pods on %s: %w", p.Node, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Pods{}, fmt.Errorf("listing pods on %s: %s: the agent's service account needs list on pods (k8s render agent grants it)", p.Node, resp.Status)
	}
	var l podList
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		return Pods{}, fmt.Errorf("listing pods on %s: %w", p.Node, err)
	}
	out := Pods{Owners: make(map[watch.PodName]Owner, len(l.Items)), Names: watch.NewPodNames(), Spec: make(map[watch.PodName]map[string]SpecCPU, len(l.Items))}
	for _, it := range l.Items {
		m := it.Metadata
		o := Owner{Kind: "Pod", Name: m.Name}
		for _, r := range m.OwnerReferences {
			if r.Controller == nil || !*r.Controller {
				continue
			}
			o = Owner{Kind: r.Kind, Name: r.Name}
			if h := m.Labels["pod-template-hash"]; r.Kind == "ReplicaSet" && h != "" && strings.HasSuffix(r.Name, "-"+h) {
				o = Owner{Kind: "Deployment", Name: strings.TrimSuffix(r.Name, "-"+h)}
			}
		}
		name := watch.PodName{Namespace: m.Namespace, Name: m.Name}
		out.Owners[name] = o
		specs := map[string]SpecCPU{}
		for _, c := range append(it.Spec.Containers, it.Spec.InitContainers...) {
			specs[c.Name] = specCPUOf(c.Resources.Requests["cpu"], c.Resources.Limits["cpu"])
		}
		out.Spec[name] = specs
		if m.UID == "" {
			continue
		}
		containers := map[string]string{}
		for _, c := range append(it.Status.ContainerStatuses, it.Status.InitContainerStatuses...) {
			if _, id, ok := strings.Cut(c.ContainerID, "://"); ok && id != "" {
				containers[id] = c.Name
			}
		}
		out.Names.Add(m.UID, name, containers)
	}
	return out, nil
}

// askOwners asks refreshOwners for a look-up soon (Config.Owners set): a
// container appeared that the names do not know.
func (a *Agent) askOwners() {
	if a.cfg.Owners == nil {
		return
	}
	select {
	case a.lookup <- struct{}{}:
	default: // one is asked for already
	}
}

// OwnersSettle is how long after a container the names do not know is
// found the agent asks the API again (its cgroup is made before the kubelet
// posts its status, which names it); OwnersGap is the least time between
// two such look-ups. Containers named neither way wait for the minute's.
const (
	OwnersSettle = 2 * time.Second
	OwnersGap    = 10 * time.Second
)

// refreshOwners reads the pods' owners and names at start and every minute,
// and soon after a container they do not name appears.
func (a *Agent) refreshOwners(ctx context.Context) {
	if a.cfg.Owners == nil {
		return
	}
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		a.lookupOwners(ctx)
		last := time.Now()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.lookup:
			wait := time.NewTimer(max(a.settle, a.gap-time.Since(last)))
			select {
			case <-ctx.Done():
				wait.Stop()
				return
			case <-wait.C:
			}
		}
	}
}

// lookupOwners asks Config.Owners once and keeps what it says: the owners,
// and the names for the watcher (used from its next discovery).
func (a *Agent) lookupOwners(ctx context.Context) {
	o, err := a.cfg.Owners(ctx)
	if err != nil {
		a.lookupsFailed.Add(1)
		a.cfg.Logger.Warn("owner lookup", "err", err)
		return
	}
	a.lookupsOK.Add(1)
	a.mu.Lock()
	a.owners, a.specs = o.Owners, o.Spec
	a.mu.Unlock()
	if o.Names != nil {
		a.w.SetNames(o.Names)
	}
}

// namesOf labels a group: Kubernetes names where the kubelet's log
// directories gave them, else the pod UID and container ID from the cgroup
// path, else the group's name.
func namesOf(path string, id watch.Identity, owners map[watch.PodName]Owner) Names {
	n := Names{Namespace: id.Namespace, Pod: id.Pod, Container: id.Container, Cgroup: path}
	if n.Pod == "" {
		n.Pod = id.PodUID
	}
	if id.Kind == watch.KindPod {
		// A pod's own group (a pod-level limit: pod.go): container "" with
		// the pod's labels, as cAdvisor labels its pod-level series.
		n.Kind = KindPod
	} else if n.Container == "" {
		n.Container = id.ContainerID
		if n.Container == "" {
			n.Container = id.Name
		}
	}
	if o, ok := owners[watch.PodName{Namespace: id.Namespace, Name: id.Pod}]; ok && id.Pod != "" {
		n.OwnerKind, n.OwnerName = o.Kind, o.Name
	}
	return n
}
