package doccheck

import (
	"fmt"
	"regexp"
	"strings"
)

// historyRef is a reference to the project's history by number: an issue
// ("issue 27", "issues 36") or a run ("run 4"; not "run 1.6% longer"). A reference page says what is
// true now; history lives in git and in docs/log.md, which names its runs by
// date and "#N".
var historyRef = regexp.MustCompile(`\b[Ii]ssues? #?[0-9]+|\b[Rr]un [0-9]+(?:[^.%0-9]|$)`)

// HistoryRefs lists, as "FILE:LINE: TEXT", every reference to the project's
// history by number in README.md and docs/ under root.
func HistoryRefs(root string) ([]string, error) {
	var out []string
	err := eachFile(root, func(f string, src []byte) error {
		for i, line := range strings.Split(string(src), "\n") {
			if m := historyRef.FindString(line); m != "" {
				out = append(out, fmt.Sprintf("%s:%d: %s", f, i+1, strings.TrimRight(m, " ,;:)")))
			}
		}
		return nil
	})
	return out, err
}
