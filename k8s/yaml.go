package k8s

import (
	"fmt"
	"io"

	"github.com/throttlelab/throttlelab/k8s/manifest"
)

// WriteYAML writes the objects as one multi-document YAML stream, in the
// order to apply them, keys sorted: the same manifests give the same bytes.
func (m *Manifests) WriteYAML(w io.Writer) error {
	header := fmt.Sprintf("# throttlelab k8s render: experiment %s in namespace %s.\n", m.Experiment, m.Namespace.Name) +
		"# A run needs its config's Service, server pods and neighbours, then the load Job\n" +
		"# of its load; applied all at once, every config runs at the same time.\n"
	return manifest.WriteDocuments(w, header, m.Objects())
}
