package workload

import (
	"encoding/hex"
	"testing"
)

func TestEscape(t *testing.T) {
	tests := []struct {
		name   string
		cr, ci float64
		want   int
	}{
		{"origin is inside", 0, 0, MaxIter},
		{"main cardioid", -0.1, 0.05, MaxIter},
		// z: 0, 1, 2, 5: |z|^2 = 4 at i=2 is not > 4, so it escapes at i=3.
		{"c=1 escapes exactly after |z|=2", 1, 0, 3},
		// z: 0, -2, 2, 2, ...: |z| stays exactly 2 and never escapes.
		{"c=-2 sits on the boundary", -2, 0, MaxIter},
		// z1 = c has |z|^2 = 2.385; z2 = -0.51+3.375i escapes.
		{"far outside", 0.75, 1.35, 2},
		{"c=i is periodic", 0, 1, MaxIter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Escape(tt.cr, tt.ci); got != tt.want {
				t.Errorf("Escape(%g, %g) = %d, want %d", tt.cr, tt.ci, got, tt.want)
			}
		})
	}
}

func TestTileIndex(t *testing.T) {
	if TilesX != 170 || TilesY != 153 || TileCount != 26010 {
		t.Fatalf("image is %dx%d = %d tiles, want 170x153 = 26010", TilesX, TilesY, TileCount)
	}
	for _, i := range []int{0, 1, 169, 170, 26009} {
		tl := TileAt(i)
		if tl.Index() != i || !tl.Valid() {
			t.Errorf("TileAt(%d) = %v, Index %d, Valid %v", i, tl, tl.Index(), tl.Valid())
		}
	}
	for _, tl := range []Tile{{-1, 0}, {170, 0}, {0, -1}, {0, 153}} {
		if CheckTile(tl) == nil || tl.Valid() {
			t.Errorf("tile %v accepted, want an error", tl)
		}
	}
}

func TestPixelCentre(t *testing.T) {
	// Pixels are square and the image covers the region exactly.
	re, im := PixelCentre(0, 0)
	if re <= RealMin || re-RealMin > pixelStep || im >= ImagMax || ImagMax-im > pixelStep {
		t.Errorf("pixel (0,0) centre = (%g, %g), want within a pixel of the top-left corner", re, im)
	}
	re, im = PixelCentre(ImageWidth-1, ImageHeight-1)
	if re >= RealMax || RealMax-re > pixelStep || im <= ImagMin || im-ImagMin > pixelStep {
		t.Errorf("last pixel centre = (%g, %g), want within a pixel of the bottom-right corner", re, im)
	}
}

// TestRenderTileGolden pins the pixels of tiles of each kind: outside, inside and
// on the boundary. A change of kernel, region or colouring breaks it (and the
// catalogue): bump KernelVersion and regenerate the catalogue then.
func TestRenderTileGolden(t *testing.T) {
	tests := []struct {
		tile  Tile
		iters uint64
		hash  string
	}{
		{Tile{85, 70}, 105972606, "0e1f7960fd828c4783de08f6157277e6f43184f2dca82c4aa8df74c55bfe8e65"},
		{Tile{120, 55}, TilePixels * MaxIter, "e7e2dcff542de95352682dc186432e98f0188084896773f1973276b0577d5305"},
		{Tile{90, 40}, 280000, "bfe9092ff816060201316a976c08c737422f5be6e1c1f9b6fbefa63b8aaaf162"},
	}
	for _, tt := range tests {
		pix, n := RenderTile(tt.tile, nil)
		h := HashPixels(pix)
		if n != tt.iters || hex.EncodeToString(h[:]) != tt.hash {
			t.Errorf("tile %v: iterations %d hash %x, want %d %s", tt.tile, n, h, tt.iters, tt.hash)
		}
	}
}

func TestShade(t *testing.T) {
	if shade[MaxIter] != 0 {
		t.Errorf("inside the set shade = %d, want 0 (black)", shade[MaxIter])
	}
	for n := 0; n < MaxIter; n++ {
		if shade[n] == 0 {
			t.Fatalf("shade[%d] = 0: only points inside the set may be black", n)
		}
		if n > 0 && shade[n] < shade[n-1] {
			t.Fatalf("shade not monotonic at %d", n)
		}
	}
}

func TestImageChecksumOrderMatters(t *testing.T) {
	a := []TileHash{{1}, {2}}
	b := []TileHash{{2}, {1}}
	if ImageChecksum(a) == ImageChecksum(b) {
		t.Error("checksum ignores tile order")
	}
}

func BenchmarkEscapeInside(b *testing.B) {
	var n int
	for i := 0; i < b.N; i++ {
		n += Escape(-0.1, 0.05)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/iteration")
}
