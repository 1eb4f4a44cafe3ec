package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// fleetResponse is the recorded query_all.json grown to n containers: its
// containers copied with the pod and owner names numbered, each copy its
// own workload (so grouping, too, works on n rows).
func fleetResponse(b *testing.B, n int) ([]byte, int) {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "prometheus", "query_all.json"))
	if err != nil {
		b.Fatal(err)
	}
	var rec struct {
		Status string `json:"status"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  []any             `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		b.Fatal(err)
	}
	perCopy := map[string]bool{}
	for _, r := range rec.Data.Result {
		perCopy[r.Metric["namespace"]+"/"+r.Metric["pod"]+"/"+r.Metric["container"]] = true
	}
	copies := (n + len(perCopy) - 1) / len(perCopy)
	out := rec
	out.Data.Result = nil
	for i := 0; i < copies; i++ {
		for _, r := range rec.Data.Result {
			m := make(map[string]string, len(r.Metric))
			for k, v := range r.Metric {
				m[k] = v
			}
			m["pod"] = fmt.Sprintf("%s-%d", m["pod"], i)
			if m["owner_name"] != "" {
				m["owner_name"] = fmt.Sprintf("w%d-%s", i, m["owner_name"])
			}
			out.Data.Result = append(out.Data.Result, struct {
				Metric map[string]string `json:"metric"`
				Value  []any             `json:"value"`
			}{m, r.Value})
		}
	}
	body, err := json.Marshal(out)
	if err != nil {
		b.Fatal(err)
	}
	return body, copies * len(perCopy)
}

// BenchmarkAdvisePrometheus10k is advise --prometheus over 10 000
// containers from a test server (the whole path: HTTP, decode, join,
// group, table), beside its reference, the JSON decode of the same answer
// alone. It reports the time per container and the ratio of the two.
func BenchmarkAdvisePrometheus10k(b *testing.B) {
	body, n := fleetResponse(b, 10000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	defer srv.Close()
	ctx := context.Background()
	var ref, full float64
	b.Run("decode-only", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var pr promResponse
			if err := json.NewDecoder(bytes.NewReader(body)).Decode(&pr); err != nil {
				b.Fatal(err)
			}
			var v vectorData
			if err := json.Unmarshal(pr.Data, &v); err != nil {
				b.Fatal(err)
			}
		}
		ref = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("advise", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			cs, err := FromPrometheus(ctx, http.DefaultClient, srv.URL, PromOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if len(cs) != n {
				b.Fatalf("%d containers, want %d", len(cs), n)
			}
			if err := WriteTable(io.Discard, Group(cs)); err != nil {
				b.Fatal(err)
			}
		}
		full = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(full/float64(n), "ns/container")
	})
	if ref > 0 && full > 0 {
		b.Logf("%d containers, %d series, %.1f MB: advise %.0f ms (%.1f us/container), the decode alone %.0f ms: ratio %.2f",
			n, bytes.Count(body, []byte(`"metric"`)), float64(len(body))/1e6, full/1e6, full/float64(n)/1e3, ref/1e6, full/ref)
	}
}
