package k8s

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"
)

// ImageBinary is the throttlelab binary in the image (the entrypoint).
const ImageBinary = "/usr/local/bin/throttlelab"

// fallback says when to retry a stream with SPDY after WebSockets failed:
// what kubectl does against API servers older than WebSocket streaming.
func fallback(err error) bool {
	return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
}

// execIn runs command in a container of a pod through the API server (as
// kubectl exec), its standard output to stdout; standard error comes back in
// the error.
func execIn(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, ns, pod, container string, command []string, stdout io.Writer) error {
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
	if err != nil {
		return err
	}
	sp, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, sp, fallback)
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: &stderr}); err != nil {
		return fmt.Errorf("exec %s in %s/%s: %w: %s", strings.Join(command, " "), pod, container, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// podHTTP sends one request to port of a pod through a port-forward (as
// kubectl port-forward: API server, kubelet, then the pod's own network
// namespace, so a server on the pod's loopback answers too) and decodes a
// JSON answer into out.
func podHTTP(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, ns, pod string, port int, method, path string, out any) error {
	u := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("portforward").URL()
	rt, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return err
	}
	sp := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, "POST", u)
	ws, err := portforward.NewSPDYOverWebsocketDialer(u, cfg)
	if err != nil {
		return err
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	defer close(stop)
	var errOut bytes.Buffer
	fw, err := portforward.NewOnAddresses(portforward.NewFallbackDialer(ws, sp, fallback), []string{"127.0.0.1"},
		[]string{"0:" + strconv.Itoa(port)}, stop, ready, io.Discard, &errOut)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-done:
		return fmt.Errorf("port-forward to %s:%d: %v %s", pod, port, err, strings.TrimSpace(errOut.String()))
	case <-ctx.Done():
		return ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		return fmt.Errorf("port-forward to %s:%d: no local port: %v", pod, port, err)
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, method, fmt.Sprintf("http://127.0.0.1:%d%s", ports[0].Local, path), nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return fmt.Errorf("%s %s on pod %s: %w %s", method, path, pod, err, strings.TrimSpace(errOut.String()))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s on pod %s: %w", method, path, pod, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s on pod %s: %s: %s", method, path, pod, resp.Status, strings.TrimSpace(string(b)))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s on pod %s: %w", method, path, pod, err)
	}
	return nil
}
