package workload

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"strings"
	"testing"
)

// synthetic returns a complete catalogue with made-up costs and hashes, so the
// format can be tested without rendering 26010 tiles.
func synthetic() *Catalog {
	c := &Catalog{Kernel: KernelVersion, MaxIter: MaxIter, Tiles: make([]TileInfo, TileCount)}
	for i := range c.Tiles {
		t := TileInfo{Tile: TileAt(i), Iterations: uint64(i%1000) * 100000}
		t.Hash[0], t.Hash[1] = byte(i), byte(i>>8)
		c.Tiles[i] = t
	}
	return c
}

func catalogText(t *testing.T, c *Catalog) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteCatalog(&buf, c); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func gz(s string) *bytes.Buffer {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(s))
	zw.Close()
	return &buf
}

func TestCatalogRoundTrip(t *testing.T) {
	c := synthetic()
	got, err := ReadCatalog(gz(catalogText(t, c)))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tiles) != TileCount || got.Checksum() != c.Checksum() || got.Tiles[12345] != c.Tiles[12345] {
		t.Errorf("round trip changed the catalogue")
	}
}

func TestReadCatalogRejects(t *testing.T) {
	good := catalogText(t, synthetic())
	lines := strings.Split(good, "\n")
	tests := []struct {
		name string
		text string
		want string
	}{
		{"not a catalogue", "hello\n", "not a throttlelab tile catalogue"},
		{"other kernel", strings.Replace(good, "kernel="+KernelVersion, "kernel=mandelbrot-v0", 1), "regenerate it"},
		{"other max_iter", strings.Replace(good, "max_iter=4500", "max_iter=100", 1), "regenerate it"},
		{"truncated", strings.Join(lines[:1000], "\n") + "\n", "has 996 tiles"},
		{"corrupt hash", strings.Replace(good, ",0100", ",0200", 1), "corrupt"},
		{"out of order", strings.Replace(good, "\n1,0,", "\n2,0,", 1), "out of order"},
		{"bad header", strings.Replace(good, "x,y,iterations,sha256", "a,b", 1), "want header"},
		{"bad iterations", strings.Replace(good, "\n0,0,0,", "\n0,0,x,", 1), "iterations"},
		{"too many iterations", strings.Replace(good, "\n0,0,0,", "\n0,0,999999999999,", 1), "exceed"},
		{"short hash", strings.Replace(good, "\n0,0,0,0000", "\n0,0,0,00", 1), "64 hex digits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadCatalog(gz(tt.text))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := ReadCatalog(strings.NewReader("not gzip")); err == nil {
		t.Error("plain text accepted as a gzip catalogue")
	}
}

func TestRenderTilesAndCompare(t *testing.T) {
	// Cheap tiles far outside the set: a real render against a synthetic catalogue.
	tiles := []Tile{{0, 0}, {169, 0}, {0, 152}}
	got, err := RenderTiles(context.Background(), tiles, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := synthetic()
	for _, g := range got {
		c.Tiles[g.Index()] = g
	}
	if bad := Compare(c, got); len(bad) != 0 {
		t.Fatalf("tiles differ from themselves: %v", bad)
	}
	c.Tiles[got[1].Index()].Hash[5] ^= 1
	bad := Compare(c, got)
	if len(bad) != 1 || bad[0].Got.Tile != tiles[1] || !strings.Contains(bad[0].String(), "169,0") {
		t.Errorf("Compare = %v, want one mismatch for tile 169,0", bad)
	}
}

func TestBuildCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := BuildCatalog(ctx, 2, nil); err == nil {
		t.Error("cancelled build returned no error")
	}
}

func TestStatsSynthetic(t *testing.T) {
	st := synthetic().Stats()
	sumClasses, sumBins := 0, 0
	for _, n := range st.Classes {
		sumClasses += n
	}
	for _, b := range st.Histogram {
		sumBins += b.Count
		if b.Hi != 2*b.Lo {
			t.Errorf("bin %d..%d does not double", b.Lo, b.Hi)
		}
	}
	// Tiles of cost 0 fall below the first bin.
	zero := 0
	for _, ti := range synthetic().Tiles {
		if ti.Iterations == 0 {
			zero++
		}
	}
	if sumClasses != TileCount || sumBins+zero != TileCount {
		t.Errorf("classes hold %d tiles, bins %d (+%d of cost 0), want %d", sumClasses, sumBins, zero, TileCount)
	}
	if st.Percentiles["p0"] != 0 || st.Percentiles["p100"] != 999*100000 {
		t.Errorf("percentiles %v", st.Percentiles)
	}
}

func TestClassOf(t *testing.T) {
	for _, tt := range []struct {
		n    uint64
		want Class
	}{{0, ClassSmall}, {SmallMaxIterations - 1, ClassSmall}, {SmallMaxIterations, ClassMedium}, {LargeMinIterations - 1, ClassMedium}, {LargeMinIterations, ClassLarge}} {
		if got := ClassOf(tt.n); got != tt.want {
			t.Errorf("ClassOf(%d) = %s, want %s", tt.n, got, tt.want)
		}
	}
	if _, err := ParseClass("huge"); err == nil {
		t.Error("ParseClass accepted huge")
	}
}
