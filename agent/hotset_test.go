package agent

import "testing"

// TestHotSetDropThenDecide: observe takes a container from the agent's map,
// lets go of the lock, and decides whether it is hot; Update may drop the
// container in between (it went, or its read failed). The late decision
// must not put it back: nothing would take it out again, the hot count
// would stay one too high for good and the leaked member would hold a
// place under the cap.
func TestHotSetDropThenDecide(t *testing.T) {
	var s hotSet
	a, b := &container{path: "a"}, &container{path: "b"}
	if !s.decide(a, true, 1, 1) {
		t.Fatal("a asks to be hot under an empty cap of 1 and is not")
	}
	s.drop(a)
	if s.count.Load() != 0 || s.capped.Load() != 0 {
		t.Fatalf("after drop: hot %d, capped %d, want 0 and 0", s.count.Load(), s.capped.Load())
	}
	if s.decide(a, true, 5, 1) {
		t.Error("a dropped container was made hot again by a decision taken after the drop")
	}
	if s.count.Load() != 0 || s.capped.Load() != 0 || len(s.members) != 0 {
		t.Errorf("after a late decision: hot %d, capped %d, members %d, want 0, 0, 0", s.count.Load(), s.capped.Load(), len(s.members))
	}
	if !s.decide(b, true, 1, 1) {
		t.Error("b asks to be hot under a cap of 1 with no live member and is not: the dropped container holds its place")
	}
}
