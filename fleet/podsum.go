package fleet

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/demand"
	"github.com/throttlelab/throttlelab/units"
)

// recordedFile is one container's recorded demand and the time_ns of its
// first sample (ReadCSV starts the demand at 0; the pod's sum needs the
// times as written).
type recordedFile struct {
	d      *advise.Demand
	origin time.Duration
}

// load reads the recorded demand at p once; a missing file is a *Skipped.
func (r *Recorded) load(p string) (*recordedFile, error) {
	if f := r.cache[p]; f != nil {
		return f, nil
	}
	fh, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &Skipped{"no recorded demand at " + p}
	}
	if err != nil {
		return nil, &DemandError{p, err}
	}
	defer fh.Close()
	d, err := demand.ReadCSV(fh)
	if err != nil {
		return nil, &DemandError{p, err}
	}
	if _, err := fh.Seek(0, io.SeekStart); err != nil {
		return nil, &DemandError{p, err}
	}
	origin, err := firstSampleTime(fh)
	if err != nil {
		return nil, &DemandError{p, err}
	}
	if r.cache == nil {
		r.cache = map[string]*recordedFile{}
	}
	f := &recordedFile{d, origin}
	r.cache[p] = f
	return f, nil
}

// firstSampleTime is the time_ns of the first sample of a demand CSV
// (plain or gzip-compressed, as ReadCSV reads it): the first line that
// starts with a digit. ReadCSV has read the file whole by then, so the
// file is known to be good.
func firstSampleTime(r io.Reader) (time.Duration, error) {
	br := bufio.NewReader(r)
	if magic, err := br.Peek(2); err == nil && bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return 0, fmt.Errorf("gzip: %w", err)
		}
		br = bufio.NewReader(zr)
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 || b[0] < '0' || b[0] > '9' {
			continue
		}
		t, _, _ := bytes.Cut(b, []byte{','})
		ns, err := strconv.ParseInt(string(t), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("first sample %q: %w", b, err)
		}
		return time.Duration(ns), nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no sample")
}

// PredictPod implements PodEvaluator: the pod-level limit replayed on its
// containers' recorded demand (DIR/NAMESPACE/WORKLOAD/CONTAINER.csv for
// each), aligned on their times (cfs.AlignDemands), with each container's
// own limit in the manifest nested inside the pod's as the kernel nests
// them (advise.EvaluatePod, the replay advise --demand DIR uses). The
// prediction is the pod's pool's throttled share and the worst
// container's p99 added delay (waits for its own quota or the pod's).
func (r *Recorded) PredictPod(_ context.Context, p ManifestPod) (Prediction, string, error) {
	fs := make([]*recordedFile, 0, len(p.Containers))
	paths := make([]string, 0, len(p.Containers))
	limits := make([]int64, 0, len(p.Containers))
	for _, mc := range p.members {
		path := filepath.Join(r.Dir, p.Workload.Namespace, p.Workload.Name, mc.Container+".csv")
		f, err := r.load(path)
		var sk *Skipped
		if errors.As(err, &sk) {
			return Prediction{}, "", &Skipped{"pod-level limit not checked: no recorded demand at " + path + " (the pod's limit is replayed on every container's demand summed)"}
		}
		if err != nil {
			return Prediction{}, "", err
		}
		if f.d.Excluded > 0 {
			return Prediction{}, "", &DemandError{path, fmt.Errorf("%s of the samples left out (gaps or a restarted counter): the pod's sum aligns its containers' samples on their times and needs them whole; record a span without gaps", f.d.Excluded.Round(time.Millisecond))}
		}
		fs, paths, limits = append(fs, f), append(paths, path), append(limits, mc.LimitMilli)
	}
	al, err := alignRecorded(fs)
	if err != nil {
		return Prediction{}, "", &DemandError{strings.Join(paths, ", "), err}
	}
	o, err := advise.EvaluatePod(advise.PodDemand{Names: p.Containers, Demands: al}, advise.PodRequest{}, p.LimitMilli, limits)
	if err != nil {
		return Prediction{}, "", &DemandError{strings.Join(paths, ", "), fmt.Errorf("at pod-level %s: %w", cpu(p.LimitMilli), err)}
	}
	pr := Prediction{Known: true, ThrottledRatio: o.PodThrottledRatio}
	for _, c := range o.Containers {
		pr.DelayP99Ms = max(pr.DelayP99Ms, c.DelayP99Ms)
	}
	src := "demand " + strings.Join(paths, " + ")
	var own []string
	for i, l := range limits {
		if l > 0 {
			own = append(own, p.Containers[i]+" "+cpu(l))
		}
	}
	if len(own) > 0 {
		src += ", nested over the containers' own limits " + strings.Join(own, ", ")
	}
	return pr, src, nil
}

// alignRecorded puts the containers' recorded demand on one time axis
// (time_ns as written, so the files must share a clock; files that all
// start at 0, as advise --save-csv writes them, are aligned at their
// starts): cfs.AlignDemands, every container's work over the span all
// cover counted exactly.
func alignRecorded(fs []*recordedFile) ([]*advise.Demand, error) {
	if len(fs) == 0 {
		return nil, errors.New("no container to sum")
	}
	ds, origins := make([]*advise.Demand, len(fs)), make([]time.Duration, len(fs))
	for i, f := range fs {
		ds[i], origins[i] = f.d, f.origin
	}
	return cfs.AlignDemands(ds, origins)
}

// ReadPodDemand reads one pod's recorded demand: every CONTAINER.csv (or
// .csv.gz) in dir, as check --demand reads them (dir is
// DIR/NAMESPACE/WORKLOAD there), aligned on their times
// (cfs.AlignDemands) for advise.AdvisePod. A directory with fewer than two
// containers, or containers whose samples do not overlap in time, is a
// *DemandError naming it.
func ReadPodDemand(dir string) (advise.PodDemand, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return advise.PodDemand{}, &DemandError{dir, err}
	}
	var r Recorded
	pd := advise.PodDemand{Source: "demand " + dir}
	var ds []*advise.Demand
	var origins []time.Duration
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".csv")
		if !ok {
			name, ok = strings.CutSuffix(e.Name(), ".csv.gz")
		}
		if !ok || e.IsDir() {
			continue
		}
		f, err := r.load(filepath.Join(dir, e.Name()))
		if err != nil {
			return advise.PodDemand{}, err
		}
		pd.Names = append(pd.Names, name)
		ds, origins = append(ds, f.d), append(origins, f.origin)
	}
	if len(ds) < 2 {
		return advise.PodDemand{}, &DemandError{dir, fmt.Errorf("%d container CSVs (CONTAINER.csv): a pod's advice compares its containers' limits with one pod-level limit and needs two or more; advise one container's CSV on its own", len(ds))}
	}
	if pd.Demands, err = cfs.AlignDemands(ds, origins); err != nil {
		return advise.PodDemand{}, &DemandError{dir, fmt.Errorf("%s: %w", strings.Join(pd.Names, ", "), err)}
	}
	return pd, nil
}

// WritePodPatch writes the cheapest setting of a pod's advice as a kubectl
// command patching the pod template of the workload whose demand dir holds
// (DIR/NAMESPACE/WORKLOAD): the pod-level spec.resources (Kubernetes
// 1.34+) and, where the setting has them, the containers' own limits.
// The demand does not say the workload's kind: the command names a
// Deployment, and says so.
func WritePodPatch(w io.Writer, dir string, a *advise.PodAdvice) error {
	o := a.Option(a.Cheapest)
	if o == nil {
		_, err := fmt.Fprintln(w, "# throttlelab advise: no setting meets the target; nothing to patch")
		return err
	}
	ns, name := filepath.Base(filepath.Dir(filepath.Clean(dir))), filepath.Base(filepath.Clean(dir))
	spec := map[string]any{}
	if o.PodLimitMilli > 0 {
		spec["resources"] = map[string]any{"limits": map[string]string{"cpu": units.FormatMilliCPU(o.PodLimitMilli)}}
	}
	var cs []any
	for _, c := range o.Containers {
		if c.LimitMilli > 0 {
			cs = append(cs, map[string]any{"name": c.Name, "resources": map[string]any{"limits": map[string]string{"cpu": units.FormatMilliCPU(c.LimitMilli)}}})
		}
	}
	if cs != nil {
		spec["containers"] = cs
	}
	pod, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "# throttlelab advise: %s\n", strings.TrimPrefix(advise.PodAnswer(a), "answer: "))
	if o.PodLimitMilli > 0 {
		fmt.Fprintln(w, "# pod-level resources need Kubernetes 1.34+ (feature gate PodLevelResources, on by default from 1.34); a container limit above the pod's is refused")
	}
	if cs != nil {
		fmt.Fprintln(w, "# a sidecar (an initContainer with restartPolicy: Always) takes its limit under initContainers, not containers")
	}
	fmt.Fprintf(w, "# the demand does not say the workload's kind: for a StatefulSet or DaemonSet, change deployment below\n")
	_, err = io.WriteString(w, templatePatchLine(ns, "Deployment", name, pod))
	return err
}
