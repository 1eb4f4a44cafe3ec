// Command hashcheck prints hashes of tiles rendered by the real kernel and by a
// naive kernel without the float64 guards against fused multiply-add. The
// determinism test builds it with GOAMD64=v1 and v3 and compares the outputs.
package main

import (
	"crypto/sha256"
	"fmt"

	"github.com/throttlelab/throttlelab/workload"
)

// Tiles on the set's boundary, where orbits are chaotic and one rounding
// difference changes the escape count.
var tiles = []workload.Tile{{X: 85, Y: 70}, {X: 121, Y: 25}, {X: 142, Y: 76}, {X: 56, Y: 73}}

// naiveEscape is Escape written without the guards: the compiler may fuse x*x-y*y+cr
// and 2*x*y+ci into FMA instructions.
func naiveEscape(cr, ci float64) int {
	var x, y float64
	for i := 0; i < workload.MaxIter; i++ {
		if x*x+y*y > 4 {
			return i
		}
		x, y = x*x-y*y+cr, 2*x*y+ci
	}
	return workload.MaxIter
}

func main() {
	for _, t := range tiles {
		pix, n := workload.RenderTile(t, nil)
		fmt.Printf("kernel %v %d %x\n", t, n, workload.HashPixels(pix))
	}
	// The naive kernel over the same pixel centres.
	for _, t := range tiles {
		h := sha256.New()
		var total int
		for j := 0; j < workload.TileSize; j++ {
			for i := 0; i < workload.TileSize; i++ {
				cr, ci := workload.PixelCentre(t.X*workload.TileSize+i, t.Y*workload.TileSize+j)
				n := naiveEscape(cr, ci)
				total += n
				h.Write([]byte{byte(n), byte(n >> 8)})
			}
		}
		fmt.Printf("naive %v %d %x\n", t, total, h.Sum(nil))
	}
}
