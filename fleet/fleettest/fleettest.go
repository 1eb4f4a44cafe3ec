// Package fleettest serves what fleet reads, for the tests of fleet and of
// the commands that drive it: a fake throttlelab agent that answers the
// agent's HTTP contract (/advice, /evaluate) from real advise evaluations of
// synthetic demand, and a Prometheus that answers with responses a real
// Prometheus gave (fleet/testdata/prometheus).
package fleettest

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/advise"
	"github.com/throttlelab/throttlelab/agent"
	"github.com/throttlelab/throttlelab/cfs"
	"github.com/throttlelab/throttlelab/units"
)

// Bursty is seconds of demand sampled every 10 ms: every second a burst of
// peak cores for burst, the rest base cores, with seeded noise: the shape
// that a limit above its mean still throttles.
func Bursty(seconds int, base, peak float64, burst time.Duration, seed uint64) *advise.Demand {
	r := rand.New(rand.NewPCG(seed, 1))
	n := seconds * 100
	at := make([]time.Duration, n+1)
	use := make([]time.Duration, n+1)
	for i := 1; i <= n; i++ {
		t := time.Duration(i) * 10 * time.Millisecond
		c := base
		if t%time.Second < burst {
			c = peak
		}
		c *= 0.8 + 0.4*r.Float64()
		at[i] = t
		use[i] = use[i-1] + time.Duration(c*float64(10*time.Millisecond))
	}
	return cfs.FromSamples(at, use)
}

// Container is one container a fake agent serves.
type Container struct {
	Namespace, Pod, Container string
	OwnerKind, OwnerName      string
	LimitMilli, RequestMilli  int64
	Demand                    *advise.Demand
	// KrrMilli, if set, is the krr baseline exported in place of advise's:
	// the agent exports krr's limit even where no quota can be set at it
	// (1m for an idle container), where advise leaves its evaluation out.
	KrrMilli int64
	// PodLevel marks a pod's own entry (a pod-level limit): Container is "".
	PodLevel bool
}

// Agent serves the agent's /advice and /evaluate for cs on node, from
// advise.Advise and advise.Evaluate of each container's demand (a nil
// Demand: no advice yet). It is closed with the test.
func Agent(t testing.TB, node string, cs []Container) *httptest.Server {
	t.Helper()
	target := advise.Target{MaxThrottled: 0.01}
	var doc struct {
		Node       string       `json:"node"`
		Containers []agent.View `json:"containers"`
	}
	doc.Node = node
	for i, c := range cs {
		ac := agent.View{Names: agent.Names{Namespace: c.Namespace, Pod: c.Pod, Container: c.Container, OwnerKind: c.OwnerKind, OwnerName: c.OwnerName,
			Cgroup: "/kubepods.slice/fake-" + c.Pod + "-" + c.Container}, LimitMilli: c.LimitMilli, RequestMilli: c.RequestMilli}
		if c.PodLevel {
			ac.Kind = agent.KindPod
		}
		if c.Demand == nil {
			ac.Why = "no samples yet"
			doc.Containers = append(doc.Containers, ac)
			continue
		}
		var lims []int64
		if c.LimitMilli > 0 {
			lims = []int64{c.LimitMilli}
		}
		a, err := advise.Advise(c.Demand, advise.Request{Target: target, Limits: lims, Options: advise.Options{Workers: 1}}, advise.Sampled{Source: "fake " + node})
		if err != nil {
			t.Fatalf("fake agent %s container %d: %v", node, i, err)
		}
		ac.Advice, ac.WindowSeconds = a, c.Demand.Duration().Seconds()
		for _, b := range a.Baselines {
			if b.Evaluation == nil {
				continue
			}
			switch b.Name {
			case "krr default":
				ac.KrrMilli = b.LimitMilli
			case "VPA target":
				ac.VPAMilli = b.LimitMilli
			}
		}
		if c.KrrMilli > 0 {
			ac.KrrMilli = c.KrrMilli
		}
		doc.Containers = append(doc.Containers, ac)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/advice", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, doc) })
	mux.HandleFunc("/evaluate", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		limit, _, err := units.ParseMilliCPU(q.Get("limit"))
		if err != nil {
			writeJSON(w, 400, map[string]string{"error": "limit: " + err.Error()})
			return
		}
		burst := int64(0)
		if b := q.Get("burst"); b != "" && b != "0" {
			if burst, _, err = units.ParseMilliCPU(b); err != nil {
				writeJSON(w, 400, map[string]string{"error": "burst: " + err.Error()})
				return
			}
		}
		for _, c := range cs {
			if c.Namespace != q.Get("namespace") || c.Pod != q.Get("pod") || c.Container != q.Get("container") {
				continue
			}
			if c.Demand == nil {
				writeJSON(w, 503, map[string]string{"error": "no demand yet"})
				return
			}
			evs, err := advise.Evaluate(c.Demand, []advise.Point{{LimitMilli: limit, BurstMilli: burst, Period: 100 * time.Millisecond}}, advise.Options{Workers: 1})
			if err != nil {
				writeJSON(w, 400, map[string]string{"error": err.Error()})
				return
			}
			writeJSON(w, 200, evs[0])
			return
		}
		writeJSON(w, 404, map[string]string{"error": "no container " + q.Get("namespace") + "/" + q.Get("pod") + "/" + q.Get("container")})
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// Dir is fleet/testdata/prometheus: the recorded responses.
func Dir() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "testdata", "prometheus")
}

// Prometheus serves the recorded responses: /api/v1/query answers by the
// namespace matcher of the query (none: query_all.json; shop:
// query_shop.json; any other: query_none.json; a query that does not end
// in "}" gets query_bad.json with HTTP 400, as Prometheus answered it), and
// /api/v1/targets answers targets.json with each recorded agent address
// (127.0.0.1:19101, :19102) in scrape URLs replaced by agents[address].
func Prometheus(t testing.TB, agents map[string]string) *httptest.Server {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(Dir(), name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	all, shop, none, bad, targets := read("query_all.json"), read("query_shop.json"), read("query_none.json"), read("query_bad.json"), string(read("targets.json"))
	for from, to := range agents {
		targets = strings.ReplaceAll(targets, `"scrapeUrl":"http://`+from+`/metrics"`, `"scrapeUrl":"`+to+`/metrics"`)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/query", func(w http.ResponseWriter, r *http.Request) {
		q := r.FormValue("query")
		w.Header().Set("Content-Type", "application/json")
		switch {
		case !strings.HasSuffix(q, "}"):
			w.WriteHeader(400)
			w.Write(bad)
		case strings.Contains(q, `namespace="shop"`):
			w.Write(shop)
		case strings.Contains(q, `namespace=`):
			w.Write(none)
		default:
			w.Write(all)
		}
	})
	mux.HandleFunc("/api/v1/targets", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(targets))
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// RecordedAgents are the containers behind the recorded Prometheus answers
// that a proposed limit off the exported ones is asked about: the
// StatefulSet db's replicas (node-a: 127.0.0.1:19101, node-b: :19102), and
// the checkout Deployment's app containers, with demand that a 2-CPU limit
// never throttles and 1 CPU does.
func RecordedAgents(t testing.TB) map[string]string {
	t.Helper()
	db := func(pod string, seed uint64) Container {
		return Container{Namespace: "shop", Pod: pod, Container: "postgres", OwnerKind: "StatefulSet", OwnerName: "db",
			LimitMilli: 2000, RequestMilli: 2000, Demand: Bursty(90, 0.4, 1.8, 200*time.Millisecond, seed)}
	}
	app := func(pod string, seed uint64) Container {
		return Container{Namespace: "shop", Pod: pod, Container: "app", OwnerKind: "ReplicaSet", OwnerName: "checkout-7d9f8c6b5d",
			LimitMilli: 500, RequestMilli: 250, Demand: Bursty(90, 0.1, 1.2, 100*time.Millisecond, seed)}
	}
	a := Agent(t, "node-a", []Container{db("db-0", 1), app("checkout-7d9f8c6b5d-abcde", 2)})
	b := Agent(t, "node-b", []Container{db("db-1", 3), app("checkout-7d9f8c6b5d-fghij", 4), app("checkout-7d9f8c6b5d-klmno", 5)})
	return map[string]string{"127.0.0.1:19101": a.URL, "127.0.0.1:19102": b.URL}
}
