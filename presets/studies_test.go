package presets

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestEveryPresetCitesAStudy: each preset's Source is a study with a title,
// an author and a date, each given or marked "not confirmed".
func TestEveryPresetCitesAStudy(t *testing.T) {
	for _, p := range All() {
		s, ok := StudyOf(p)
		if !ok {
			t.Errorf("%s: source %q is no study of Studies()", p.Name, p.Source)
			continue
		}
		if s.Title == "" || s.Author == "" || s.Date == "" || s.Measured == "" {
			t.Errorf("%s: study %q lacks a title, author, date or what it measured (write \"not confirmed\" where unknown)", p.Name, s.Name)
		}
	}
}

// TestFindingsCitesTheStudies: docs/findings.md, written by make reproduce,
// holds the studies as WriteStudies writes them now, and points nowhere
// outside the repository: the page and the presets' metadata stay in step
// without running the (root, minutes-long) measurements again.
func TestFindingsCitesTheStudies(t *testing.T) {
	doc, err := os.ReadFile("../docs/findings.md")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteStudies(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, b.Bytes()) {
		t.Errorf("docs/findings.md does not hold the studies as presets.WriteStudies writes them: " +
			"run make reproduce, or paste its ## The studies section (go test ./presets -run TestFindingsCitesTheStudies -v prints it)")
		t.Log("\n" + b.String())
	}
	if strings.Contains(string(doc), "../../") {
		t.Error("docs/findings.md points outside the repository (../../)")
	}
}
