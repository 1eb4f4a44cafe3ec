package demand

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cgroup/cgrouptest"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// TestAuditReal: two bursty processes in a real group under 500m are
// throttled; sampled there, the advice audits itself at 500m against the
// kernel's own count (in the JSON and the text), every interval contains
// the one of the same advice without the audit, and the per-CPU counters
// say how many CPUs the group ran on. Shapes only.
func TestAuditReal(t *testing.T) {
	g := cgrouptest.LimitedGroup(t, 50000, 100000)
	startBursts(t, g, 2, 40*time.Millisecond, 60*time.Millisecond, "")
	grp, err := FindPath("/", watchtest.CgroupPath(t, g.Dir))
	if err != nil {
		t.Fatal(err)
	}
	d, st, err := Sample(context.Background(), grp, 3*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.ThrottledPeriods == 0 {
		t.Fatalf("cpu.stat delta %+v: two 40%% bursts under 500m must be throttled", st)
	}
	if grp.Version == "v1" && d.PerCPU == nil {
		t.Error("no per-CPU split sampled from cpuacct.usage_percpu")
	}
	plain, err := advise.Advise(d, advise.Request{}, advise.Sampled{CPUStat: st})
	if err != nil {
		t.Fatal(err)
	}
	a, err := advise.Advise(d, advise.Request{}, advise.Sampled{CPUStat: st, LimitMilli: grp.LimitMilli(), PeriodUsec: 100000})
	if err != nil {
		t.Fatal(err)
	}
	au := a.Audit
	if au == nil {
		t.Fatalf("no audit for a group sampled under its own 500m limit (%d periods)", st.Periods)
	}
	t.Logf("%s; ran on %d CPUs", au, a.Sampled.CPUs)
	if au.LimitMilli != 500 || au.Periods != st.Periods || au.ThrottledPeriods != st.ThrottledPeriods || au.Measured <= 0 {
		t.Errorf("audit %+v: want the kernel's counts %+v at 500m", au, st)
	}
	if plain.Audit != nil {
		t.Error("an audit without a limit")
	}
	for i, e := range a.Evaluations {
		r, q := e.ThrottledRatioRange, plain.Evaluations[i].ThrottledRatioRange
		if r[0] > q[0] || r[1] < q[1] {
			t.Errorf("%s: audited interval %v does not contain %v", e.Point(), *r, *q)
		}
	}
	var js, txt bytes.Buffer
	if err := json.NewEncoder(&js).Encode(a); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"kernel_nr_throttled"`) {
		t.Error("the JSON has no audit")
	}
	if err := advise.WriteText(&txt, a); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "self-audit: at the group's own limit 500m") {
		t.Errorf("the text has no audit:\n%s", txt.String())
	}
}
