package loadgen

import (
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/workload"
)

func TestSelectTilesByIterations(t *testing.T) {
	cat, err := workload.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	tiles, err := SelectTiles("iters:120000-200000", cat, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(tiles) < 1000 {
		t.Fatalf("%d tiles", len(tiles))
	}
	for _, tl := range tiles {
		info, _ := cat.Lookup(tl)
		if info.Iterations < 120000 || info.Iterations >= 200000 {
			t.Fatalf("tile %v costs %d iterations", tl, info.Iterations)
		}
	}
	for _, bad := range []string{"iters:5", "iters:200-100", "iters:a-b", "iters:1-2"} {
		if _, err := SelectTiles(bad, cat, 1); err == nil || !strings.Contains(err.Error(), "iters") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
