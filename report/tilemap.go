package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"html/template"
	"image"
	"image/color"
	"image/png"
	"math"
	"strings"

	"github.com/throttlelab/throttlelab/stats"
	"github.com/throttlelab/throttlelab/workload"
)

// viridis anchors (every eighth of the map), interpolated linearly.
var viridis = [][3]float64{
	{68, 1, 84}, {70, 50, 126}, {54, 92, 141}, {39, 127, 142}, {31, 161, 135}, {74, 193, 109}, {160, 218, 57}, {253, 231, 37}, {253, 231, 37},
}

func colormap(t float64) color.NRGBA {
	t = math.Min(math.Max(t, 0), 1) * 8
	i := int(t)
	if i >= 8 {
		i = 7
	}
	f := t - float64(i)
	c := func(k int) uint8 { return uint8(math.Round(viridis[i][k]*(1-f) + viridis[i+1][k]*f)) }
	return color.NRGBA{c(0), c(1), c(2), 255}
}

// tileMedians returns the median latency (ms) of each tile an entry asked for,
// over all its repeats, indexed by tile number.
func tileMedians(e *entry) map[int]float64 {
	by := map[int][]float64{}
	for _, r := range e.runs {
		for _, q := range r.Requests {
			if q.OK && q.Tile >= 0 {
				by[int(q.Tile)] = append(by[int(q.Tile)], float64(q.Latency)/1e6)
			}
		}
	}
	out := make(map[int]float64, len(by))
	for k, v := range by {
		out[k] = stats.Median(v)
	}
	return out
}

// tileMap is one picture of the image with each tile coloured.
type tileMap struct {
	Title   string
	Alt     string
	DataURI template.URL
	Scale   template.HTML // SVG colour bar
}

// renderTileMap colours each tile by log(value) between lo and hi; tiles
// without a value stay light grey.
func renderTileMap(vals map[int]float64, lo, hi float64, title, unit, id string) tileMap {
	img := image.NewNRGBA(image.Rect(0, 0, workload.TilesX, workload.TilesY))
	for i := range img.Pix {
		img.Pix[i] = 235
	}
	llo, lhi := math.Log10(lo), math.Log10(hi)
	for k, v := range vals {
		t := 0.5
		if lhi > llo {
			t = (math.Log10(math.Max(v, lo)) - llo) / (lhi - llo)
		}
		img.SetNRGBA(k%workload.TilesX, k/workload.TilesX, colormap(t))
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	return tileMap{
		Title: title,
		Alt:   fmt.Sprintf("%s: %d tiles coloured from %s to %s %s (log scale); grey tiles were not requested", title, len(vals), fmtNum(lo), fmtNum(hi), unit),
		// A PNG made here, so html/template may trust it as a URL.
		DataURI: template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())),
		Scale:   template.HTML(colorBar(lo, hi, unit, id)),
	}
}

// colorBar is the legend of a tile map: the colour map with log-spaced ticks.
func colorBar(lo, hi float64, unit, id string) string {
	const w, h = 340, 44
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="cbar" viewBox="0 0 %d %d" role="img" aria-label="colour scale from %s to %s %s" xmlns="http://www.w3.org/2000/svg">`, w, h, fmtNum(lo), fmtNum(hi), html.EscapeString(unit))
	fmt.Fprintf(&b, `<defs><linearGradient id="%s-g">`, id)
	for i := 0; i <= 8; i++ {
		c := colormap(float64(i) / 8)
		fmt.Fprintf(&b, `<stop offset="%d%%" stop-color="#%02x%02x%02x"/>`, i*100/8, c.R, c.G, c.B)
	}
	fmt.Fprintf(&b, `</linearGradient></defs><rect x="16" y="4" width="%d" height="12" fill="url(#%s-g)"/>`, w-32, id)
	llo, lhi := math.Log10(lo), math.Log10(hi)
	// Ticks at 1, 2 and 5 per decade, fewer when the scale spans many.
	marks := []float64{1, 2, 5}
	if lhi-llo > 4 {
		marks = []float64{1}
	} else if lhi-llo > 2.5 {
		marks = []float64{1, 3}
	}
	for e := math.Floor(llo); e <= math.Floor(lhi)+1e-9; e++ {
		for _, m := range marks {
			v := m * math.Pow(10, e)
			if v < lo || v > hi || lhi == llo {
				continue
			}
			x := 16 + (math.Log10(v)-llo)/(lhi-llo)*float64(w-32)
			fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="16" y2="20" stroke="#333"/><text x="%s" y="31">%s</text>`, px(x), px(x), px(x), fmtNum(v))
		}
	}
	fmt.Fprintf(&b, `<text x="%d" y="42" class="unit">%s</text></svg>`, w/2, html.EscapeString(unit))
	return b.String()
}

// tileMaps draws, for a tile load, each entry's median latency per tile on one
// shared scale, and each non-reference entry's slowdown against the reference.
func tileMaps(es []*entry, load, id string) []tileMap {
	var ref map[int]float64
	meds := map[*entry]map[int]float64{}
	lo, hi := math.Inf(1), 0.0
	for _, e := range es {
		if e.load.Name != load {
			continue
		}
		m := tileMedians(e)
		if len(m) == 0 {
			continue
		}
		meds[e] = m
		for _, v := range m {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		if e.ref && e.srcIdx == 0 {
			ref = m
		}
	}
	if len(meds) == 0 {
		return nil
	}
	lo = math.Max(lo, 0.01)
	var out []tileMap
	for i, e := range es {
		m, ok := meds[e]
		if !ok {
			continue
		}
		out = append(out, renderTileMap(m, lo, hi, "Median latency per tile: "+e.label, "ms", fmt.Sprintf("%s-tl-%d", id, i)))
		if ref == nil || e.ref {
			continue
		}
		slow := map[int]float64{}
		top := 1.0
		for k, v := range m {
			if r, ok := ref[k]; ok && r > 0 {
				slow[k] = math.Max(v/r, 0.5)
				top = math.Max(top, slow[k])
			}
		}
		out = append(out, renderTileMap(slow, 0.5, math.Max(top, 2), "Slowdown per tile against the reference: "+e.label, "x reference latency", fmt.Sprintf("%s-ts-%d", id, i)))
	}
	return out
}
