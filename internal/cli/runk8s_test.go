package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunBackendFlags: the backend's flags are checked before anything runs,
// and a cluster that cannot be reached fails with what to do.
func TestRunBackendFlags(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-kubeconfig")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown backend", []string{"run", "../../examples/limits.yaml", "--backend", "cloud"}, 2, `--backend "cloud": want local or kubernetes`},
		{"cluster flags without the backend", []string{"run", "../../examples/limits.yaml", "--namespace", "lab"}, 2, "are for --backend kubernetes"},
		{"bad image", []string{"run", "../../examples/limits.yaml", "--backend", "kubernetes", "--image", "Not An Image"}, 2, "--image"},
		{"no kubeconfig", []string{"run", "../../examples/limits.yaml", "--backend", "kubernetes", "--kubeconfig", missing, "--out", filepath.Join(t.TempDir(), "out")}, 1, "loading the kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(tt.args, &out, &errb)
			if code != tt.code || !strings.Contains(errb.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errb.String(), tt.code, tt.want)
			}
		})
	}
}
