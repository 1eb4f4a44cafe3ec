package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/internal/golden"
)

// cases are the golden reports: each names the results directories it draws.
var cases = []struct {
	name string
	dirs []string
}{
	{"limits", []string{"testdata/limits"}},
	{"ramp", []string{"testdata/ramp"}},
	{"compare", []string{"testdata/limits", "testdata/limits-b"}},
	{"measured-vs-simulated", []string{"testdata/limits", "testdata/limits-sim"}},
}

func load(t testing.TB, dirs []string) []*Source {
	t.Helper()
	var out []*Source
	for _, d := range dirs {
		s, err := Load(d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	AutoLabel(out)
	return out
}

func render(t testing.TB, dirs []string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, load(t, dirs), Options{}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestGolden(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := render(t, c.dirs)
			// The same input gives the same bytes.
			if again := render(t, c.dirs); !bytes.Equal(got, again) {
				t.Fatal("two renderings of the same results differ")
			}
			golden.Compare(t, filepath.Join("testdata", "golden", c.name+".html"), got)
		})
	}
}

// TestSelfContained checks that nothing in a report points outside the file.
func TestSelfContained(t *testing.T) {
	for _, c := range cases {
		html := string(render(t, c.dirs))
		for _, bad := range []string{"http://", "https://", "src=\"/", "href=", "@import", "url(http"} {
			// The SVG namespace is an identifier, not a request.
			h := strings.ReplaceAll(html, `xmlns="http://www.w3.org/2000/svg"`, "")
			if strings.Contains(h, bad) {
				t.Errorf("%s: report contains %q", c.name, bad)
			}
		}
	}
}
