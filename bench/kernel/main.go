// Command kernel benchmarks the Go Mandelbrot kernel against the same loop in C
// (csrc/kernel.c, gcc -O2 -ffp-contract=off), run alternately in one session so that a
// noisy shared machine hits both alike. Both are timed with the thread CPU clock
// and must count identical iterations; the result is the median ratio of
// ns/iteration, Go over C.
//
//	go run ./bench/kernel [-rounds 7]
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/throttlelab/throttlelab/workload"
)

// Tiles on the set's boundary (mixed, chaotic orbits) and one inside it.
var tiles = []workload.Tile{{X: 85, Y: 70}, {X: 142, Y: 76}, {X: 56, Y: 73}, {X: 120, Y: 55}}

type result struct {
	iterations []uint64
	cpuNs      int64
}

func (r result) nsPerIter() float64 {
	var n uint64
	for _, v := range r.iterations {
		n += v
	}
	return float64(r.cpuNs) / float64(n)
}

// goKernel runs the Go kernel over the tiles' pixels: the loop of RenderTile
// without storing pixels, which the C kernel does not do either.
func goKernel() result {
	var r result
	for _, t := range tiles {
		var total uint64
		cpu := workload.OnThread(func() {
			for j := 0; j < workload.TileSize; j++ {
				for i := 0; i < workload.TileSize; i++ {
					total += uint64(workload.Escape(workload.PixelCentre(t.X*workload.TileSize+i, t.Y*workload.TileSize+j)))
				}
			}
		})
		r.iterations = append(r.iterations, total)
		r.cpuNs += cpu.Nanoseconds()
	}
	return r
}

func cKernel(bin string) (result, error) {
	args := []string{strconv.Itoa(workload.MaxIter)}
	for _, t := range tiles {
		args = append(args, strconv.Itoa(t.X), strconv.Itoa(t.Y))
	}
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		return result{}, fmt.Errorf("running the C kernel: %w", err)
	}
	var r result
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var x, y int
		var n uint64
		var ns int64
		if _, err := fmt.Sscanf(sc.Text(), "%d,%d %d %d", &x, &y, &n, &ns); err != nil {
			return result{}, fmt.Errorf("the C kernel's output %q: %w", sc.Text(), err)
		}
		r.iterations = append(r.iterations, n)
		r.cpuNs += ns
	}
	return r, nil
}

func main() {
	rounds := flag.Int("rounds", 7, "alternating rounds of C and Go")
	cc := flag.String("cc", "gcc", "C compiler")
	flag.Parse()
	if err := run(*rounds, *cc); err != nil {
		fmt.Fprintln(os.Stderr, "bench/kernel:", err)
		os.Exit(1)
	}
}

func run(rounds int, cc string) error {
	runtime.GOMAXPROCS(1)
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "csrc", "kernel.c")
	dir, err := os.MkdirTemp("", "bench-kernel")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "kernel")
	if out, err := exec.Command(cc, "-O2", "-ffp-contract=off", "-o", bin, src).CombinedOutput(); err != nil {
		return fmt.Errorf("%s -O2 %s: %v\n%s", cc, src, err, out)
	}
	var goNs, cNs, ratios []float64
	for r := 0; r < rounds; r++ {
		c, err := cKernel(bin)
		if err != nil {
			return err
		}
		g := goKernel()
		if !slices.Equal(c.iterations, g.iterations) {
			return fmt.Errorf("the kernels differ: C counted %v iterations, Go %v", c.iterations, g.iterations)
		}
		goNs = append(goNs, g.nsPerIter())
		cNs = append(cNs, c.nsPerIter())
		ratios = append(ratios, g.nsPerIter()/c.nsPerIter())
		fmt.Printf("round %d: go %.3f ns/iter, c %.3f ns/iter, ratio %.3f\n", r+1, g.nsPerIter(), c.nsPerIter(), ratios[r])
	}
	med := func(v []float64) float64 { s := slices.Clone(v); slices.Sort(s); return s[len(s)/2] }
	verdict := "within"
	if med(ratios) > 1.15 {
		verdict = "NOT within"
	}
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				_, cpu, _ = strings.Cut(l, ": ")
				break
			}
		}
	}
	fmt.Printf("\nkernel, %d rounds on %s (%s), tiles %v\n", rounds, cpu, runtime.Version(), tiles)
	fmt.Printf("median: go %.3f ns/iter, c %.3f ns/iter; go/c = %.3f (%s the 1.15 goal)\n", med(goNs), med(cNs), med(ratios), verdict)
	return nil
}
