package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxHandlerLines is how long a command's handler (a run... function) may
// be: it turns flags into a library call, and what takes longer belongs in
// the library.
const maxHandlerLines = 50

// thickHandlers are handlers known to be longer, each with the reason; the
// list only shrinks.
var thickHandlers = map[string]string{}

// TestHandlersAreThin checks every run... function of the package against
// maxHandlerLines.
func TestHandlersAreThin(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "run") || fn.Name.Name == "run" || fn.Name.Name == "runOptions" {
				continue
			}
			seen++
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if _, ok := thickHandlers[fn.Name.Name]; !ok && lines > maxHandlerLines {
				t.Errorf("%s: %s is %d lines (at most %d): move what is not flag handling into the library", name, fn.Name.Name, lines, maxHandlerLines)
			}
		}
	}
	if seen < 5 {
		t.Errorf("found %d handlers: the test no longer sees them", seen)
	}
}
