package cgroup

import (
	"os"
	"strconv"
	"testing"
)

func TestStaleRun(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"x-" + strconv.Itoa(os.Getpid()), false}, // alive: this test
		{"x-999999999", true},                     // no such process
		{"limits", false},                         // not NAME-PID: not ours to judge
		{"x-0", false},
		{"x-abc", false},
	}
	for _, tt := range tests {
		if got := staleRun(tt.name); got != tt.want {
			t.Errorf("staleRun(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
