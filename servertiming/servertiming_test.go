package servertiming

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    Timing
		wantErr bool
	}{
		{"queue;dur=0.5, cpu;dur=5, wall;dur=20", Timing{500 * time.Microsecond, 5 * time.Millisecond, 20 * time.Millisecond}, false},
		{`cpu;desc="thread";dur=1,wall;dur=2,queue;dur=0,db;dur=3`, Timing{0, time.Millisecond, 2 * time.Millisecond}, false},
		{"queue;dur=1, wall;dur=2", Timing{time.Millisecond, -1, 2 * time.Millisecond}, false},
		{"queue;dur=0, cpu;dur=5", Timing{}, true},
		{"queue;dur=x, cpu;dur=5, wall;dur=6", Timing{}, true},
		{"", Timing{}, true},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	h := "queue;dur=0.012, cpu;dur=5.170, wall;dur=5.342"
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Parse(h); err != nil {
			b.Fatal(err)
		}
	}
}
