package advise

import (
	"strings"
	"testing"
)

// TestJudgeRuntime: the recommended parallelism is set only where it moves
// the prediction beyond the intervals, for the better; within them, or for
// the worse, it is not.
func TestJudgeRuntime(t *testing.T) {
	own := RuntimePrediction{Parallelism: 8, Cores: 2, ThrottledRatio: 0.20, ThrottledRatioRange: &Range{0.15, 0.25}, DelayP99Ms: 40, DelayP99MsRange: &Range{30, 50}}
	for _, c := range []struct {
		name string
		rec  RuntimePrediction
		set  bool
		why  string
	}{
		{"within the intervals", RuntimePrediction{Parallelism: 1, Cores: 1, ThrottledRatio: 0.18, ThrottledRatioRange: &Range{0.12, 0.22}, DelayP99Ms: 35, DelayP99MsRange: &Range{25, 45}}, false, "the same"},
		{"better beyond them", RuntimePrediction{Parallelism: 1, Cores: 1, ThrottledRatio: 0.05, ThrottledRatioRange: &Range{0.03, 0.08}, DelayP99Ms: 38, DelayP99MsRange: &Range{30, 45}}, true, "less"},
		{"worse beyond them", RuntimePrediction{Parallelism: 1, Cores: 1, ThrottledRatio: 0.20, ThrottledRatioRange: &Range{0.15, 0.25}, DelayP99Ms: 90, DelayP99MsRange: &Range{70, 120}}, false, "keep 8"},
		{"fewer throttled, more delay", RuntimePrediction{Parallelism: 1, Cores: 1, ThrottledRatio: 0.05, ThrottledRatioRange: &Range{0.03, 0.08}, DelayP99Ms: 90, DelayP99MsRange: &Range{70, 120}}, false, "keep 8"},
	} {
		ra := &RuntimeAdvice{AtRecommended: 8, Recommended: 1, RecommendedSetting: "GOMAXPROCS=1", Predicted: []RuntimePrediction{own, c.rec}}
		set, why := judgeRuntime(ra)
		if set != c.set || !strings.Contains(why, c.why) {
			t.Errorf("%s: set %v (%s); want %v, saying %q", c.name, set, why, c.set, c.why)
		}
	}
	one := &RuntimeAdvice{AtRecommended: 2, Recommended: 2, Predicted: []RuntimePrediction{{Parallelism: 2, Cores: 2}}}
	if set, why := judgeRuntime(one); set || !strings.Contains(why, "nothing to set") {
		t.Errorf("one prediction: set %v (%s); want nothing to set", set, why)
	}
}
