package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"

	"github.com/throttlelab/throttlelab/record"
)

// p99Bars draws each row's p99 as a bar with its 95% interval as an error
// bar (inline SVG; hovering a bar shows its figures). Rows without an
// interval get a bar alone.
func p99Bars(rows []record.Row) template.HTML {
	if len(rows) == 0 {
		return ""
	}
	const w, labelW, rowH, top, right = 760, 230, 22, 8, 70
	top2 := 0.0
	for _, r := range rows {
		top2 = math.Max(top2, r.P99Ms)
		if r.P99MsCI95 != nil {
			top2 = math.Max(top2, r.P99MsCI95[1])
		}
	}
	if top2 <= 0 {
		return ""
	}
	h := top + rowH*len(rows) + 22
	x := func(v float64) float64 { return labelW + v/top2*float64(w-labelW-right) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="cibars" viewBox="0 0 %d %d" role="img" aria-label="p99 by config with 95%% intervals" xmlns="http://www.w3.org/2000/svg">`, w, h)
	for i, r := range rows {
		y := float64(top + rowH*i)
		tip := fmt.Sprintf("%s: p99 %s ms", r.Label, FormatMs(r.P99Ms))
		if r.P99MsCI95 != nil {
			tip += fmt.Sprintf(" (95%% interval %s ms)", FormatInterval(r.P99MsCI95))
		}
		color := "#0072B2"
		if r.IsReference {
			color = refColor
		}
		fmt.Fprintf(&b, `<g class="cibar"><title>%s</title>`, html.EscapeString(tip))
		fmt.Fprintf(&b, `<text x="%d" y="%s" text-anchor="end">%s</text>`, labelW-8, px(y+14), html.EscapeString(r.Label))
		fmt.Fprintf(&b, `<rect x="%d" y="%s" width="%s" height="14" fill="%s" fill-opacity="0.75"/>`, labelW, px(y+3), px(x(r.P99Ms)-labelW), color)
		end := x(r.P99Ms)
		if iv := r.P99MsCI95; iv != nil {
			x0, x1 := x(iv[0]), x(iv[1])
			fmt.Fprintf(&b, `<path class="whisker" d="M%s %sH%sM%s %sV%sM%s %sV%s" stroke="#1d1d1f" stroke-width="1.5" fill="none"/>`,
				px(x0), px(y+10), px(x1), px(x0), px(y+5), px(y+15), px(x1), px(y+5), px(y+15))
			end = math.Max(end, x1)
		}
		fmt.Fprintf(&b, `<text x="%s" y="%s">%s ms</text></g>`, px(end+6), px(y+14), FormatMs(r.P99Ms))
	}
	fmt.Fprintf(&b, `<text class="note" x="%d" y="%d">p99 (ms); the whiskers are 95%% intervals</text>`, labelW, h-6)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
