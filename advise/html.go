package advise

import (
	"fmt"
	"html"
	"io"
	"os"
	"strings"
)

// WriteHTMLFile writes the advice as a self-contained HTML page (no network
// needed): CPU use at 10 ms with the advised limit drawn, and the throttled
// share of periods against the limit, with and without burst.
func WriteHTMLFile(path string, d *Demand, a *Advice) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	if err := WriteHTML(f, d, a); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteHTML writes the page of WriteHTMLFile to w.
func WriteHTML(w io.Writer, d *Demand, a *Advice) error {
	var b strings.Builder
	b.WriteString(`<!doctype html><meta charset="utf-8"><title>throttlelab advise</title>
<style>body{font:14px sans-serif;margin:2em}svg{background:#fafafa;border:1px solid #ddd}pre{background:#f4f4f4;padding:1em}</style>
<h1>throttlelab advise</h1>`)
	fmt.Fprintf(&b, "<p>%s: %.1f s, %d samples, mean %.3f cores.</p>", html.EscapeString(a.Sampled.Source), a.Sampled.DurationSeconds, a.Sampled.Samples, a.Sampled.MeanCores)
	var text strings.Builder
	WriteText(&text, a)
	b.WriteString(Section(d, a))
	fmt.Fprintf(&b, "<h2>Table</h2><pre>%s</pre>", html.EscapeString(text.String()))
	_, err := io.WriteString(w, b.String())
	return err
}

// Section is the report section: the two charts as inline SVG.
func Section(d *Demand, a *Advice) string {
	const W, H, pad = 900.0, 260.0, 40.0
	var b strings.Builder
	// Usage at 10 ms, at most ~3000 points (the highest of each bucket, so
	// peaks stay visible).
	ymax := max(a.Sampled.MaxCores10ms, float64(a.Recommendation.LimitMilli)/1000) * 1.1
	if ymax <= 0 {
		ymax = 1
	}
	dur := float64(d.Duration())
	b.WriteString("<h2>CPU use every 10 ms, and the advised limit</h2>")
	fmt.Fprintf(&b, `<svg width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f">`, W, H, W, H)
	x := func(t float64) float64 { return pad + (W-2*pad)*t/dur }
	y := func(c float64) float64 { return H - pad - (H-2*pad)*c/ymax }
	step := max(1, len(d.At)/3000)
	b.WriteString(`<polyline fill="none" stroke="#36c" stroke-width="1" points="`)
	for i := 1; i < len(d.At); i += step {
		peak := 0.0
		for j := i; j < min(i+step, len(d.At)); j++ {
			if dt := d.At[j] - d.At[j-1]; dt > 0 {
				peak = max(peak, float64(d.Usage[j]-d.Usage[j-1])/float64(dt))
			}
		}
		fmt.Fprintf(&b, "%.1f,%.1f ", x(float64(d.At[i])), y(peak))
	}
	b.WriteString(`"/>`)
	if r := a.Recommendation; r.LimitMilli > 0 {
		ly := y(float64(r.LimitMilli) / 1000)
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#c33" stroke-dasharray="6 3"/><text x="%.0f" y="%.1f" fill="#c33">advised limit %s</text>`,
			pad, W-pad, ly, ly, W-pad-150, ly-4, formatMilli(r.LimitMilli))
	}
	axes(&b, W, H, pad, fmt.Sprintf("%.2f cores", ymax), fmt.Sprintf("%.0f s", d.Duration().Seconds()))
	b.WriteString("</svg>")

	// Throttled share against limit.
	b.WriteString("<h2>Throttled share of periods against the limit</h2>")
	fmt.Fprintf(&b, `<svg width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f">`, W, H, W, H)
	var lmax int64 = 1
	for _, e := range a.Evaluations {
		lmax = max(lmax, e.LimitMilli)
	}
	lx := func(m int64) float64 { return pad + (W-2*pad)*float64(m)/float64(lmax) }
	ry := func(r float64) float64 { return H - pad - (H-2*pad)*r }
	for _, c := range []struct {
		burst bool
		color string
		label string
	}{{false, "#c33", "no burst"}, {true, "#393", "burst = limit"}} {
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="`, c.color)
		for _, e := range a.Evaluations {
			if (e.BurstMilli > 0) == c.burst && e.PeriodUsec == a.Recommendation.PeriodUsec {
				fmt.Fprintf(&b, "%.1f,%.1f ", lx(e.LimitMilli), ry(e.ThrottledRatio))
			}
		}
		b.WriteString(`"/>`)
		off := 0.0
		if c.burst {
			off = 16
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" fill="%s">%s</text>`, W-pad-120, pad+off, c.color, c.label)
	}
	ty := ry(a.Recommendation.Target.MaxThrottled)
	fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#999" stroke-dasharray="4 3"/>`, pad, W-pad, ty, ty)
	axes(&b, W, H, pad, "100%", formatMilli(lmax))
	b.WriteString("</svg>")
	return b.String()
}

func axes(b *strings.Builder, W, H, pad float64, ytop, xright string) {
	fmt.Fprintf(b, `<line x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f" stroke="#333"/><line x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f" stroke="#333"/>`,
		pad, W-pad, H-pad, H-pad, pad, pad, pad, H-pad)
	fmt.Fprintf(b, `<text x="2" y="%.0f">%s</text><text x="2" y="%.0f">0</text><text x="%.0f" y="%.0f">%s</text>`,
		pad, html.EscapeString(ytop), H-pad, W-pad-40, H-pad+16, html.EscapeString(xright))
}
