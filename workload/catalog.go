package workload

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// TileInfo is one catalogue entry: a tile, what it costs and what it must look like.
type TileInfo struct {
	Tile
	// Iterations is the sum of escape-time iterations over the tile's pixels: its cost.
	Iterations uint64
	// Hash is the SHA-256 of the tile's raw pixels.
	Hash TileHash
}

// Catalog lists every tile of the image in row-major order.
type Catalog struct {
	// Kernel is the KernelVersion the catalogue was made with.
	Kernel string
	// MaxIter is the escape-time limit the catalogue was made with.
	MaxIter int
	// Tiles holds TileCount entries; Tiles[t.Index()] describes tile t.
	Tiles []TileInfo
}

// Checksum returns the image checksum: SHA-256 over all tile hashes in row-major order.
func (c *Catalog) Checksum() TileHash {
	hs := make([]TileHash, len(c.Tiles))
	for i := range c.Tiles {
		hs[i] = c.Tiles[i].Hash
	}
	return ImageChecksum(hs)
}

// Lookup returns the entry of tile t.
func (c *Catalog) Lookup(t Tile) (TileInfo, error) {
	if err := CheckTile(t); err != nil {
		return TileInfo{}, err
	}
	return c.Tiles[t.Index()], nil
}

// BuildCatalog renders every tile with the given number of workers (all CPUs if
// workers <= 0) and returns the catalogue. progress, if not nil, is called from the
// workers after each tile with the number of tiles done so far. Cancelling ctx stops
// the build and returns ctx's error.
func BuildCatalog(ctx context.Context, workers int, progress func(done int)) (*Catalog, error) {
	return buildTiles(ctx, TileCount, TileAt, workers, progress)
}

// RenderTiles renders the given tiles in parallel and returns their entries in the
// same order. It is what `tiles verify` uses.
func RenderTiles(ctx context.Context, tiles []Tile, workers int, progress func(done int)) ([]TileInfo, error) {
	c, err := buildTiles(ctx, len(tiles), func(i int) Tile { return tiles[i] }, workers, progress)
	if err != nil {
		return nil, err
	}
	return c.Tiles, nil
}

func buildTiles(ctx context.Context, n int, at func(int) Tile, workers int, progress func(int)) (*Catalog, error) {
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	out := make([]TileInfo, n)
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pix := make([]byte, TilePixels)
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t := at(i)
				var iters uint64
				pix, iters = RenderTile(t, pix)
				out[i] = TileInfo{Tile: t, Iterations: iters, Hash: HashPixels(pix)}
				d := done.Add(1)
				if progress != nil {
					progress(int(d))
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &Catalog{Kernel: KernelVersion, MaxIter: MaxIter, Tiles: out}, nil
}

// The catalogue's text form (before gzip): comment lines starting with '#' that
// describe it, a CSV header, then one line per tile in row-major order.
const catalogMagic = "# throttlelab tile catalogue"

// WriteCatalog writes the catalogue as gzip-compressed CSV.
func WriteCatalog(w io.Writer, c *Catalog) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(zw)
	sum := c.Checksum()
	fmt.Fprintf(bw, "%s\n# kernel=%s max_iter=%d width=%d height=%d tile=%d region=%g,%g,%g,%g\n# image_sha256=%s\n",
		catalogMagic, c.Kernel, c.MaxIter, ImageWidth, ImageHeight, TileSize,
		RealMin, RealMax, ImagMin, ImagMax, hex.EncodeToString(sum[:]))
	bw.WriteString("x,y,iterations,sha256\n")
	for _, t := range c.Tiles {
		fmt.Fprintf(bw, "%d,%d,%d,%s\n", t.X, t.Y, t.Iterations, hex.EncodeToString(t.Hash[:]))
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return zw.Close()
}

// ReadCatalog parses a gzip-compressed catalogue written by WriteCatalog. It checks
// that the catalogue is complete, in order, made with this kernel, and that its
// recorded image checksum matches its tile hashes.
func ReadCatalog(r io.Reader) (*Catalog, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("tile catalogue: %w", err)
	}
	defer zr.Close()
	return parseCatalog(zr)
}

func parseCatalog(r io.Reader) (*Catalog, error) {
	sc := bufio.NewScanner(r)
	c := &Catalog{Tiles: make([]TileInfo, 0, TileCount)}
	var wantSum string
	line := 0
	headerSeen := false
	for sc.Scan() {
		line++
		s := sc.Text()
		if line == 1 && s != catalogMagic {
			return nil, fmt.Errorf("tile catalogue line 1: not a throttlelab tile catalogue")
		}
		if strings.HasPrefix(s, "#") {
			for _, f := range strings.Fields(strings.TrimPrefix(s, "#")) {
				k, v, ok := strings.Cut(f, "=")
				if !ok {
					continue
				}
				switch k {
				case "kernel":
					c.Kernel = v
				case "max_iter":
					c.MaxIter, _ = strconv.Atoi(v)
				case "image_sha256":
					wantSum = v
				}
			}
			continue
		}
		if !headerSeen {
			if s != "x,y,iterations,sha256" {
				return nil, fmt.Errorf("tile catalogue line %d: want header x,y,iterations,sha256, got %q", line, s)
			}
			headerSeen = true
			continue
		}
		t, err := parseCatalogLine(s)
		if err != nil {
			return nil, fmt.Errorf("tile catalogue line %d: %w", line, err)
		}
		if want := TileAt(len(c.Tiles)); t.Tile != want {
			return nil, fmt.Errorf("tile catalogue line %d: tile %v out of order, want %v", line, t.Tile, want)
		}
		c.Tiles = append(c.Tiles, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tile catalogue: %w", err)
	}
	if c.Kernel != KernelVersion || c.MaxIter != MaxIter {
		return nil, fmt.Errorf("tile catalogue made with kernel %s max_iter %d, this build has %s max_iter %d: regenerate it with `throttlelab tiles catalog`",
			c.Kernel, c.MaxIter, KernelVersion, MaxIter)
	}
	if len(c.Tiles) != TileCount {
		return nil, fmt.Errorf("tile catalogue has %d tiles, want %d", len(c.Tiles), TileCount)
	}
	sum := c.Checksum()
	if got := hex.EncodeToString(sum[:]); got != wantSum {
		return nil, fmt.Errorf("tile catalogue image_sha256 is %s but its tiles hash to %s: the file is corrupt", wantSum, got)
	}
	return c, nil
}

func parseCatalogLine(s string) (TileInfo, error) {
	f := strings.Split(s, ",")
	if len(f) != 4 {
		return TileInfo{}, fmt.Errorf("want 4 fields, got %d", len(f))
	}
	var t TileInfo
	var err error
	if t.X, err = strconv.Atoi(f[0]); err != nil {
		return t, fmt.Errorf("x: %w", err)
	}
	if t.Y, err = strconv.Atoi(f[1]); err != nil {
		return t, fmt.Errorf("y: %w", err)
	}
	if t.Iterations, err = strconv.ParseUint(f[2], 10, 64); err != nil {
		return t, fmt.Errorf("iterations: %w", err)
	}
	if t.Iterations > uint64(TilePixels)*MaxIter {
		return t, fmt.Errorf("iterations %d exceed the maximum %d", t.Iterations, uint64(TilePixels)*MaxIter)
	}
	b, err := hex.DecodeString(f[3])
	if err != nil || len(b) != len(t.Hash) {
		return t, errors.New("sha256: want 64 hex digits")
	}
	copy(t.Hash[:], b)
	return t, nil
}
