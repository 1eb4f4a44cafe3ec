package hostmounts

import (
	"slices"
	"testing"
)

func TestDiff(t *testing.T) {
	const (
		root = "22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw"
		cpu  = "30 22 0:26 / /sys/fs/cgroup/cpu rw,nosuid shared:9 - cgroup cgroup rw,cpu"
		cpu2 = "41 22 0:26 / /sys/fs/cgroup/cpu rw,nosuid shared:9 - cgroup cgroup rw,cpu"
		v2   = "31 22 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw"
	)
	for _, tt := range []struct {
		name          string
		before, after string
		want          []string
	}{
		{"same", root + "\n" + cpu + "\n", root + "\n" + cpu + "\n", nil},
		{"reordered", root + "\n" + cpu + "\n" + v2 + "\n", v2 + "\n" + root + "\n" + cpu + "\n", nil},
		{"unmounted", root + "\n" + cpu + "\n" + v2 + "\n", root + "\n" + v2 + "\n", []string{"- " + cpu}},
		{"mounted", root + "\n", root + "\n" + v2 + "\n", []string{"+ " + v2}},
		{"remounted", root + "\n" + cpu + "\n", root + "\n" + cpu2 + "\n", []string{"- " + cpu, "+ " + cpu2}},
		{"mounted twice", root + "\n" + v2 + "\n", root + "\n" + v2 + "\n" + v2 + "\n", []string{"+ " + v2}},
	} {
		if got := Diff([]byte(tt.before), []byte(tt.after)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Diff = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestReadSelf(t *testing.T) {
	b, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	if d := Diff(b, b); d != nil || len(lines(b)) == 0 {
		t.Errorf("this process's mounts: %d lines, self-diff %q", len(lines(b)), d)
	}
}
