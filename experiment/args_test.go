package experiment

import (
	"reflect"
	"testing"

	"github.com/throttlelab/throttlelab/units"
)

func TestServeArgs(t *testing.T) {
	off := false
	four, _ := units.FixedGOMAXPROCS(4)
	tests := []struct {
		s    Server
		cal  float64
		want []string
	}{
		{NeighbourServer, 0, []string{"serve", "--listen", ":8080", "--name", "a", "--gomaxprocs", "host"}},
		{Server{GOMAXPROCS: four, Single: true, CPUClock: &off}, 1234.56, []string{"serve", "--listen", ":8080", "--name", "a", "--gomaxprocs", "4",
			"--burn-calibration", "1234.6", "--single", "--cpu-clock=false"}},
	}
	for _, tt := range tests {
		if got := tt.s.ServeArgs("a", ":8080", tt.cal); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ServeArgs(%+v) = %v, want %v", tt.s, got, tt.want)
		}
	}
	burst := Neighbour{Kind: "burst", Workers: 2}
	if got := burst.ProcessArgs(); len(got) != 9 || got[0] != "burst" || got[2] != "2" || got[8] != "2" {
		t.Errorf("burst neighbour args %v", got)
	}
	if got := (Neighbour{Kind: "probe"}).ProcessArgs(); got != nil {
		t.Errorf("a probe has no process: %v", got)
	}
}
