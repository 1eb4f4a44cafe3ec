package schemas_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/schemas"
	"github.com/throttlelab/throttlelab/schemas/schematest"
)

func TestDoc(t *testing.T) {
	b, err := json.Marshal(schemas.Doc(schemas.KindLintResult, struct {
		Findings []int `json:"findings"`
	}{[]int{}}))
	if err != nil || string(b) != `{"apiVersion":"throttlelab.dev/v1","kind":"LintResult","findings":[]}` {
		t.Errorf("Doc: %s %v", b, err)
	}
	if b, err := json.Marshal(schemas.Doc("X", struct{}{})); err != nil || string(b) != `{"apiVersion":"throttlelab.dev/v1","kind":"X"}` {
		t.Errorf("Doc of an empty object: %s %v", b, err)
	}
	if _, err := json.Marshal(schemas.Doc("X", []int{1})); err == nil {
		t.Error("Doc of an array: no error")
	}
}

// TestUpgrade reads a document of the release before: old names become
// today's at any depth, a new name already there wins, numbers keep their
// text.
func TestUpgrade(t *testing.T) {
	old := `{"node":"n","containers":[{"limit_milli":500,"advice":{"window":{"blocks":[{"start_s":0,"end_s":10.5}]}}}],"period_usec":100000,"limit_millicores":7,"x":0.1000000000000000055511151231257827}`
	b, err := schemas.Upgrade([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	c := got["containers"].([]any)[0].(map[string]any)
	blk := c["advice"].(map[string]any)["window"].(map[string]any)["blocks"].([]any)[0].(map[string]any)
	if c["limit_millicores"] != 500.0 || c["limit_milli"] != nil || blk["start_seconds"] != 0.0 || blk["end_seconds"] != 10.5 || got["period_us"] != 100000.0 || got["limit_millicores"] != 7.0 {
		t.Errorf("Upgrade:\n%s", b)
	}
	if !strings.Contains(string(b), `"x":0.1000000000000000055511151231257827`) {
		t.Errorf("Upgrade changed a number's text:\n%s", b)
	}
}

// TestSchemasRefuse holds the schemas able to fail: a retired name, a
// wrong type, a missing apiVersion, an unknown kind are each refused.
func TestSchemasRefuse(t *testing.T) {
	ok := `{"apiVersion":"throttlelab.dev/v1","kind":"Evaluation","limit_millicores":500,"burst_millicores":0,"period_us":100000,"quota_us":50000,"burst_us":0,"throttled_periods_ratio":0.1,"nr_periods":10,"nr_throttled":1}`
	if err := schematest.Validate([]byte(ok)); err != nil {
		t.Fatalf("a valid Evaluation refused: %v", err)
	}
	for name, doc := range map[string]string{
		"retired name":  strings.Replace(ok, `"limit_millicores"`, `"limit_milli"`, 1),
		"wrong type":    strings.Replace(ok, `"period_us":100000`, `"period_us":"100ms"`, 1),
		"ratio over 1":  strings.Replace(ok, `"throttled_periods_ratio":0.1`, `"throttled_periods_ratio":1.5`, 1),
		"no apiVersion": strings.Replace(ok, `"apiVersion":"throttlelab.dev/v1",`, ``, 1),
		"unknown kind":  strings.Replace(ok, `"Evaluation"`, `"Evaluations"`, 1),
		"unknown field": strings.Replace(ok, `"burst_us":0`, `"burst_us":0,"burst_usecs":0`, 1),
	} {
		if err := schematest.Validate([]byte(doc)); err == nil {
			t.Errorf("%s: accepted:\n%s", name, doc)
		}
	}
}

// TestSchemaFiles: every kind has its file, and every file parses.
func TestSchemaFiles(t *testing.T) {
	for _, k := range schemas.Kinds {
		b, err := schemas.FS.ReadFile(schemas.SchemaFile(k))
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		var v struct {
			ID string `json:"$id"`
		}
		if err := json.Unmarshal(b, &v); err != nil || v.ID != schemas.BaseURL+schemas.SchemaFile(k) {
			t.Errorf("%s: $id %q, %v", schemas.SchemaFile(k), v.ID, err)
		}
	}
}
