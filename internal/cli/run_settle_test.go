package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestContinueRefused: run --resume DIR --until-settled continues only a
// directory whose repeats stopped for their budget; a simulation run
// without --until-settled is refused before anything runs, in one line,
// exit 2.
func TestContinueRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "f09")
	var out, errb bytes.Buffer
	if code := runRoot(newRootCmd(), []string{"sim", "f09-burn-flow", "--out", dir}, &out, &errb); code != ExitOK && code != ExitOver {
		t.Fatalf("sim f09-burn-flow: exit %d: %s", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	args := []string{"run", "--resume", dir, "--until-settled", "--budget", "1m"}
	code := runRoot(newRootCmd(), args, &out, &errb)
	msg := strings.TrimSpace(errb.String())
	if code != ExitUsage || strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "holds no verdict of repeats until settled") {
		t.Errorf("throttlelab %s: exit %d, stderr %q: want exit %d and one line saying it holds no such verdict", strings.Join(args, " "), code, msg, ExitUsage)
	}
}
