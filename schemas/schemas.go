// Package schemas is throttlelab's JSON contract: the apiVersion and kind
// every JSON document carries, a JSON Schema per document (embedded, in
// this directory), and the names of the release before, which readers
// accept for one release.
//
//	enc.Encode(schemas.Doc(schemas.KindAdvice, advice))
//	// {"apiVersion":"throttlelab.dev/v1","kind":"Advice",...}
//
// It is a leaf: the agent imports it, and nothing here validates (the
// validator lives in schematest, for tests).
package schemas

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// APIVersion is the apiVersion of every JSON document throttlelab writes.
const APIVersion = "throttlelab.dev/v1"

// The kinds of document, each with its schema file (SchemaFile).
const (
	KindAdvice         = "Advice"         // advise -o json
	KindEvaluation     = "Evaluation"     // the agent's /evaluate
	KindAgentAdvice    = "AgentAdvice"    // the agent's /advice
	KindCheckResult    = "CheckResult"    // check -o json
	KindLintResult     = "LintResult"     // check --lint -o json
	KindGroupStats     = "GroupStats"     // top -o json, one line per group
	KindGroupStatsList = "GroupStatsList" // top --once -o json
	KindWorkloadAdvice = "WorkloadAdvice" // advise --prometheus/--agent -o json
	KindPodAdvice      = "PodAdvice"      // advise --demand DIR -o json
)

// Kinds lists every kind.
var Kinds = []string{KindAdvice, KindEvaluation, KindAgentAdvice, KindCheckResult, KindLintResult,
	KindGroupStats, KindGroupStatsList, KindWorkloadAdvice, KindPodAdvice}

// FS holds the schemas, one file per kind (SchemaFile) and the shared
// definitions (defs.json).
//
//go:embed *.json
var FS embed.FS

// BaseURL is where the schemas' $id values point.
const BaseURL = "https://throttlelab.dev/schemas/"

// SchemaFile is the schema file of kind in FS: "advice.json" for Advice.
func SchemaFile(kind string) string { return strings.ToLower(kind) + ".json" }

// Doc is v written as a document of kind: its JSON object with apiVersion
// and kind first. v must marshal to a JSON object.
func Doc(kind string, v any) json.Marshaler { return doc{kind, v} }

type doc struct {
	kind string
	v    any
}

func (d doc) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(d.v)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '{' {
		return nil, fmt.Errorf("%s document: %T does not marshal to a JSON object", d.kind, d.v)
	}
	head := fmt.Sprintf(`{"apiVersion":%q,"kind":%q`, APIVersion, d.kind)
	if bytes.Equal(b, []byte("{}")) {
		return []byte(head + "}"), nil
	}
	return append([]byte(head+","), b[1:]...), nil
}

// Renamed maps the JSON names of the release before (the agent's /advice,
// fleet rows, top, advise's blocks) to today's. Readers accept the old
// names for one release (Upgrade); then this map goes.
var Renamed = map[string]string{
	"limit_milli": "limit_millicores", "request_milli": "request_millicores", "burst_milli": "burst_millicores",
	"krr_milli": "krr_millicores", "vpa_milli": "vpa_millicores", "vpa_limit_milli": "vpa_limit_millicores",
	"advised_limit_milli": "advised_limit_millicores", "advised_burst_milli": "advised_burst_millicores",
	"advised_min_milli": "advised_min_millicores", "advised_max_milli": "advised_max_millicores",
	"from_limit_milli": "from_limit_millicores", "to_limit_milli": "to_limit_millicores",
	"from_request_milli": "from_request_millicores", "to_request_milli": "to_request_millicores",
	"period_usec": "period_us", "peak_window_usec": "peak_window_us", "quota_usec": "quota_us",
	"current_throttled_min": "current_throttled_periods_ratio_min", "current_throttled_max": "current_throttled_periods_ratio_max",
	"startup_throttled_advised": "startup_throttled_periods_ratio_advised",
	"start_s":                   "start_seconds", "end_s": "end_seconds",
}

// Upgrade rewrites a document of the release before to today's names: in
// every object, a key of Renamed becomes its new name unless the object
// has the new name already. Numbers keep their exact text.
func Upgrade(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(upgrade(v))
}

func upgrade(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = upgrade(e)
		}
		for old, nw := range Renamed {
			if e, ok := x[old]; ok {
				if _, has := x[nw]; !has {
					x[nw] = e
				}
				delete(x, old)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = upgrade(e)
		}
	}
	return v
}

// Decode reads one JSON document from r into v, accepting the names of the
// release before (Upgrade).
func Decode(r io.Reader, v any) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if b, err = Upgrade(b); err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
