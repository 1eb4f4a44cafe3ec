package limitmap

import "math"

// segment is one piece of a contour line, in grid units: x is the column
// (limit index), y the row (load index), both at cell centres.
type segment struct{ x0, y0, x1, y1 float64 }

// contour traces the level of a grid of values (rows of columns; NaN is
// missing) by marching squares between cell centres, interpolating along
// each square's edges. A square with a missing corner is skipped; the
// ambiguous saddles are split by the square's mean.
func contour(v [][]float64, level float64) []segment {
	var out []segment
	for r := 0; r+1 < len(v); r++ {
		for c := 0; c+1 < len(v[r]); c++ {
			// Corners counter-clockwise from the bottom left.
			z := [4]float64{v[r][c], v[r][c+1], v[r+1][c+1], v[r+1][c]}
			xs := [4]float64{float64(c), float64(c + 1), float64(c + 1), float64(c)}
			ys := [4]float64{float64(r), float64(r), float64(r + 1), float64(r + 1)}
			idx := 0
			missing := false
			for i, x := range z {
				if math.IsNaN(x) {
					missing = true
				}
				if x >= level {
					idx |= 1 << i
				}
			}
			if missing || idx == 0 || idx == 15 {
				continue
			}
			// The point where edge i (corner i to corner i+1) crosses the level.
			cross := func(i int) (float64, float64) {
				j := (i + 1) % 4
				t := (level - z[i]) / (z[j] - z[i])
				return xs[i] + t*(xs[j]-xs[i]), ys[i] + t*(ys[j]-ys[i])
			}
			var edges []int
			for i := range 4 {
				j := (i + 1) % 4
				if (z[i] >= level) != (z[j] >= level) {
					edges = append(edges, i)
				}
			}
			pairs := [][2]int{{edges[0], edges[1]}}
			if len(edges) == 4 {
				// A saddle: corners 0 and 2 on one side, 1 and 3 on the
				// other. If the middle is on corner 0's side, the lines
				// cut off corners 1 and 3; otherwise corners 0 and 2.
				mid := (z[0] + z[1] + z[2] + z[3]) / 4
				if (mid >= level) == (z[0] >= level) {
					pairs = [][2]int{{0, 1}, {2, 3}}
				} else {
					pairs = [][2]int{{3, 0}, {1, 2}}
				}
			}
			for _, p := range pairs {
				x0, y0 := cross(p[0])
				x1, y1 := cross(p[1])
				out = append(out, segment{x0, y0, x1, y1})
			}
		}
	}
	return out
}
