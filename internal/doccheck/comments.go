package doccheck

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
)

// A comment says what and why; a measured figure goes stale there unseen,
// so it lives in docs/ (dated, UndatedFigures) or in a benchmark's output.
// CommentFigures holds Go comments to the docs' rule for a measured figure
// (a number with a unit beside a word that says it was measured here), with
// two changes: the word and the figure must share a clause (split at commas
// too, since comments run clauses together, and a duration beside "the
// time it took" is no measurement), and ratios and decimal sizes count
// as figures. A measured figure is refused there whether dated or not.

// clauseRE splits a comment's sentence into clauses.
var clauseRE = regexp.MustCompile(`[.;:,]\s+`)

// commentFigureRE is a figure as comments write one beyond figureRE's
// units: a ratio (a number and an x) or a decimal size (MB, GB, kB).
var commentFigureRE = regexp.MustCompile(`\b\d+(\.\d+)?x\b|\d(\.\d+)?\s*(MB|GB|kB|KB|GiB)\b`)

// CommentFigures returns, for every comment of the module's Go files under
// root (tests included; testdata, vendor and hidden directories left out)
// with a sentence that holds a measured figure, a line "FILE:LINE: the
// sentence".
func CommentFigures(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		found, err := commentFiguresIn(path, filepath.ToSlash(rel))
		out = append(out, found...)
		return err
	})
	return out, err
}

func commentFiguresIn(path, rel string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	var out []string
	for _, g := range f.Comments {
		text := strings.Join(strings.Fields(g.Text()), " ")
		for _, s := range clauseRE.Split(text, -1) {
			if measureRE.MatchString(s) && (figureRE.MatchString(s) || commentFigureRE.MatchString(s)) {
				out = append(out, fmt.Sprintf("%s:%d: %.120s", rel, fset.Position(g.Pos()).Line, s))
			}
		}
	}
	return out, nil
}
