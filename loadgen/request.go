package loadgen

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/png"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/throttlelab/throttlelab/server"
	"github.com/throttlelab/throttlelab/units"
	"github.com/throttlelab/throttlelab/workload"
)

// Kind is what a request asks the server for.
type Kind string

// Request kinds.
const (
	KindTile Kind = "tile"
	KindBurn Kind = "burn"
	KindAPI  Kind = "api"
)

// Request is one request to send: a path and query, and the tile it asks for.
type Request struct {
	Kind Kind
	// Path is the request's path and query, e.g. "/tile?x=3&y=4".
	Path string
	// Tile is the tile asked for (KindTile only).
	Tile workload.Tile
}

// WorkloadSpec says what requests to send.
type WorkloadSpec struct {
	// Kind is tile (default), burn or api.
	Kind Kind
	// Tiles selects the tiles (KindTile; all of them if zero).
	Tiles TileSet
	// Burn is what each burn request asks for (KindBurn).
	Burn Burn
}

// source hands out requests to the workers. Tile sets are shuffled with the seed;
// a finite source (the image mode) hands each tile out once, others cycle.
type source struct {
	reqs   []Request
	finite bool
	next   atomic.Int64
}

// next returns the next request, or false when a finite source is exhausted.
func (s *source) take() (Request, bool) {
	i := s.next.Add(1) - 1
	if s.finite && i >= int64(len(s.reqs)) {
		return Request{}, false
	}
	return s.reqs[i%int64(len(s.reqs))], true
}

// newSource builds the request source for a workload.
func newSource(w WorkloadSpec, cat *workload.Catalog, seed uint64, finite bool) (*source, error) {
	switch w.Kind {
	case KindTile, "":
		tiles, err := w.Tiles.Select(cat, seed)
		if err != nil {
			return nil, err
		}
		reqs := make([]Request, len(tiles))
		for i, t := range tiles {
			reqs[i] = Request{Kind: KindTile, Tile: t, Path: "/tile?x=" + strconv.Itoa(t.X) + "&y=" + strconv.Itoa(t.Y)}
		}
		return &source{reqs: reqs, finite: finite}, nil
	case KindBurn:
		if err := w.Burn.check(); err != nil {
			return nil, err
		}
		return &source{reqs: []Request{{Kind: KindBurn, Path: "/burn?" + w.Burn.Query()}}}, nil
	case KindAPI:
		return &source{reqs: []Request{{Kind: KindAPI, Path: "/api"}}}, nil
	}
	return nil, fmt.Errorf("request kind %q: want tile, burn or api", w.Kind)
}

// Bounds of a burn request: the server refuses more than its --max-cpu (10 s
// by default) per request; 1e10 iterations are about 10 s at 1 ns each.
const (
	MinBurnCPU        = time.Microsecond
	MaxBurnCPU        = server.DefaultMaxCPU
	MaxBurnIterations = 10_000_000_000
)

// Burn is what one burn request asks for: CPU time (which the server turns
// into iterations with its calibration) or a number of iterations.
type Burn struct {
	CPU        time.Duration
	Iterations uint64
}

// Query is the request's query string: "cpu=5ms" or "iterations=N".
func (b Burn) Query() string {
	if b.Iterations > 0 {
		return "iterations=" + strconv.FormatUint(b.Iterations, 10)
	}
	return "cpu=" + url.QueryEscape(b.CPU.String())
}

// ParseBurn parses a burn, "cpu=5ms" or "iterations=N", within the bounds
// above; "" is a burn not given (the zero Burn). It is the one parser of
// burns: specs and flags reach it through UnmarshalText.
func ParseBurn(spec string) (Burn, error) {
	k, v, ok := strings.Cut(spec, "=")
	switch {
	case spec == "":
		return Burn{}, nil
	case !ok:
	case k == "cpu":
		d, err := units.ParseDuration(v)
		if err != nil {
			return Burn{}, fmt.Errorf("burn %q: %w", spec, err)
		}
		b := Burn{CPU: d}
		return b, b.check()
	case k == "iterations":
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == 0 || n > MaxBurnIterations || strings.HasPrefix(v, "+") {
			return Burn{}, fmt.Errorf("burn %q: want iterations=N with N from 1 to %d", spec, uint64(MaxBurnIterations))
		}
		return Burn{Iterations: n}, nil
	}
	return Burn{}, fmt.Errorf("burn %q: want cpu=DURATION (such as cpu=5ms) or iterations=N", spec)
}

// check bounds a burn made in code as ParseBurn bounds one it reads.
func (b Burn) check() error {
	switch {
	case b.Iterations > MaxBurnIterations:
		return fmt.Errorf("burn %s: want iterations=N with N from 1 to %d", b, uint64(MaxBurnIterations))
	case b.Iterations > 0:
		return nil
	case b.CPU == 0:
		return errors.New("no burn: want cpu=DURATION (such as cpu=5ms) or iterations=N")
	}
	if err := units.CheckDuration("burn cpu", b.CPU, MinBurnCPU, MaxBurnCPU); err != nil {
		return fmt.Errorf("%w (the most CPU a server burns for one request)", err)
	}
	return nil
}

// String writes the burn as ParseBurn reads it ("" for none).
func (b Burn) String() string {
	switch {
	case b.Iterations > 0:
		return "iterations=" + strconv.FormatUint(b.Iterations, 10)
	case b.CPU != 0:
		return "cpu=" + b.CPU.String()
	}
	return ""
}

// IsZero reports an unset burn (and lets YAML's omitempty leave it out).
func (b Burn) IsZero() bool { return b == Burn{} }

// MarshalText writes the burn as String does.
func (b Burn) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText parses the burn with ParseBurn.
func (b *Burn) UnmarshalText(text []byte) error {
	v, err := ParseBurn(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// Set parses the burn of a flag (pflag.Value).
func (b *Burn) Set(s string) error { return b.UnmarshalText([]byte(s)) }

// Type names the flag's value (pflag.Value).
func (b *Burn) Type() string { return "burn" }

// tileHash decodes a tile PNG and returns the SHA-256 of its raw pixels, so the
// answer is checked from what arrived, not from what the server says it sent.
func tileHash(body []byte) (workload.TileHash, error) {
	img, err := png.Decode(bytes.NewReader(body))
	if err != nil {
		return workload.TileHash{}, fmt.Errorf("decoding the tile: %w", err)
	}
	g, ok := img.(*image.Gray)
	if !ok || g.Rect.Dx() != workload.TileSize || g.Rect.Dy() != workload.TileSize || g.Stride != workload.TileSize {
		return workload.TileHash{}, fmt.Errorf("tile is a %T of %v, want %dx%d 8-bit grey", img, img.Bounds(), workload.TileSize, workload.TileSize)
	}
	return workload.HashPixels(g.Pix), nil
}
