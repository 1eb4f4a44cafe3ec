package advise

import (
	"strings"
	"testing"
	"time"
)

// TestBaselinesSayWhatTheyUsed: a baseline is computed over the windows the
// samples hold and says how many, or says why it is missing.
func TestBaselinesSayWhatTheyUsed(t *testing.T) {
	for _, tc := range []struct {
		span                 time.Duration
		windows75, windows60 int // 0: missing
	}{
		{30 * time.Second, 0, 0},
		{60 * time.Second, 0, 1},
		{90 * time.Second, 16, 31},
	} {
		bs := baselinesOf(demandOf(tc.span, constant(0.3)))
		for _, b := range bs {
			want := tc.windows75
			switch b.Name {
			case "VPA target":
				want = tc.windows60
			case "mean":
				if b.Milli != 300 {
					t.Errorf("%s: mean %dm, want 300m", tc.span, b.Milli)
				}
				continue
			}
			if b.Windows != want {
				t.Errorf("%s: %s over %d windows, want %d", tc.span, b.Name, b.Windows, want)
			}
			if want == 0 && (b.Milli != 0 || !strings.Contains(b.Missing, "s of samples, has")) {
				t.Errorf("%s: %s: %dm, why %q: want missing with a reason", tc.span, b.Name, b.Milli, b.Missing)
			}
			if want > 0 && (b.Milli != 300 && b.Milli != 345 || b.Missing != "") {
				t.Errorf("%s: %s: %dm, why %q: want 300m (VPA: 345m)", tc.span, b.Name, b.Milli, b.Missing)
			}
		}
	}
}

// TestBaselineUnderTheMinimumQuota: an idle program's baselines come out at
// 1m, a quota of 100 us at a 100 ms period that the kubelet would not set:
// the advice says so in Missing rather than leaving the baseline blank.
func TestBaselineUnderTheMinimumQuota(t *testing.T) {
	a, err := Advise(demandOf(90*time.Second, constant(0.0005)), Request{}, Sampled{Source: "idle"})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range a.Baselines {
		if b.Evaluation == nil && !strings.Contains(b.Missing, "quota under 1 ms") {
			t.Errorf("%s: no evaluation and no reason (%q)", b.Name, b.Missing)
		}
	}
}
