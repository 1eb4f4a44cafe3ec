package loadgen

import (
	"strings"
	"testing"

	"github.com/throttlelab/throttlelab/workload"
)

// selectTiles parses a tile set and selects its tiles, as a spec's tiles
// are parsed when read and selected when a run starts.
func selectTiles(spec string, cat *workload.Catalog, seed uint64) ([]workload.Tile, error) {
	s, err := ParseTiles(spec)
	if err != nil {
		return nil, err
	}
	return s.Select(cat, seed)
}

func TestSelectTilesByIterations(t *testing.T) {
	cat, err := workload.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	tiles, err := selectTiles("iters:120000-200000", cat, 1)
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
		if _, err := selectTiles(bad, cat, 1); err == nil || !strings.Contains(err.Error(), "iters") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestTileSetRoundTrip: every tile set is written as it is read, "" is a set
// not given (all tiles to Select), and a bad one is refused when read.
func TestTileSetRoundTrip(t *testing.T) {
	cat, err := workload.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{"all", "sample:500", "class:small", "iters:120000-200000"} {
		s, err := ParseTiles(spec)
		if err != nil {
			t.Fatal(err)
		}
		var back TileSet
		if err := back.Set(s.String()); err != nil || back != s || s.String() != spec {
			t.Errorf("%s: read back as %+v (%q), %v", spec, back, s.String(), err)
		}
	}
	zero, err := ParseTiles("")
	if err != nil || !zero.IsZero() {
		t.Fatalf(`"" = %+v, %v: want the zero set`, zero, err)
	}
	all, _ := ParseTiles("all")
	a, _ := zero.Select(cat, 3)
	b, _ := all.Select(cat, 3)
	if len(a) != workload.TileCount || len(b) != len(a) || a[0] != b[0] || a[len(a)-1] != b[len(b)-1] {
		t.Errorf("the zero set selects %d tiles, all %d: want the same %d", len(a), len(b), workload.TileCount)
	}
	for _, bad := range []string{"sample:0", "sample:26011", "class:huge", "everything"} {
		if _, err := ParseTiles(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
