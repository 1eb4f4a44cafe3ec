package k8s

import (
	"bytes"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// WriteYAML writes the objects as one multi-document YAML stream, in the
// order to apply them, keys sorted: the same manifests give the same bytes.
func (m *Manifests) WriteYAML(w io.Writer) error {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# throttlelab k8s render: experiment %s in namespace %s.\n", m.Experiment, m.Namespace.Name)
	fmt.Fprintf(&buf, "# A run needs its config's Service, server pods and neighbours, then the load Job\n")
	fmt.Fprintf(&buf, "# of its load; applied all at once, every config runs at the same time.\n")
	return writeDocuments(w, &buf, m.Objects())
}

// writeDocuments appends objs to buf as YAML documents and writes buf to w.
func writeDocuments(w io.Writer, buf *bytes.Buffer, objs []runtime.Object) error {
	for _, o := range objs {
		b, err := marshal(o)
		if err != nil {
			return fmt.Errorf("writing %s as YAML: %w", o.GetObjectKind().GroupVersionKind().Kind, err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// marshal writes one object without the fields a typed object always has but
// a manifest should not: status, an empty spec, no creation time.
func marshal(o runtime.Object) ([]byte, error) {
	if u, ok := o.(*unstructured.Unstructured); ok {
		return yaml.Marshal(u.Object) // written as it is (a PodMonitor)
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	delete(u, "status")
	if s, ok := u["spec"].(map[string]any); ok && len(s) == 0 {
		delete(u, "spec")
	}
	unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u, "spec", "template", "metadata", "creationTimestamp")
	return yaml.Marshal(u)
}
