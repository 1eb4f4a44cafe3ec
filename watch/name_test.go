package watch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/cgroup"
)

func TestIdentify(t *testing.T) {
	id := strings.Repeat("3f", 32)
	uid := "1f2e3d4c-5b6a-4789-8abc-def012345678"
	uu := strings.ReplaceAll(uid, "-", "_")
	static := "6a6f3e8d9b1c4f2e8a7d5c3b1a0f9e8d"
	pods := &PodNames{
		pods:       map[string]PodName{uid: {"shop", "cart-7d9f"}, static: {"kube-system", "etcd-node1"}},
		containers: map[string]string{id: "cart"},
		withNamed:  map[string]bool{"shop/cart-7d9f": true},
	}
	sandbox := strings.Repeat("5a", 32)
	tests := []struct {
		path string
		want Identity
	}{
		{"/", Identity{Name: "/", Kind: KindRoot}},
		{"/kubepods", Identity{Name: "kubepods", Kind: KindQoS}},
		{"/kubepods.slice/kubepods-besteffort.slice", Identity{Name: "kubepods/besteffort", Kind: KindQoS, QoS: cgroup.BestEffort}},
		// cgroupfs driver
		{"/kubepods/burstable/pod" + uid, Identity{Name: "shop/cart-7d9f", Kind: KindPod, QoS: cgroup.Burstable, PodUID: uid, Namespace: "shop", Pod: "cart-7d9f"}},
		{"/kubepods/burstable/pod" + uid + "/" + id, Identity{Name: "shop/cart-7d9f/cart", Kind: KindContainer, QoS: cgroup.Burstable, PodUID: uid, Namespace: "shop", Pod: "cart-7d9f", Container: "cart", ContainerID: id}},
		// the pod's sandbox (pause): a container of a named pod without a log link
		{"/kubepods/burstable/pod" + uid + "/" + sandbox, Identity{Name: "shop/cart-7d9f/5a5a5a5a5a5a (sandbox)", Kind: KindContainer, QoS: cgroup.Burstable, PodUID: uid, Namespace: "shop", Pod: "cart-7d9f", ContainerID: sandbox, Sandbox: true}},
		{"/kubepods/pod" + static, Identity{Name: "kube-system/etcd-node1", Kind: KindPod, QoS: cgroup.Guaranteed, PodUID: static, Namespace: "kube-system", Pod: "etcd-node1"}},
		// systemd driver, with the kubelet's cgroup root at /kubelet
		{"/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod" + uu + ".slice/cri-containerd-" + id + ".scope",
			Identity{Name: "shop/cart-7d9f/cart", Kind: KindContainer, QoS: cgroup.Burstable, PodUID: uid, Namespace: "shop", Pod: "cart-7d9f", Container: "cart", ContainerID: id, Runtime: "containerd"}},
		// CRI-O: the container and its conmon; a pod the log directories do not name
		{"/kubepods.slice/kubepods-pod" + strings.ReplaceAll("99999999-8888-4777-8666-555555555555", "-", "_") + ".slice/crio-" + strings.Repeat("ab", 32) + ".scope",
			Identity{Name: "pod 99999999-8888-4777-8666-555555555555/abababababab", Kind: KindContainer, QoS: cgroup.Guaranteed, PodUID: "99999999-8888-4777-8666-555555555555", ContainerID: strings.Repeat("ab", 32), Runtime: "cri-o"}},
		{"/kubepods.slice/kubepods-pod" + uu + ".slice/crio-conmon-" + id + ".scope",
			Identity{Name: "shop/cart-7d9f/cart (conmon)", Kind: KindRuntime, QoS: cgroup.Guaranteed, PodUID: uid, Namespace: "shop", Pod: "cart-7d9f", Container: "cart", ContainerID: id, Runtime: "conmon"}},
		// a group made inside a container
		{"/kubepods/pod" + uid + "/" + id + "/init.scope", Identity{Name: "shop/cart-7d9f/cart/init.scope", Kind: KindOther, QoS: cgroup.Guaranteed, PodUID: uid, Namespace: "shop", Pod: "cart-7d9f", Container: "cart", ContainerID: id}},
		// container runtimes outside Kubernetes
		{"/system.slice/docker-" + id + ".scope", Identity{Name: "docker 3f3f3f3f3f3f", Kind: KindContainer, ContainerID: id, Runtime: "docker"}},
		{"/docker/" + id, Identity{Name: "docker 3f3f3f3f3f3f", Kind: KindContainer, ContainerID: id, Runtime: "docker"}},
		{"/machine.slice/libpod-" + id + ".scope", Identity{Name: "podman 3f3f3f3f3f3f", Kind: KindContainer, ContainerID: id, Runtime: "podman"}},
		{"/machine.slice/libpod-conmon-" + id + ".scope", Identity{Name: "conmon 3f3f3f3f3f3f", Kind: KindRuntime, ContainerID: id, Runtime: "conmon"}},
		// systemd, throttlelab, anything else
		{"/system.slice", Identity{Name: "system.slice", Kind: KindSlice}},
		{"/system.slice/containerd.service", Identity{Name: "containerd.service", Kind: KindService}},
		{"/user.slice/user-1000.slice/session-3.scope", Identity{Name: "session-3.scope", Kind: KindScope}},
		{"/throttlelab/limits-4242/limited-0", Identity{Name: "throttlelab/limits-4242/limited-0", Kind: KindThrottlelab}},
		{"/throttlelab-test-12-1", Identity{Name: "/throttlelab-test-12-1", Kind: KindOther}},
	}
	for _, tt := range tests {
		if got := Identify(tt.path, pods); got != tt.want {
			t.Errorf("Identify(%s)\n got %+v\nwant %+v", tt.path, got, tt.want)
		}
	}
}

func TestKubeletMappingAppliesTo(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{"/kubepods/burstable/pod1f2e3d4c-5b6a-4789-8abc-def012345678", true},
		{"/kubepods/burstable", true},
		{"/throttlelab/run-1/limited-0", true},
		{"/throttlelab/run-1", false},
		{"/system.slice/docker-" + strings.Repeat("3f", 32) + ".scope", false},
		{"/system.slice", false},
	}
	for _, tt := range tests {
		if got := Identify(tt.path, nil).Kubelet(); got != tt.want {
			t.Errorf("%s: kubelet mapping %v, want %v", tt.path, got, tt.want)
		}
	}
}

func TestReadPodNames(t *testing.T) {
	root := t.TempDir()
	id := strings.Repeat("c1", 32)
	for _, d := range []string{
		"var/log/pods/shop_cart-7d9f_1f2e3d4c-5b6a-4789-8abc-def012345678/cart",
		"var/log/pods/not-a-pod-dir",
		"var/log/containers",
	} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	for _, f := range []string{"cart-7d9f_shop_my-app-" + id + ".log", "junk.log", "a_b_c-notanid.log"} {
		os.WriteFile(filepath.Join(root, "var/log/containers", f), nil, 0o644)
	}
	p := ReadPodNames(root)
	if n, ok := p.pod("1f2e3d4c-5b6a-4789-8abc-def012345678"); !ok || n != (PodName{"shop", "cart-7d9f"}) || len(p.pods) != 1 {
		t.Errorf("pods %v", p.pods)
	}
	if c, ok := p.container(id); !ok || c != "my-app" || len(p.containers) != 1 {
		t.Errorf("containers %v", p.containers)
	}
	if !p.named("shop", "cart-7d9f") || p.named("shop", "other") {
		t.Errorf("pods with named containers %v", p.withNamed)
	}
	if empty := ReadPodNames(t.TempDir()); len(empty.pods)+len(empty.containers) != 0 {
		t.Errorf("a node without kubelet logs names %v", empty)
	}
}
