// Package schematest holds real outputs to the schemas of package schemas
// in tests: Check validates one document against its kind's JSON Schema
// (github.com/santhosh-tekuri/jsonschema/v6, draft 2020-12) and against
// the vocabulary (no retired name, every key's unit in its name).
package schematest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/throttlelab/throttlelab/schemas"
)

var (
	once     sync.Once
	compiled map[string]*jsonschema.Schema
	loadErr  error
)

func load() {
	c := jsonschema.NewCompiler()
	files, err := fs.Glob(schemas.FS, "*.json")
	if err != nil {
		loadErr = err
		return
	}
	for _, f := range files {
		b, err := schemas.FS.ReadFile(f)
		if err != nil {
			loadErr = err
			return
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			loadErr = fmt.Errorf("%s: %w", f, err)
			return
		}
		if err := c.AddResource(schemas.BaseURL+f, v); err != nil {
			loadErr = fmt.Errorf("%s: %w", f, err)
			return
		}
	}
	compiled = map[string]*jsonschema.Schema{}
	for _, k := range schemas.Kinds {
		s, err := c.Compile(schemas.BaseURL + schemas.SchemaFile(k))
		if err != nil {
			loadErr = fmt.Errorf("%s: %w", schemas.SchemaFile(k), err)
			return
		}
		compiled[k] = s
	}
}

// Validate checks doc, one JSON document, against the schema of its kind
// (which it must name, with apiVersion) and the vocabulary.
func Validate(doc []byte) error {
	once.Do(load)
	if loadErr != nil {
		return loadErr
	}
	var head struct{ APIVersion, Kind string }
	if err := json.Unmarshal(doc, &head); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	if head.APIVersion != schemas.APIVersion {
		return fmt.Errorf("apiVersion %q, want %q", head.APIVersion, schemas.APIVersion)
	}
	s, ok := compiled[head.Kind]
	if !ok {
		return fmt.Errorf("kind %q: no schema (kinds: %v)", head.Kind, schemas.Kinds)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("%s: %w", head.Kind, err)
	}
	if bad := Vocabulary(v); len(bad) > 0 {
		return fmt.Errorf("%s: names outside the vocabulary: %v", head.Kind, bad)
	}
	return nil
}

// retired are name endings the vocabulary has left: millicores are
// *_millicores, microseconds *_us (cpu_stat's kernel names aside), seconds
// *_seconds.
var retired = regexp.MustCompile(`(_milli|_usec|_s)$`)

// kernelNames are cpu.stat's own keys, kept as the kernel writes them in
// advise's sampled.cpu_stat.
var kernelNames = map[string]bool{"throttled_usec": true, "burst_usec": true}

// Vocabulary returns the keys of v (a decoded document) that end as a
// retired name does or are renamed (schemas.Renamed), sorted.
func Vocabulary(v any) []string {
	seen := map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if _, old := schemas.Renamed[k]; old || (retired.MatchString(k) && !kernelNames[k]) {
					seen[k] = true
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Check fails t unless doc is valid (Validate); what names the output.
func Check(t testing.TB, what string, doc []byte) {
	t.Helper()
	if err := Validate(doc); err != nil {
		if len(doc) > 600 {
			doc = append(doc[:600:600], "..."...)
		}
		t.Errorf("%s: %v\n%s", what, err, doc)
	}
}
