package k8s

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/testenv/testfs"
)

func TestPackUnpack(t *testing.T) {
	files := map[string]string{"requests.csv": "seq\n1\n", "summary.json": "{}\n", "probe/requests.csv": "seq\n"}
	src := testfs.Tree(t, files)
	var b bytes.Buffer
	if err := PackDir(&b, src); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	names, err := UnpackTo(&b, dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != len(files) {
		t.Errorf("unpacked %v, want %d files", names, len(files))
	}
	for name, body := range files {
		got, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || string(got) != body {
			t.Errorf("%s = %q, %v; want %q", name, got, err, body)
		}
	}
}

func TestUnpackRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		hdr  tar.Header
	}{
		{"parent", tar.Header{Name: "../evil", Typeflag: tar.TypeReg}},
		{"absolute", tar.Header{Name: "/etc/evil", Typeflag: tar.TypeReg}},
		{"unclean", tar.Header{Name: "a/../../evil", Typeflag: tar.TypeReg}},
		{"symlink", tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			tw := tar.NewWriter(&b)
			tw.WriteHeader(&tc.hdr)
			tw.Close()
			dst := t.TempDir()
			if _, err := UnpackTo(&b, dst); err == nil || !strings.Contains(err.Error(), "results stream") {
				t.Errorf("err = %v, want a refusal", err)
			}
		})
	}
}
