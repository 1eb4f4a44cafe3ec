package presets

// MapRanges is the map a preset draws when throttlelab map is given no
// ranges: its finding's limit against its load, at the original scale.
// Ranges are written FROM:TO:STEPS (limitmap.Ranges reads them).
type MapRanges struct {
	// Limited and Reference name the configs (empty: the map's defaults;
	// Reference "self": the limited config without its limit).
	Limited, Reference string
	// Limit and one of Rate, Workers or Burst span the grid.
	Limit, Rate, Workers, Burst string
	// Repeats is the simulated runs per cell (0: the map's default).
	Repeats int
}

// presetMaps are the presets whose finding is a point of a map: F1 and F2
// (limit per pod against the image's workers), F9 (a small limit against
// 5 ms requests one at a time, compared with the same instance unlimited)
// and F13 (limit against burst).
var presetMaps = map[string]MapRanges{
	"f01-logjam":     {Limit: "500m:2:7", Workers: "2:16:8", Repeats: 1},
	"f02-limit-size": {Limited: "limit-1", Limit: "500m:4:8", Workers: "2:16:8", Repeats: 1},
	"f09-burn-flow":  {Reference: "self", Limit: "100m:1:10", Workers: "1:4:4"},
	"f13-cpu-burst":  {Limited: "burst", Reference: "self", Limit: "2:6:5", Burst: "0:400ms:5", Repeats: 3},
}

// MapOf returns the map preset name draws, and false for a name that is no
// preset or a preset without a map.
func MapOf(name string) (MapRanges, bool) {
	m, ok := presetMaps[name]
	return m, ok
}
