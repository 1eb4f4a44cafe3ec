package workload

import (
	"context"
	"encoding/hex"
	"math/rand/v2"
	"testing"
)

func TestDefaultCatalog(t *testing.T) {
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	sum := c.Checksum()
	if got := hex.EncodeToString(sum[:]); got != ImageSHA256 {
		t.Errorf("catalogue image checksum %s, want ImageSHA256 %s", got, ImageSHA256)
	}
	// Callers get copies.
	c.Tiles[0].Iterations++
	c2, _ := DefaultCatalog()
	if c2.Tiles[0].Iterations == c.Tiles[0].Iterations {
		t.Error("DefaultCatalog returned shared tiles")
	}
	st := c.Stats()
	// The set's interior: thousands of tiles at the maximum cost.
	if st.Percentiles["p100"] != TilePixels*MaxIter || st.Classes[ClassLarge] < 1000 || st.Classes[ClassSmall] < 10000 {
		t.Errorf("cost distribution lacks its two clusters: %+v", st.Classes)
	}
}

// TestCatalogMatchesKernel recomputes the golden tiles and a few random ones and
// checks them against the committed catalogue.
func TestCatalogMatchesKernel(t *testing.T) {
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	tiles := []Tile{{85, 70}, {90, 40}, {0, 0}, {169, 152}}
	// Cheap tiles drawn with a fixed seed (`tiles verify` samples at random).
	small := c.TilesOfClass(ClassSmall)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 8; i++ {
		tiles = append(tiles, small[r.IntN(len(small))].Tile)
	}
	got, err := RenderTiles(context.Background(), tiles, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bad := Compare(c, got); len(bad) > 0 {
		t.Errorf("tiles differ from the catalogue: %v", bad)
	}
}
