package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

var codeSpanRE = regexp.MustCompile("`([^`\n]+)`")

// pathLike matches a code span that is only a path: letters, digits and
// . _ - / * (a glob), with a slash; a :LINE or #anchor may follow.
var pathLike = regexp.MustCompile(`^([A-Za-z0-9_.*-]+/[A-Za-z0-9_.*/-]*)(:\d+|#[\w-]+)?$`)

// BrokenPaths returns the repository paths named in code spans of the
// checked files (Files) that do not exist, each as "FILE: PATH". A code
// span is a repository path when it is a path (see pathLike) whose first
// element is a directory at the root of the tree (`cgroup/peak_test.go`,
// `docs/`, `top/testdata/*.txtar`); paths under directories a command
// makes (`results/...`, `bin/...`) and absolute paths (`/sys/fs/cgroup`)
// are not the tree's and are not checked. A glob must match something.
func BrokenPaths(root string) ([]string, error) {
	files, err := Files(root)
	if err != nil {
		return nil, err
	}
	ignored := ignoredDirs(root)
	var out []string
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		for _, p := range repoPaths(root, string(src), ignored) {
			if !exists(root, p) {
				out = append(out, fmt.Sprintf("%s: %s", f, p))
			}
		}
	}
	return out, nil
}

// repoPaths are the code spans of src that name repository paths.
func repoPaths(root, src string, ignored map[string]bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range codeSpanRE.FindAllStringSubmatch(src, -1) {
		sm := pathLike.FindStringSubmatch(strings.TrimSpace(m[1]))
		if sm == nil {
			continue
		}
		p := sm[1]
		top, _, _ := strings.Cut(p, "/")
		if st, err := os.Stat(filepath.Join(root, top)); err != nil || !st.IsDir() || ignored[top] {
			continue
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// ignoredDirs are the top-level directories .gitignore keeps out of the
// tree ("/bin/", "/results/"): what commands make, not what ships.
func ignoredDirs(root string) map[string]bool {
	out := map[string]bool{}
	b, _ := os.ReadFile(filepath.Join(root, ".gitignore"))
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "/") && strings.HasSuffix(l, "/") && strings.Count(l, "/") == 2 {
			out[strings.Trim(l, "/")] = true
		}
	}
	return out
}

func exists(root, p string) bool {
	if strings.Contains(p, "*") {
		m, err := filepath.Glob(filepath.Join(root, p))
		return err == nil && len(m) > 0
	}
	_, err := os.Stat(filepath.Join(root, p))
	return err == nil
}
