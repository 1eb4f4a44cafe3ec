package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps the failure instead of failing.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Errorf(f string, a ...any) { r.fail(fmt.Sprintf(f, a...)) }

// Fatalf cannot stop Compare here: the first failure is the one kept.
func (r *recorder) Fatalf(f string, a ...any) { r.fail(fmt.Sprintf(f, a...)) }

func (r *recorder) fail(s string) {
	if r.failed == "" {
		r.failed = s
	}
}

func TestCompare(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "x.golden")
	r := &recorder{TB: t}
	Compare(r, path, []byte("a\n"))
	if !strings.Contains(r.failed, "go test -update writes it") {
		t.Errorf("missing golden file: %q", r.failed)
	}
	r.failed = ""
	*update = true
	Compare(r, path, []byte("a\nb\n"))
	*update = false
	if b, err := os.ReadFile(path); err != nil || string(b) != "a\nb\n" {
		t.Fatalf("-update wrote %q, %v", b, err)
	}
	r.failed = ""
	Compare(r, path, []byte("a\nb\n"))
	if r.failed != "" {
		t.Errorf("equal bytes failed: %s", r.failed)
	}
	r.failed = ""
	Compare(r, path, []byte("a\nc\n"))
	if !strings.Contains(r.failed, "line 2:") || !strings.Contains(r.failed, `"b"`) || !strings.Contains(r.failed, `"c"`) {
		t.Errorf("a differing line: %q", r.failed)
	}
}
