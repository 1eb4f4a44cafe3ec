package loadgen

import (
	"context"
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

// Doer sends one request to a target. HTTPDoer (httpclient.go) is the real
// one; tests use fakes.
//
// Do gives up at deadline (ErrTimeout; the zero time means never) or when ctx
// ends (ErrCanceled). The deadline travels apart from ctx so that the hot path
// needs no context per request: a run's requests share one context.
type Doer interface {
	Do(ctx context.Context, deadline time.Time, target int, req Request, keepBody bool) Response
}
