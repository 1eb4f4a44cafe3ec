package loadgen

import (
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/workload"
)

// TestImageChecksumVerdict feeds the image check the catalogue's own hashes (what
// a complete, correct render delivers), then one wrong tile hash.
func TestImageChecksumVerdict(t *testing.T) {
	cat, err := workload.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := newRecorder(nil)
	r := &runner{
		cfg: Config{Mode: ModeImage}, rec: rec,
		src:      &source{reqs: make([]Request, workload.TileCount), finite: true},
		hashes:   make([]workload.TileHash, workload.TileCount),
		received: make([]bool, workload.TileCount),
	}
	for i, ti := range cat.Tiles {
		r.hashes[i], r.received[i] = ti.Hash, true
	}
	s := r.summary(1)
	if !s.Image.Match || s.Image.Checksum != workload.ImageSHA256 || s.Image.Verified != workload.TileCount || s.Failed() != nil {
		t.Errorf("a complete correct image: %+v, failed %v", s.Image, s.Failed())
	}
	r.hashes[12345][0] ^= 1
	s = r.summary(1)
	if s.Image.Match || s.Failed() == nil || !strings.Contains(s.Failed().Error(), "image checksum") {
		t.Errorf("a wrong tile: %+v, failed %v", s.Image, s.Failed())
	}
	r.received[7] = false
	s = r.summary(1)
	if s.Image.Checksum != "" || s.Image.Verified != workload.TileCount-1 || s.Failed() != nil {
		t.Errorf("an incomplete image has no checksum to compare: %+v", s.Image)
	}
}
