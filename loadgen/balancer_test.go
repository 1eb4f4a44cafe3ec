package loadgen

import (
	"math"
	"testing"
)

// newBalancer parses spec and makes its balancer over n targets.
func newBalancer(t testing.TB, spec string, n int, seed uint64) Balancer {
	t.Helper()
	p, err := ParseBalancer(spec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.New(n, seed)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameRate returns the fraction of consecutive picks that chose the same target.
func sameRate(b Balancer, n int) float64 {
	same := 0
	prev := b.Pick()
	b.Done(prev)
	for i := 1; i < n; i++ {
		p := b.Pick()
		b.Done(p)
		if p == prev {
			same++
		}
		prev = p
	}
	return float64(same) / float64(n-1)
}

func TestBalancerSameInstanceRates(t *testing.T) {
	const targets, n = 8, 200000
	tests := []struct {
		spec string
		want float64
	}{
		{"random", 1.0 / 8},
		{"roundrobin", 0},
		{"ingress:3", 2.0 / 3 / 8},
		{"ingress:1", 0},
	}
	for _, tt := range tests {
		b := newBalancer(t, tt.spec, targets, 1)
		got := sameRate(b, n)
		// Binomial standard error at n=200000 is under 0.1 percentage points.
		if math.Abs(got-tt.want) > 0.005 {
			t.Errorf("%s: same-instance rate %.4f, want %.4f", tt.spec, got, tt.want)
		}
	}
}

func TestBalancersSpreadEvenly(t *testing.T) {
	for _, spec := range []string{"random", "roundrobin", "ingress:3", "least", "p2c"} {
		b := newBalancer(t, spec, 4, 3)
		counts := make([]int, 4)
		for i := 0; i < 40000; i++ {
			p := b.Pick()
			counts[p]++
			b.Done(p)
		}
		for i, c := range counts {
			if c < 9000 || c > 11000 {
				t.Errorf("%s: target %d got %d of 40000, want about 10000", spec, i, c)
			}
		}
	}
}

func TestLeastAndP2CAvoidBusyTargets(t *testing.T) {
	for _, spec := range []string{"least", "p2c"} {
		b := newBalancer(t, spec, 3, 1)
		// Three requests outstanding, none finished: least spreads them exactly.
		got := map[int]int{}
		for i := 0; i < 3; i++ {
			got[b.Pick()]++
		}
		if spec == "least" && len(got) != 3 {
			t.Errorf("least with 3 outstanding on 3 targets: %v, want one each", got)
		}
		// A target with many outstanding requests is avoided by both.
		b2 := newBalancer(t, spec, 2, 1)
		for i := 0; i < 50; i++ {
			if b2.Pick() == 1 {
				b2.Done(1)
			}
		}
		// Target 0 holds ~all outstanding; p2c with 2 targets always compares both.
		if p := b2.Pick(); p != 1 {
			t.Errorf("%s picked the busy target", spec)
		}
	}
}

func TestParseBalancerRejects(t *testing.T) {
	for _, spec := range []string{"rand", "ingress:", "ingress:0", "ingress:x", "ingress:1025"} {
		if _, err := ParseBalancer(spec); err == nil {
			t.Errorf("%q accepted", spec)
		}
	}
	if _, err := (BalancerSpec{}).New(0, 1); err == nil {
		t.Error("0 targets accepted")
	}
	if _, err := (BalancerSpec{Kind: BalanceIngress}).New(3, 1); err == nil {
		t.Error("ingress:0 made in code accepted")
	}
}

// TestBalancerSpecRoundTrip: every balancer is written as it is read, and ""
// (the default) reads as random.
func TestBalancerSpecRoundTrip(t *testing.T) {
	for _, spec := range []string{"random", "roundrobin", "ingress:3", "least", "p2c"} {
		p, err := ParseBalancer(spec)
		if err != nil {
			t.Fatal(err)
		}
		var q BalancerSpec
		if err := q.Set(p.String()); err != nil || q != p || q.String() != spec {
			t.Errorf("%s: read back as %v (%q), %v", spec, q, q.String(), err)
		}
	}
	if p, err := ParseBalancer(""); err != nil || p.String() != "random" {
		t.Errorf(`"" = %v, %v: want random`, p, err)
	}
}
