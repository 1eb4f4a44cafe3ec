package manifest

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestImageReferences(t *testing.T) {
	for _, ref := range []string{
		"throttlelab", "throttlelab:dev", "throttlelab:65b0453-dirty", "registry.example/team/throttlelab:v1.2.3",
		"localhost:5000/throttlelab", "ghcr.io/throttlelab/throttlelab@sha256:" + strings.Repeat("ab", 32),
		"registry.example:443/a/b/c:tag@sha256:" + strings.Repeat("0", 64), "a__b/c-d.e",
	} {
		if err := CheckImage(ref); err != nil {
			t.Errorf("%s: %v", ref, err)
		}
	}
	for _, ref := range []string{"", "Throttlelab:v1", "throttle lab", "https://registry.example/throttlelab", "throttlelab@sha256:abc", "throttlelab:"} {
		var oe *OptionError
		if err := CheckImage(ref); !errors.As(err, &oe) || oe.Option != "image" {
			t.Errorf("%q: %v, want an OptionError on image", ref, err)
		}
	}
}

// TestWriteDocuments writes the header, then each object as a document
// without status, an empty spec or a creation time.
func TestWriteDocuments(t *testing.T) {
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "lab"}}
	sa := &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "lab"}}
	var b bytes.Buffer
	if err := WriteDocuments(&b, "# two objects\n", []runtime.Object{ns, sa}); err != nil {
		t.Fatal(err)
	}
	want := "# two objects\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: lab\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\n  namespace: lab\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
