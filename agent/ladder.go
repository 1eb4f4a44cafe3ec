package agent

import "sort"

// ladderSteps are the limits the summary evaluates, in millicores: every
// limit people write (100m, 250m, 500m, 1, 1.5, 2, ...) is on it, and
// neighbours are at most 12.5% apart from 100m up.
var ladderSteps = []struct{ upTo, step int64 }{
	{200, 10}, {500, 25}, {1000, 50}, {2000, 100}, {4000, 250}, {8000, 500}, {16000, 1000}, {1 << 40, 2000},
}

// Ladder returns the limits from 10m up to and including the first one at or
// above maxMilli (a node's CPUs): above it nothing can be throttled.
func Ladder(maxMilli int64) []int64 {
	var out []int64
	last := int64(0)
	for _, s := range ladderSteps {
		for v := last + s.step; v <= s.upTo; v += s.step {
			out = append(out, v)
			last = v
			if v >= maxMilli {
				return out
			}
		}
	}
	return out
}

// bracket returns the indexes of the ladder limits around m: lo <= m <= hi
// (lo == hi when m is on the ladder); -1 for lo when m is below the ladder,
// len for hi when above.
func bracket(ladder []int64, m int64) (lo, hi int) {
	i := sort.Search(len(ladder), func(i int) bool { return ladder[i] >= m })
	if i < len(ladder) && ladder[i] == m {
		return i, i
	}
	return i - 1, i
}
