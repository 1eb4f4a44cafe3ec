// Package workload holds the CPU work throttlelab measures: the Mandelbrot tile
// kernel and its catalogue, the CPU-burn loop, the periodic burst worker and the
// CPU hog.
//
// The Mandelbrot image is 34000 x 30600 pixels over real -2.25..0.75 and imaginary
// -1.35..1.35, cut into 26010 tiles of 200 x 200. A tile costs the same every
// time (its iteration count), renders to the same 8-bit pixels on every platform,
// and its SHA-256 is listed in the committed catalogue:
//
//	c, err := workload.DefaultCatalog()
//	if err != nil {
//		return err
//	}
//	pix, iters := workload.RenderTile(workload.Tile{X: 85, Y: 70}, nil)
//	want := c.Tiles[workload.Tile{X: 85, Y: 70}.Index()]
//	ok := iters == want.Iterations && workload.HashPixels(pix) == want.Hash
package workload
