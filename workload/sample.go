package workload

import (
	"fmt"
	"math/rand/v2"
)

// SampleTiles returns n distinct tiles chosen at random with r, in the order drawn.
func SampleTiles(r *rand.Rand, n int) []Tile {
	if n > TileCount {
		n = TileCount
	}
	perm := r.Perm(TileCount)
	out := make([]Tile, n)
	for i := range out {
		out[i] = TileAt(perm[i])
	}
	return out
}

// Mismatch describes a rendered tile that differs from its catalogue entry.
type Mismatch struct {
	Want, Got TileInfo
}

func (m Mismatch) String() string {
	return fmt.Sprintf("tile %v: catalogue iterations %d hash %x, computed iterations %d hash %x",
		m.Want.Tile, m.Want.Iterations, m.Want.Hash[:8], m.Got.Iterations, m.Got.Hash[:8])
}

// Compare checks rendered tiles against the catalogue and returns those that differ.
func Compare(c *Catalog, got []TileInfo) []Mismatch {
	var bad []Mismatch
	for _, g := range got {
		want := c.Tiles[g.Index()]
		if want.Hash != g.Hash || want.Iterations != g.Iterations {
			bad = append(bad, Mismatch{Want: want, Got: g})
		}
	}
	return bad
}
