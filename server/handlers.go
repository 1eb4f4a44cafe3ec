package server

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/throttlelab/throttlelab/units"
	"github.com/throttlelab/throttlelab/workload"
)

// A job is the CPU work of one request. It runs on a locked OS thread and fills in
// its response; the server measures the thread's CPU time around it.
type job struct {
	endpoint string
	run      func(*response)
	arrival  time.Time
	// Set by whoever runs the job.
	resp    response
	started time.Time
	cpu     time.Duration
	done    chan struct{}
	// cancelled is set (under the queue's discipline: before the worker picks the
	// job) when the client gave up while the job was queued.
	cancelled atomic.Bool
}

type response struct {
	contentType string
	headers     map[string]string
	body        []byte
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/tile", s.getOnly(s.handleTile))
	mux.HandleFunc("/burn", s.getOnly(s.handleBurn))
	mux.HandleFunc("/api", s.getOnly(s.handleAPI))
	mux.HandleFunc("/healthz", s.getOnly(s.handleHealthz))
	mux.HandleFunc("/info", s.getOnly(s.handleInfo))
	s.registerCgroup(mux)
	metrics := promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{})
	mux.HandleFunc("/metrics", s.getOnly(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Instance", s.cfg.Name)
		metrics.ServeHTTP(w, r)
	}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, "other", http.StatusNotFound, fmt.Sprintf("no endpoint %q: try /tile, /burn, /api, /healthz, /metrics or /info", r.URL.Path))
	})
	return mux
}

func (s *Server) getOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			s.fail(w, r, "other", http.StatusMethodNotAllowed, fmt.Sprintf("method %q not allowed on %q: use GET", r.Method, r.URL.Path))
			return
		}
		h(w, r)
	}
}

// fail answers with a one-line plain-text reason.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, endpoint string, code int, reason string) {
	w.Header().Set("X-Instance", s.cfg.Name)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintln(w, reason)
	s.metrics.count(endpoint, code)
}

// query parses a request's query string, allowing only the given parameters,
// each at most once; path names the endpoint in errors.
func query(rawQuery, path string, allowed ...string) (url.Values, error) {
	if rawQuery == "" {
		return nil, nil
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, fmt.Errorf("malformed query: %v", err)
	}
	for k, v := range q {
		if !slices.Contains(allowed, k) {
			return nil, fmt.Errorf("unknown parameter %q: %s takes %v", k, path, allowed)
		}
		if len(v) > 1 {
			return nil, fmt.Errorf("parameter %q given %d times", k, len(v))
		}
	}
	return q, nil
}

func intParam(q url.Values, name string) (int, error) {
	v := q.Get(name)
	if v == "" {
		return 0, fmt.Errorf("missing parameter %s", name)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("parameter %s=%q is not an integer", name, v)
	}
	return n, nil
}

// tileQuery parses /tile's query: x and y, each given once, in range.
func tileQuery(rawQuery string) (workload.Tile, error) {
	q, err := query(rawQuery, "/tile", "x", "y")
	var t workload.Tile
	if err == nil {
		t.X, err = intParam(q, "x")
	}
	if err == nil {
		t.Y, err = intParam(q, "y")
	}
	if err == nil {
		err = workload.CheckTile(t)
	}
	return t, err
}

// burnQuery parses /burn's query, iterations=N or cpu=DURATION, into a
// number of iterations of at most maxCPU's worth under the calibration.
func burnQuery(rawQuery string, cal workload.BurnCalibration, maxCPU time.Duration) (uint64, error) {
	q, err := query(rawQuery, "/burn", "iterations", "cpu")
	if err != nil {
		return 0, err
	}
	maxIter := cal.Iterations(maxCPU)
	switch it, cpu := q.Get("iterations"), q.Get("cpu"); {
	case it != "" && cpu != "":
		return 0, fmt.Errorf("give iterations or cpu, not both")
	case it != "":
		n, err := strconv.ParseUint(it, 10, 64)
		if err != nil || n == 0 {
			return 0, fmt.Errorf("iterations=%q: want a positive integer", it)
		}
		if n > maxIter {
			return 0, fmt.Errorf("iterations=%d is over the limit of %d (%s of CPU per request)", n, maxIter, maxCPU)
		}
		return n, nil
	case cpu != "":
		d, err := units.ParseDuration(cpu)
		if err != nil {
			return 0, fmt.Errorf("cpu=%v", err)
		}
		if d <= 0 {
			return 0, fmt.Errorf("cpu=%s: want a positive duration such as 5ms", d)
		}
		if d > maxCPU {
			return 0, fmt.Errorf("cpu=%s is over the limit of %s per request", d, maxCPU)
		}
		return max(cal.Iterations(d), 1), nil
	default:
		return 0, fmt.Errorf("missing parameter: give iterations=N or cpu=DURATION")
	}
}

// pixPool holds *[]byte, not []byte: a slice put in an interface is
// allocated on every Put.
var pixPool = sync.Pool{New: func() any { b := make([]byte, workload.TilePixels); return &b }}

type pngPool struct{ p sync.Pool }

func (p *pngPool) Get() *png.EncoderBuffer {
	b, _ := p.p.Get().(*png.EncoderBuffer)
	return b
}
func (p *pngPool) Put(b *png.EncoderBuffer) { p.p.Put(b) }

var pngEncoder = png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: &pngPool{}}

func (s *Server) handleTile(w http.ResponseWriter, r *http.Request) {
	arrival := time.Now()
	t, err := tileQuery(r.URL.RawQuery)
	if err != nil {
		s.fail(w, r, "tile", http.StatusBadRequest, "bad request: "+err.Error())
		return
	}
	s.serveJob(w, r, newJob("tile", arrival, func(out *response) {
		pp := pixPool.Get().(*[]byte)
		defer pixPool.Put(pp)
		pix, iters := workload.RenderTile(t, *pp)
		h := workload.HashPixels(pix)
		img := &image.Gray{Pix: pix, Stride: workload.TileSize, Rect: image.Rect(0, 0, workload.TileSize, workload.TileSize)}
		var buf bytes.Buffer
		buf.Grow(16 << 10)
		if err := pngEncoder.Encode(&buf, img); err != nil {
			// Encoding into memory cannot fail for a valid image.
			panic(err)
		}
		out.contentType = "image/png"
		out.body = buf.Bytes()
		out.headers = map[string]string{
			"X-Tile":            t.String(),
			"X-Tile-Iterations": strconv.FormatUint(iters, 10),
			"X-Tile-Sha256":     hex.EncodeToString(h[:]),
		}
	}))
}

func (s *Server) handleBurn(w http.ResponseWriter, r *http.Request) {
	arrival := time.Now()
	n, err := burnQuery(r.URL.RawQuery, s.cfg.Burn, s.cfg.MaxCPU)
	if err != nil {
		s.fail(w, r, "burn", http.StatusBadRequest, "bad request: "+err.Error())
		return
	}
	s.serveJob(w, r, newJob("burn", arrival, func(out *response) {
		x := workload.Burn(n)
		out.contentType = "application/json"
		out.body = fmt.Appendf(nil, "{\"iterations\":%d,\"result\":%d}\n", n, x)
	}))
}

var apiBody = []byte("{\"ok\":true}\n")

func (s *Server) handleAPI(w http.ResponseWriter, r *http.Request) {
	arrival := time.Now()
	if _, err := query(r.URL.RawQuery, r.URL.Path); err != nil {
		s.fail(w, r, "api", http.StatusBadRequest, "bad request: "+err.Error())
		return
	}
	s.serveJob(w, r, newJob("api", arrival, func(out *response) {
		out.contentType = "application/json"
		out.body = apiBody
	}))
}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Instance", s.cfg.Name)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "ok")
	s.metrics.count("healthz", http.StatusOK)
}

// InfoResponse is the body of GET /info.
type InfoResponse struct {
	Name              string                   `json:"name"`
	Concurrency       Concurrency              `json:"concurrency"`
	CPUClock          bool                     `json:"cpu_clock"`
	MaxInflight       int                      `json:"max_inflight"`
	MaxCPUMs          float64                  `json:"max_request_cpu_ms"`
	Burn              workload.BurnCalibration `json:"burn_calibration"`
	Tiles             map[string]any           `json:"tiles"`
	PID               int                      `json:"pid"`
	UptimeSec         float64                  `json:"uptime_sec"`
	InFlight          int64                    `json:"in_flight"`
	RuntimeGOMAXPROCS int                      `json:"runtime_gomaxprocs"`
	// Cgroup is the server's own group as it measures it (see /cgroup).
	Cgroup *CgroupStatus `json:"cgroup,omitempty"`
	Info
}

func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) {
	resp := InfoResponse{
		Name:              s.cfg.Name,
		Concurrency:       s.cfg.Concurrency,
		CPUClock:          !s.cfg.SkipCPUClock,
		MaxInflight:       s.cfg.MaxInflight,
		MaxCPUMs:          float64(s.cfg.MaxCPU) / float64(time.Millisecond),
		Burn:              s.cfg.Burn,
		Tiles:             map[string]any{"kernel": workload.KernelVersion, "max_iter": workload.MaxIter, "tiles_x": workload.TilesX, "tiles_y": workload.TilesY, "tile_size": workload.TileSize},
		PID:               pid,
		UptimeSec:         time.Since(s.started).Seconds(),
		InFlight:          s.inflight.Load(),
		RuntimeGOMAXPROCS: runtime.GOMAXPROCS(0),
		Info:              s.cfg.Info,
		Cgroup:            s.cgroupStatus(),
	}
	w.Header().Set("X-Instance", s.cfg.Name)
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(resp)
	s.metrics.count("info", http.StatusOK)
}
