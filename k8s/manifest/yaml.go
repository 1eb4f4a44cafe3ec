package manifest

import (
	"bytes"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// WriteDocuments writes header (comment lines, each ending in a newline)
// and then objs as one multi-document YAML stream, in the order given, keys
// sorted: the same objects give the same bytes. Nothing is written when an
// object cannot be marshalled.
func WriteDocuments(w io.Writer, header string, objs []runtime.Object) error {
	var buf bytes.Buffer
	buf.WriteString(header)
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
