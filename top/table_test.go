package top_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/internal/golden"
	"github.com/throttlelab/throttlelab/top"
	"github.com/throttlelab/throttlelab/watch"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

func writeFile(t *testing.T, root, p, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFakeTrees draws the table of every fake tree a second after its first
// sample.
func TestFakeTrees(t *testing.T) {
	const c1 = "c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1"
	const c4 = "d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4"
	pod4 := "sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podabcdef01_2345_4678_9abc_def012345678.slice/cri-containerd-" + c4 + ".scope/"
	tests := []struct {
		tree string
		// after is what the counter files say one second after the first
		// sample.
		after map[string]string
	}{
		{"v1-split", map[string]string{
			"sys/fs/cgroup/cpuacct/throttlelab/limits-4242/limited-0/cpuacct.usage": "300000000\n",
			"sys/fs/cgroup/cpu/throttlelab/limits-4242/limited-0/cpu.stat":          "nr_periods 110\nnr_throttled 99\nthrottled_time 4700000000\nnr_bursts 0\nburst_time 0\n",
			"sys/fs/cgroup/cpuacct/system.slice/sshd.service/cpuacct.usage":         "12000000\n",
			"sys/fs/cgroup/cpuacct/cpuacct.usage":                                   "6500000000\n",
			// PSI of the v2 group of the same path (a hybrid host's).
			"sys/fs/cgroup/unified/throttlelab/limits-4242/limited-0/cpu.pressure": "some avg10=70.00 avg60=55.00 avg300=21.00 total=1800000\nfull avg10=70.00 avg60=55.00 avg300=21.00 total=1800000\n",
		}},
		{"v1-joined-kubepods-cgroupfs", map[string]string{
			"sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/pod1f2e3d4c-5b6a-4789-8abc-def012345678/" + c1 + "/cpuacct.usage": "1090000000\n",
		}},
		{"v2-kubepods-systemd", map[string]string{
			pod4 + "cpu.stat":     "usage_usec 1000000\nuser_usec 880000\nsystem_usec 120000\nnice_usec 0\nnr_periods 410\nnr_throttled 308\nthrottled_usec 20600000\nnr_bursts 5\nburst_usec 45000\n",
			pod4 + "cpu.pressure": "some avg10=45.00 avg60=31.00 avg300=10.50 total=5600000\nfull avg10=41.00 avg60=28.50 avg300=9.10 total=5000000\n",
		}},
		{"hybrid-v2-cpu", map[string]string{
			"sys/fs/cgroup/unified/throttlelab/f01-logjam-19473/r001-limited-0/cpu.stat": "usage_usec 950000\nuser_usec 900000\nsystem_usec 50000\nnice_usec 0\nnr_periods 10\nnr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.tree, func(t *testing.T) {
			root := watchtest.FakeRoot(t, tt.tree)
			w, err := watch.New(watch.Options{Root: root})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			w.Sample(0)
			for p, c := range tt.after {
				writeFile(t, root, p, c)
			}
			w.Sample(time.Second)
			stats := w.Report()
			var b bytes.Buffer
			top.WriteTable(&b, w.Source(), top.View{Tree: true}.Rows(stats), time.Second)
			golden.Compare(t, filepath.Join("testdata", tt.tree+".golden"), b.Bytes())
		})
	}
}
