package loadgen

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/throttlelab/throttlelab/servertiming"
)

// Response is what came back for one request.
type Response struct {
	Status   int
	Bytes    int64
	Instance string
	// Timing is the server's Server-Timing; Timing.Wall is -1 if absent.
	Timing servertiming.Timing
	// Body is kept only when the caller asked for it (to check tiles).
	Body []byte
	// ErrKind is empty on success, else one of the Err* kinds.
	ErrKind string
	Err     error
}

// Error kinds of a record.
const (
	ErrTimeout  = "timeout"
	ErrConnect  = "connect"
	ErrStatus   = "status"
	ErrBadTile  = "bad_tile"
	ErrCanceled = "canceled"
	ErrOther    = "other"
)

// Doer sends one request to a target. HTTPDoer is the real one; tests use fakes.
type Doer interface {
	Do(ctx context.Context, target int, req Request, keepBody bool) Response
}

// HTTPDoer sends requests over HTTP to a list of base URLs.
type HTTPDoer struct {
	Targets []string
	Client  *http.Client
}

// NewHTTPDoer returns a doer for the targets. With keepAlive, connections are
// reused (up to conns idle per target); without, every request opens its own.
func NewHTTPDoer(targets []string, conns int, keepAlive bool) *HTTPDoer {
	tr := &http.Transport{
		Proxy:               nil, // loopback experiments: never through a proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: max(conns, 2),
		IdleConnTimeout:     90 * time.Second,
		DisableKeepAlives:   !keepAlive,
		DisableCompression:  true,
	}
	return &HTTPDoer{Targets: targets, Client: &http.Client{Transport: tr}}
}

// Do implements Doer.
func (d *HTTPDoer) Do(ctx context.Context, target int, req Request, keepBody bool) Response {
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, d.Targets[target]+req.Path, nil)
	if err != nil {
		return Response{ErrKind: ErrOther, Err: err}
	}
	resp, err := d.Client.Do(hr)
	if err != nil {
		return Response{ErrKind: classify(ctx, err), Err: err}
	}
	defer resp.Body.Close()
	r := Response{Status: resp.StatusCode, Instance: resp.Header.Get("X-Instance")}
	if keepBody {
		r.Body, err = io.ReadAll(resp.Body)
		r.Bytes = int64(len(r.Body))
	} else {
		r.Bytes, err = io.Copy(io.Discard, resp.Body)
	}
	if err != nil {
		r.ErrKind, r.Err = classify(ctx, err), err
		return r
	}
	r.Timing = servertiming.Timing{Queue: -1, CPU: -1, Wall: -1}
	if h := resp.Header.Get("Server-Timing"); h != "" {
		if t, err := servertiming.Parse(h); err == nil {
			r.Timing = t
		}
	}
	if resp.StatusCode != http.StatusOK {
		r.ErrKind = ErrStatus
		r.Err = errors.New(resp.Status)
	}
	return r
}

// classify names what went wrong with a request.
func classify(ctx context.Context, err error) string {
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return ErrTimeout
	case errors.As(err, &ne) && ne.Timeout():
		return ErrTimeout
	case errors.Is(ctx.Err(), context.Canceled), errors.Is(err, context.Canceled):
		return ErrCanceled
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), strings.Contains(err.Error(), "dial"):
		return ErrConnect
	}
	return ErrOther
}
