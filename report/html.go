package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"
	"sync"

	"github.com/throttlelab/throttlelab/loadgen"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/verdict"
)

//go:embed assets/report.css
var css string

//go:embed assets/report.js
var js string

//go:embed assets/report.html.tmpl
var pageTemplate string

type sourceView struct {
	Label, Name, Description, Date, Machine, Cgroups, Version, Backend, Dir string
	Headline                                                                string
	Runs                                                                    int
	Verdict                                                                 *verdict.Verdict
}

type loadView struct {
	Name, Describe string
	Rows           []record.Row
	Dist           []template.HTML
	Percentile     template.HTML
	P99Bars        template.HTML
	Ramp           []template.HTML
	CPU            []template.HTML
	CPUNotes       []string
	Instances      []instanceView
	Tiles          []tileMap
}

type instanceView struct {
	Label                      string
	Bars                       []instanceBar
	SameInstance, SameIfRandom float64
	Balancer                   string
}

type page struct {
	Title   string
	CSS     template.CSS
	JS      template.JS
	Sources []sourceView
	Loads   []loadView
	Extra   []template.HTML
}

// Options shape the report.
type Options struct {
	// MaxInstances caps the CPU charts per config (default 4).
	MaxInstances int
	// Sections are drawn after the loads (advise's: report cannot import
	// advise, which reaches report through sim and runner).
	Sections []Section
}

// Section renders one more part of the page from the sources, as HTML
// (empty: nothing to show).
type Section func(sources []*Source) template.HTML

// WriteHTML writes the report of one or more results directories as one
// self-contained HTML file: styles, script, charts (SVG) and pictures (PNG data
// URIs) are inline, and nothing is fetched when it opens. The output depends
// only on the sources.
func WriteHTML(w io.Writer, sources []*Source, opt Options) error {
	if opt.MaxInstances == 0 {
		opt.MaxInstances = 4
	}
	// The sections (advise's replays) are drawn while the loads are: they
	// only read the sources.
	extra := make([]template.HTML, len(opt.Sections))
	var secs sync.WaitGroup
	for i, sec := range opt.Sections {
		secs.Go(func() { extra[i] = sec(sources) })
	}
	es := buildEntries(sources)
	p := page{CSS: template.CSS(css), JS: template.JS(js)}
	var names []string
	for _, s := range sources {
		p.Sources = append(p.Sources, viewOf(s))
		names = append(names, s.Spec.Metadata.Name)
	}
	p.Title = "throttlelab: " + strings.Join(dedupe(names), " vs ")
	for li, load := range loadNames(es) {
		id := fmt.Sprintf("l%d", li)
		lv := loadView{Name: load, Rows: rows(es, load)}
		for _, e := range es {
			if e.load.Name == load {
				lv.Describe = describeLoad(e.runs[0].Summary)
				break
			}
		}
		for _, c := range latencyCharts(es, load, id) {
			lv.Dist = append(lv.Dist, template.HTML(c.SVG()))
		}
		lv.Percentile = template.HTML(percentileChart(es, load, id).SVG())
		lv.P99Bars = p99Bars(lv.Rows)
		for _, e := range es {
			if e.load.Name == load && e.load.Mode == "ramp" {
				for _, c := range rampCharts(es, load, id) {
					lv.Ramp = append(lv.Ramp, template.HTML(c.SVG()))
				}
				break
			}
		}
		cpu, notes := usageCharts(es, load, id, opt.MaxInstances)
		for _, c := range cpu {
			lv.CPU = append(lv.CPU, template.HTML(c.SVG()))
		}
		lv.CPUNotes = notes
		for _, e := range es {
			if e.load.Name != load {
				continue
			}
			r := rowOf(e)
			lv.Instances = append(lv.Instances, instanceView{Label: e.label, Bars: instanceBars(e), SameInstance: r.SameInstanceRate,
				SameIfRandom: sameIfRandom(r.Instances), Balancer: e.runs[0].Summary.Balancer})
		}
		lv.Tiles = tileMaps(es, load, id)
		p.Loads = append(p.Loads, lv)
	}
	secs.Wait()
	for _, h := range extra {
		if h != "" {
			p.Extra = append(p.Extra, h)
		}
	}
	t, err := template.New("report").Funcs(template.FuncMap{
		"ms":  fmtMs,
		"f1":  func(v float64) string { return fmt.Sprintf("%.1f", v) },
		"f2":  func(v float64) string { return fmt.Sprintf("%.2f", v) },
		"pct": func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) },
	}).Parse(pageTemplate)
	if err != nil {
		return err
	}
	return t.Execute(w, p)
}

func dedupe(v []string) []string {
	var out []string
	for _, s := range v {
		if len(out) == 0 || !strings.EqualFold(out[len(out)-1], s) {
			out = append(out, s)
		}
	}
	return out
}

func viewOf(s *Source) sourceView {
	v := sourceView{Label: s.Label, Name: s.Spec.Metadata.Name, Description: s.Spec.Metadata.Description, Dir: s.Dir, Runs: len(s.Runs),
		Version: s.Env.Version, Backend: s.Env.Backend, Verdict: record.ReadVerdict(s.Dir), Headline: Headline(s)}
	if !s.Env.Started.IsZero() {
		v.Date = s.Env.Started.Format("2006-01-02 15:04 UTC")
	}
	v.Machine = fmt.Sprintf("%s: %s, %d cores, Linux %s, %s", s.Env.Hostname, s.Env.CPUModel, s.Env.Cores, s.Env.Kernel, s.Env.GoVersion)
	if s.Simulated() {
		v.Machine = fmt.Sprintf("simulated: %d cores", s.Env.Cores)
		v.Date = fmt.Sprintf("simulated time (seed %d)", s.Spec.Spec.Seed)
	}
	v.Cgroups = fmt.Sprintf("%s (cpu controller %s, burst %s)", s.Env.CgroupMode, s.Env.CPUController, yesNo(s.Env.BurstSupport))
	return v
}

func yesNo(b bool) string {
	if b {
		return "supported"
	}
	return "not supported"
}

func describeLoad(s *loadgen.Totals) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s load of %s requests, balancer %s", s.Mode, s.Request, s.Balancer)
	if s.RateRPS > 0 {
		fmt.Fprintf(&b, ", %s arrivals at %g/s", s.Arrivals, s.RateRPS)
	}
	return b.String()
}

// sameIfRandom is the share of consecutive requests a random pick sends to
// the same one of n instances.
func sameIfRandom(n int) float64 {
	if n > 0 {
		return 1 / float64(n)
	}
	return 0
}
