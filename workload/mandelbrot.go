package workload

import (
	"crypto/sha256"
	"fmt"
)

// The image of the Mandelbrot study: 34000 x 30600 pixels in tiles of 200 x 200.
const (
	// ImageWidth is the width of the whole image in pixels.
	ImageWidth = 34000
	// ImageHeight is the height of the whole image in pixels.
	ImageHeight = 30600
	// TileSize is the edge of a square tile in pixels.
	TileSize = 200
	// TilesX is the number of tile columns (170).
	TilesX = ImageWidth / TileSize
	// TilesY is the number of tile rows (153).
	TilesY = ImageHeight / TileSize
	// TileCount is the number of tiles in the image (26010).
	TileCount = TilesX * TilesY
	// TilePixels is the number of pixels in one tile.
	TilePixels = TileSize * TileSize

	// MaxIter is the escape-time limit per pixel. It is chosen so that the hardest
	// tiles (every pixel inside the set) take about half a second on one core of the
	// reference machine (docs/workloads.md, "Measured").
	MaxIter = 4500

	// The region of the complex plane the image covers. It contains the whole set,
	// so there are clusters of very cheap tiles (far outside) and of maximally
	// expensive ones (inside).
	RealMin = -2.25
	RealMax = 0.75
	ImagMin = -1.35
	ImagMax = 1.35

	// KernelVersion names the kernel, colouring and region. It is written into the
	// catalogue so that a catalogue can never be checked against a different kernel.
	KernelVersion = "mandelbrot-v1"

	// ImageSHA256 is the checksum of the whole image: SHA-256 over the 26010 tile
	// hashes in row-major order. A load that renders every tile must arrive at it.
	ImageSHA256 = "4b497bb5611fbd9a274bb81f96643fb49c956fc554861407bd045dd6b5501d44"
)

// pixelStep is the width (and height) of one pixel in the complex plane. The two
// are equal (3/34000 == 2.7/30600), so pixels are square.
const pixelStep = (RealMax - RealMin) / ImageWidth

// Tile identifies a tile by its column X (0..TilesX-1) and row Y (0..TilesY-1).
// Row 0 is the top of the image (largest imaginary part).
type Tile struct {
	X, Y int
}

// Index returns the tile's position in row-major order (0..TileCount-1).
func (t Tile) Index() int { return t.Y*TilesX + t.X }

// Valid reports whether the tile lies inside the image.
func (t Tile) Valid() bool { return t.X >= 0 && t.X < TilesX && t.Y >= 0 && t.Y < TilesY }

// String formats the tile as "x,y".
func (t Tile) String() string { return fmt.Sprintf("%d,%d", t.X, t.Y) }

// TileAt returns the tile at row-major index i.
func TileAt(i int) Tile { return Tile{X: i % TilesX, Y: i / TilesX} }

// CheckTile returns an error naming the bad index if the tile lies outside the image.
func CheckTile(t Tile) error {
	if t.X < 0 || t.X >= TilesX {
		return fmt.Errorf("tile x=%d out of range: must be 0..%d", t.X, TilesX-1)
	}
	if t.Y < 0 || t.Y >= TilesY {
		return fmt.Errorf("tile y=%d out of range: must be 0..%d", t.Y, TilesY-1)
	}
	return nil
}

// Escape returns the number of iterations of z = z^2 + c, from z = 0, before |z|
// exceeds 2, or MaxIter if it never does. It is the plain escape-time loop with no
// cardioid, bulb or periodicity shortcut, so the cost of a pixel is proportional to
// the count it returns.
//
// Every product that feeds an addition is wrapped in an explicit float64
// conversion: the Go spec lets the compiler fuse x*y+z into one FMA instruction
// (it does with GOAMD64=v3 and on arm64, ppc64, s390x), which rounds once instead of
// twice and changes the orbit. The conversion forces the intermediate rounding, so
// every platform and build computes bit-identical orbits.
func Escape(cr, ci float64) int {
	var x, y float64
	for i := 0; i < MaxIter; i++ {
		x2 := float64(x * x)
		y2 := float64(y * y)
		if x2+y2 > 4 {
			return i
		}
		xy := float64(x * y)
		y = xy + xy + ci
		x = x2 - y2 + cr
	}
	return MaxIter
}

// pixelCoord returns the centre of pixel p along one axis: min + (p + 0.5) * step.
func pixelCoord(min float64, p int) float64 {
	return min + float64((float64(p)+0.5)*pixelStep)
}

// PixelCentre returns the point of the complex plane at the centre of image pixel
// (px, py), with py counted downwards from the top edge.
func PixelCentre(px, py int) (re, im float64) {
	return pixelCoord(RealMin, px), -pixelCoord(-ImagMax, py)
}

// RenderTile computes the tile's pixels into pix (TilePixels bytes, row-major,
// allocated if nil or short) and returns them with the tile's total iteration
// count, which is what the tile costs.
func RenderTile(t Tile, pix []byte) ([]byte, uint64) {
	if len(pix) < TilePixels {
		pix = make([]byte, TilePixels)
	}
	pix = pix[:TilePixels]
	var total uint64
	x0, y0 := t.X*TileSize, t.Y*TileSize
	for j := 0; j < TileSize; j++ {
		// Rows go downwards from the top edge, so the imaginary part decreases.
		row := pix[j*TileSize : (j+1)*TileSize]
		for i := range row {
			n := Escape(PixelCentre(x0+i, y0+j))
			total += uint64(n)
			row[i] = shade[n]
		}
	}
	return pix, total
}

// shade maps an iteration count to an 8-bit grey level: black inside the set and
// bright near its boundary, fading with distance. Integer arithmetic only, so the
// table is the same everywhere.
var shade = func() [MaxIter + 1]byte {
	var s [MaxIter + 1]byte
	for n := 0; n < MaxIter; n++ {
		// 255 * sqrt(n/MaxIter), by integer square root, and at least 1 so that only
		// pixels inside the set are black.
		v := isqrt(uint64(n) * 255 * 255 / MaxIter)
		if v < 1 {
			v = 1
		}
		s[n] = byte(v)
	}
	s[MaxIter] = 0
	return s
}()

func isqrt(v uint64) uint64 {
	r := uint64(0)
	for (r+1)*(r+1) <= v {
		r++
	}
	return r
}

// TileHash is the SHA-256 of a tile's raw pixels.
type TileHash [sha256.Size]byte

// HashPixels returns the SHA-256 of a tile's raw 8-bit pixels (row-major).
func HashPixels(pix []byte) TileHash { return sha256.Sum256(pix) }

// ImageChecksum returns the SHA-256 over the given tile hashes, which must be in
// row-major tile order: the checksum of the whole image when all TileCount tiles
// are given.
func ImageChecksum(hashes []TileHash) TileHash {
	h := sha256.New()
	for i := range hashes {
		h.Write(hashes[i][:])
	}
	var out TileHash
	copy(out[:], h.Sum(nil))
	return out
}
