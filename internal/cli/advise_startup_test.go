package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/schemas/schematest"
)

// TestAdviseStartupJSONAndText: on a recorded JVM start, advise -o json
// carries the start-up object (the boost sized against the advised limit,
// here not needed), held to the advice schema, and the text prints the
// same start-up line before the pointer to --details.
func TestAdviseStartupJSONAndText(t *testing.T) {
	t.Chdir("../..")
	js := adviseOut(t, "--csv", "advise/testdata/jvm-start.csv.gz", "-o", "json")
	schematest.Check(t, "advise -o json with a start-up", []byte(js))
	var doc struct {
		Recommendation struct {
			LimitMilli int64 `json:"limit_millicores"`
		} `json:"recommendation"`
		Startup *struct {
			Boost *struct {
				WorkCPUSeconds   float64 `json:"work_cpu_seconds"`
				UnlimitedSeconds float64 `json:"unlimited_seconds"`
				AtLimitSeconds   float64 `json:"at_limit_seconds"`
				LimitMilli       int64   `json:"limit_millicores"`
				Needed           bool    `json:"needed"`
				Note             string  `json:"note"`
			} `json:"boost"`
		} `json:"startup"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Startup == nil || doc.Startup.Boost == nil {
		t.Fatalf("advise -o json has no start-up boost:\n%s", js)
	}
	b := doc.Startup.Boost
	if b.LimitMilli != doc.Recommendation.LimitMilli || b.WorkCPUSeconds <= 0 || b.UnlimitedSeconds <= 0 || b.AtLimitSeconds < b.UnlimitedSeconds || b.Note == "" {
		t.Errorf("start-up boost %+v against the advised %dm: want it sized against that limit, with its work and lengths", *b, doc.Recommendation.LimitMilli)
	}
	text := adviseOut(t, "--csv", "advise/testdata/jvm-start.csv.gz")
	i, j := strings.Index(text, "start-up boost: "), strings.Index(text, "--details)")
	if i < 0 || j < 0 || i > j {
		t.Errorf("the start-up line is not before the --details pointer:\n%s", text)
	}
	if !strings.Contains(text, "start-up boost: "+strings.TrimPrefix(b.Note, "no boost: ")) && !strings.Contains(text, b.Note) {
		t.Errorf("the text's start-up line is not the JSON's note %q:\n%s", b.Note, text)
	}
}
