package loadgen

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/throttlelab/throttlelab/workload"
)

// TileKind names how a tile set is chosen.
type TileKind string

// Ways to choose tiles.
const (
	// TilesAll is every tile of the image.
	TilesAll TileKind = "all"
	// TilesSample is Sample distinct tiles drawn at random.
	TilesSample TileKind = "sample"
	// TilesClass is the tiles of one cost class.
	TilesClass TileKind = "class"
	// TilesIters is the tiles of ItersLo to ItersHi escape-time iterations
	// (nearly uniform costs).
	TilesIters TileKind = "iters"
)

// TileSet is a parsed tile set: "all", "sample:N", "class:small|medium|large"
// or "iters:LO-HI", as specs and flags write it. The zero value is a set not
// given, which Select takes as all tiles.
type TileSet struct {
	Kind TileKind
	// Sample is N of sample:N.
	Sample int
	// Class is the class of class:C.
	Class workload.Class
	// ItersLo and ItersHi bound iters:LO-HI: LO <= iterations < HI.
	ItersLo, ItersHi uint64
}

// ParseTiles parses a tile set; "" is a set not given. It is the one parser
// of tile sets: specs and flags reach it through UnmarshalText.
func ParseTiles(spec string) (TileSet, error) {
	switch {
	case spec == "":
		return TileSet{}, nil
	case spec == string(TilesAll):
		return TileSet{Kind: TilesAll}, nil
	case strings.HasPrefix(spec, "sample:"):
		n, err := strconv.Atoi(strings.TrimPrefix(spec, "sample:"))
		if err != nil || n < 1 || n > workload.TileCount {
			return TileSet{}, fmt.Errorf("tiles %q: want sample:N with N in 1..%d", spec, workload.TileCount)
		}
		return TileSet{Kind: TilesSample, Sample: n}, nil
	case strings.HasPrefix(spec, "class:"):
		cl, err := workload.ParseClass(strings.TrimPrefix(spec, "class:"))
		if err != nil {
			return TileSet{}, fmt.Errorf("tiles %q: %w", spec, err)
		}
		return TileSet{Kind: TilesClass, Class: cl}, nil
	case strings.HasPrefix(spec, "iters:"):
		lo, hi, ok := strings.Cut(strings.TrimPrefix(spec, "iters:"), "-")
		l, err1 := strconv.ParseUint(lo, 10, 64)
		h, err2 := strconv.ParseUint(hi, 10, 64)
		if !ok || err1 != nil || err2 != nil || l >= h {
			return TileSet{}, fmt.Errorf("tiles %q: want iters:LO-HI with LO < HI (escape-time iterations per tile, 40000 to 180000000)", spec)
		}
		return TileSet{Kind: TilesIters, ItersLo: l, ItersHi: h}, nil
	}
	return TileSet{}, fmt.Errorf("tiles %q: want all, sample:N, class:small|medium|large or iters:LO-HI", spec)
}

// String writes the tile set as ParseTiles reads it ("" for none).
func (s TileSet) String() string {
	switch s.Kind {
	case TilesSample:
		return "sample:" + strconv.Itoa(s.Sample)
	case TilesClass:
		return "class:" + string(s.Class)
	case TilesIters:
		return "iters:" + strconv.FormatUint(s.ItersLo, 10) + "-" + strconv.FormatUint(s.ItersHi, 10)
	}
	return string(s.Kind)
}

// IsZero reports a tile set not given (and lets YAML's omitempty leave it out).
func (s TileSet) IsZero() bool { return s == TileSet{} }

// MarshalText writes the tile set as String does.
func (s TileSet) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses the tile set with ParseTiles.
func (s *TileSet) UnmarshalText(text []byte) error {
	v, err := ParseTiles(string(text))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Set parses the tile set of a flag (pflag.Value).
func (s *TileSet) Set(v string) error { return s.UnmarshalText([]byte(v)) }

// Type names the flag's value (pflag.Value).
func (s *TileSet) Type() string { return "tiles" }

// Select returns the set's tiles from the catalogue, shuffled with seed (a
// sample is drawn with it). An iteration range that holds no tile is an
// error, as is a set made in code out of ParseTiles' bounds.
func (s TileSet) Select(cat *workload.Catalog, seed uint64) ([]workload.Tile, error) {
	rng := rand.New(rand.NewPCG(seed, 0x711e))
	var tiles []workload.Tile
	switch s.Kind {
	case "", TilesAll:
		tiles = make([]workload.Tile, workload.TileCount)
		for i := range tiles {
			tiles[i] = workload.TileAt(i)
		}
	case TilesSample:
		if s.Sample < 1 || s.Sample > workload.TileCount {
			return nil, fmt.Errorf("tiles %s: want sample:N with N in 1..%d", s, workload.TileCount)
		}
		return workload.SampleTiles(rng, s.Sample), nil
	case TilesClass:
		for _, t := range cat.TilesOfClass(s.Class) {
			tiles = append(tiles, t.Tile)
		}
	case TilesIters:
		for _, t := range cat.Tiles {
			if t.Iterations >= s.ItersLo && t.Iterations < s.ItersHi {
				tiles = append(tiles, t.Tile)
			}
		}
		if len(tiles) == 0 {
			return nil, fmt.Errorf("tiles %q: no tile costs between %d and %d iterations (tiles stats shows the distribution)", s.String(), s.ItersLo, s.ItersHi)
		}
	default:
		return nil, fmt.Errorf("tiles %q: want all, sample:N, class:small|medium|large or iters:LO-HI", s.String())
	}
	rng.Shuffle(len(tiles), func(i, j int) { tiles[i], tiles[j] = tiles[j], tiles[i] })
	return tiles, nil
}
