package loadgen

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestRecordsRoundTrip(t *testing.T) {
	in := []Record{
		{Seq: 0, Intended: 5, Start: 7, Latency: 1500 * time.Microsecond, Target: 1, Instance: `odd, "name"`, Status: 200, Bytes: 12,
			ServerQueue: 1, ServerCPU: 2, ServerWall: 3, Tile: "85,70", Step: 2, Worker: 3, Waited: true, Throttled: 70 * time.Millisecond},
		{Seq: 1, Intended: 10, Start: 10, Latency: time.Second, Target: 0, Err: ErrTimeout, ServerQueue: -1, ServerCPU: -1, ServerWall: -1, Throttled: -1},
	}
	var buf bytes.Buffer
	rec, _ := newRecorder(&buf)
	for i := range in {
		rec.add(&in[i])
	}
	if err := rec.flush(); err != nil {
		t.Fatal(err)
	}
	out, err := ReadRecords(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) || out[0] != in[0] || out[1] != in[1] {
		t.Errorf("round trip:\n%+v\n%+v", in, out)
	}
	if _, err := ReadRecords(strings.NewReader("a,b\n1,2\n")); err == nil {
		t.Error("a foreign CSV was read as records")
	}
	// Files from before throttled_ns read, with the column unknown (-1).
	old, err := ReadRecords(strings.NewReader(csvHeaderV1 + "3,0,0,5,0,a,200,1,,0,0,0,\"\",0,0,0\n"))
	if err != nil || len(old) != 1 || old[0].Seq != 3 || old[0].Throttled != -1 {
		t.Errorf("old file: %+v, %v", old, err)
	}
	bad := csvHeader + "x,0,0,0,0,a,200,1,,0,0,0,\"\",0,0,0,-1\n"
	if _, err := ReadRecords(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 2: seq") {
		t.Errorf("bad seq: %v", err)
	}
}
