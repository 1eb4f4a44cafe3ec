package advise

import "os"

// WriteHTMLFile writes the advice as a self-contained HTML page.
func WriteHTMLFile(path string, d *Demand, a *Advice) error {
	return os.WriteFile(path, []byte("TODO"), 0o644)
}
