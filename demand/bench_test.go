package demand

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkSampleRead is one live sample of the root group's usage (pread
// of a file kept open); BenchmarkSampleReadFile, the reference, opens and
// reads the file anew each time. At 100 samples a second, ns/op x 1e-5 is
// the share of one core sampling costs.
func BenchmarkSampleRead(b *testing.B) {
	g, err := FindPath("/", "/")
	if err != nil {
		b.Skip(err)
	}
	s, err := NewSampler(g)
	if err != nil {
		b.Skip(err)
	}
	defer s.Close()
	b.ReportAllocs()
	for range b.N {
		if _, err := s.Read(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSampleReadFile(b *testing.B) {
	g, err := FindPath("/", "/")
	if err != nil {
		b.Skip(err)
	}
	file := filepath.Join(g.CPUDir, "cpu.stat")
	if g.Version == "v1" {
		file = filepath.Join(g.AcctDir, "cpuacct.usage")
	}
	b.ReportAllocs()
	for range b.N {
		if _, err := os.ReadFile(file); err != nil {
			b.Fatal(err)
		}
	}
}
