package sim

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/throttlelab/throttlelab/experiment"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/runner"
	"github.com/throttlelab/throttlelab/schemas"
)

// TestPodGroupSchema holds pod-group.json to schemas/podgroup.json: the
// simulator's, the local backend's kept in testdata/real/pod-limit, and
// the schema refuses a wrong type, a missing count and an unknown name.
func TestPodGroupSchema(t *testing.T) {
	c := jsonschema.NewCompiler()
	b, err := schemas.FS.ReadFile("podgroup.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource(schemas.BaseURL+"podgroup.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(schemas.BaseURL + "podgroup.json")
	if err != nil {
		t.Fatal(err)
	}
	validate := func(b []byte) error {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return err
		}
		return s.Validate(v)
	}

	e, err := experiment.LoadFile("../examples/pod-limit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := runner.Run(context.Background(), e, NewBackend(Options{Cores: 2}), runner.Options{Dir: out}); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(out, "runs", "*", "*", "*", record.PodGroupFile))
	measured, _ := filepath.Glob(filepath.Join("testdata", "real", "pod-limit", "runs", "*", "*", "*", record.PodGroupFile))
	if len(files) == 0 || len(measured) == 0 {
		t.Fatalf("%d simulated and %d measured %s files: nothing to check", len(files), len(measured), record.PodGroupFile)
	}
	var good []byte
	for _, f := range append(files, measured...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(b); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		good = b
	}
	for name, bad := range map[string]string{
		"wrong type":    strings.Replace(string(good), `"period_usec": 100000`, `"period_usec": "100ms"`, 1),
		"missing count": strings.Replace(string(good), `"nr_throttled"`, `"nr_throttles"`, 1),
		"unknown name":  strings.Replace(string(good), `"usage_cores"`, `"usage_millicores": 1, "usage_cores"`, 1),
	} {
		if bad == string(good) {
			t.Fatalf("%s: the replacement did not apply to\n%s", name, good)
		}
		if err := validate([]byte(bad)); err == nil {
			t.Errorf("%s: accepted:\n%s", name, bad)
		}
	}
}
