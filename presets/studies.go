package presets

import (
	"fmt"
	"io"
	"strings"
)

// Study is a published study that presets reproduce: what docs/findings.md
// cites for it. A field that could not be checked against the public
// source says so ("not confirmed"): a citation is never guessed.
type Study struct {
	// Name is the short name the presets give as their Source.
	Name string
	// Title, Author and Date are the publication's, as published; URL its
	// public address ("" where none is known).
	Title, Author, Date, URL string
	// Measured says what the study measured, and on what machines.
	Measured string
}

// studies are the sources of the presets, in finding order.
var studies = []Study{
	{
		Name:   mandelbrot,
		Title:  "Kubernetes CPU limits and latency: we dig in to the effects of Kubernetes CPU limits on response latency",
		Author: "a blog post on geodata.no, in its DevOps & Cloud Native category (the author's name: not confirmed)",
		Date:   "2024-04-30",
		URL:    "https://geodata.no/blogg/2024/04/30/kubernetes-cpu-limits-and-latency",
		Measured: "the render latency of a Mandelbrot tile server (Python with a C kernel; a 34000 x 30600 image in 26010 tiles of 200 x 200) " +
			"on Kubernetes on an AWS c7i.4xlarge (8 cores, 16 threads), with pods unlimited or limited to 1, 2 or 4 CPUs, " +
			"single-threaded or threaded, behind a Service or round-robin ingresses, beside noisy neighbours",
	},
	{
		Name:   schedBench,
		Title:  "Kubernetes Scheduling and Timescales (the README of the sched-bench repository, \"Synthetic benchmark app to understand the kubernetes scheduler\")",
		Author: "Dimitri Stiliadis (GitHub dstiliadis)",
		Date:   "not confirmed (the repository was archived on 2024-07-19)",
		URL:    "https://github.com/dstiliadis/sched-bench",
		Measured: "the goodput of 4 Go goroutines busy for 200 ms then asleep for 2 s, unlimited or limited to 2 CPUs, " +
			"CPU use at 100 ms and 1 s, and a web server under Markov on/off clients at 2, 3 and 4 CPUs, on a GKE node of 4 cores (n1-standard-4)",
	},
	{
		Name:   burnFlow,
		Title:  "ace-container-cpu: Experiments with CPU limiting using Docker and Kubernetes",
		Author: "GitHub tdolby-at-uk-ibm-com (IBM; the author's name: not confirmed)",
		Date:   "not confirmed",
		URL:    "https://github.com/tdolby-at-uk-ibm-com/ace-container-cpu",
		Measured: "the latency of ~5 ms CPU-burning requests, one at a time, to an IBM App Connect Enterprise flow (the CPUBurnFlow) " +
			"in a container run with `docker --cpus` 1, 0.3 and 0.1, timed by a Python HTTP client",
	},
	{
		Name:   qosPaper,
		Title:  "not confirmed (a research paper on Kubernetes QoS classes; its problem section)",
		Author: "not confirmed",
		Date:   "not confirmed",
		Measured: "a social-network web application's latency with a Guaranteed or Burstable server beside a BestEffort CPU job, " +
			"or beside a second service, each requesting 2 of the same 4 cores, and with CPU weights from 100 to 10000 against 1",
	},
	{
		Name:   burstStudy,
		Title:  "How to Use CPU Management Policies Reasonably to Improve Container Performance (Alibaba Cloud Community Blog)",
		Author: "Zhang Zuowei (Youyi), Alibaba Cloud",
		Date:   "not confirmed",
		URL:    "https://www.alibabacloud.com/blog/how-to-use-cpu-management-policies-reasonably-to-improve-container-performance_599140",
		Measured: "Apache HTTP Server's latency in Alibaba Cloud Container Service (ACK) with and without CPU Burst " +
			"(the kernel's cpu.cfs_burst_us), CPU use at 100 ms against 1 s, and exclusive (pinned) cores against the shared pool",
	},
}

// Studies returns the studies the presets reproduce, in finding order.
func Studies() []Study { return studies }

// StudyOf returns the study a preset reproduces.
func StudyOf(p *Preset) (Study, bool) {
	for _, s := range studies {
		if s.Name == p.Source {
			return s, true
		}
	}
	return Study{}, false
}

// WriteStudies writes the studies as docs/findings.md cites them: per
// study its title, author, date, address, what it measured, and which
// presets reproduce which of its findings. make reproduce writes it into
// docs/findings.md, and a test checks the page holds it as written here.
func WriteStudies(w io.Writer) error {
	var b strings.Builder
	b.WriteString("## The studies\n\n")
	b.WriteString("The published figures in the table are the studies' own, from their machines. ")
	b.WriteString("What could not be checked against the public source is marked \"not confirmed\".\n")
	for _, s := range studies {
		fmt.Fprintf(&b, "\n### %s\n\n", s.Name)
		fmt.Fprintf(&b, "- **Title:** %s\n", s.Title)
		fmt.Fprintf(&b, "- **Author:** %s\n", s.Author)
		fmt.Fprintf(&b, "- **Date:** %s\n", s.Date)
		if s.URL != "" {
			fmt.Fprintf(&b, "- **Address:** <%s>\n", s.URL)
		} else {
			b.WriteString("- **Address:** not confirmed\n")
		}
		fmt.Fprintf(&b, "- **Measured:** %s.\n", s.Measured)
		b.WriteString("- **Reproduced by:**\n")
		for _, p := range presets {
			if p.Source == s.Name {
				fmt.Fprintf(&b, "  - %s `%s`: %s.\n", p.Finding, p.Name, p.Claim)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
