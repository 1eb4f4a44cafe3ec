package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/throttlelab/throttlelab/servertiming"
)

// HTTPDoer sends GET requests over HTTP/1.1 to a list of base URLs with a
// client of its own: per target a pool of keep-alive connections, each with
// one reused read buffer, the request line written from a reused buffer, and
// only what a record needs read from the response (status, Content-Length or
// chunked framing, Connection, X-Instance, Server-Timing). net/http's client
// spends about twice as much CPU per request on a trivial response (two
// goroutines per connection, a header map, a context per request), which made
// the load generator, not the server, the bottleneck of a one-core
// benchmark.
//
// Like net/http, a request that fails on a reused connection before any byte
// of the response arrived (the server closed the idle connection, or
// restarted) is sent once more on a new connection: GET is idempotent, and
// the record's start is still the first attempt's.
type HTTPDoer struct {
	// Targets are the base URLs, "http://host:port" (a path prefix is kept).
	Targets []string

	targets   []httpTarget
	keepAlive bool
	maxIdle   int
	dialer    net.Dialer

	mu     sync.Mutex
	idle   [][]*clientConn // per target
	closed bool            // Close was called: connections are not kept
}

type httpTarget struct {
	addr   string // host:port to dial
	prefix string // path prefix of the base URL
	host   string // Host header
	err    error  // a base URL that cannot be used
}

// clientConn is one connection with its reused buffers.
type clientConn struct {
	nc     net.Conn
	br     *bufio.Reader
	wbuf   []byte
	reused bool   // has carried a request before
	inst   string // the last X-Instance seen, to reuse its string
	// The context whose end unblocks this connection, by its Done channel: a
	// run's requests share one, so it is watched once per connection, not once
	// per request.
	watched   <-chan struct{}
	stopWatch func() bool
}

// close closes the connection and stops watching its context.
func (c *clientConn) close() {
	if c.stopWatch != nil {
		c.stopWatch()
	}
	c.nc.Close()
}

// watch makes ctx's end unblock the connection's reads and writes. It
// reports false if the connection may already have been unblocked for another
// context (it must not be used then).
func (c *clientConn) watch(ctx context.Context) bool {
	done := ctx.Done()
	if done == c.watched {
		return true
	}
	if c.stopWatch != nil && !c.stopWatch() {
		return false
	}
	c.watched, c.stopWatch = done, nil
	if done != nil {
		nc := c.nc
		c.stopWatch = context.AfterFunc(ctx, func() { nc.SetDeadline(aLongTimeAgo) })
	}
	return true
}

// maxHeaderLine bounds one status or header line: longer is a malformed
// response (the read buffer is its size).
const maxHeaderLine = 8 << 10

// NewHTTPDoer returns a doer for the targets. With keepAlive, connections are
// reused (up to conns idle per target); without, every request opens its own
// and asks the server to close it.
func NewHTTPDoer(targets []string, conns int, keepAlive bool) *HTTPDoer {
	d := &HTTPDoer{
		Targets:   targets,
		keepAlive: keepAlive,
		maxIdle:   max(conns, 2),
		dialer:    net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second},
		idle:      make([][]*clientConn, len(targets)),
	}
	for _, t := range targets {
		d.targets = append(d.targets, parseTarget(t))
	}
	return d
}

func parseTarget(base string) httpTarget {
	u, err := url.Parse(base)
	if err != nil {
		return httpTarget{err: fmt.Errorf("target %q: %w", base, err)}
	}
	if u.Scheme != "http" || u.Host == "" {
		return httpTarget{err: fmt.Errorf("target %q: want http://HOST:PORT (plain HTTP only)", base)}
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	prefix := u.EscapedPath()
	for len(prefix) > 0 && prefix[len(prefix)-1] == '/' {
		prefix = prefix[:len(prefix)-1]
	}
	return httpTarget{addr: addr, prefix: prefix, host: u.Host}
}

// Close closes the idle connections, and those of requests still in flight
// once they end.
func (d *HTTPDoer) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	for i, conns := range d.idle {
		for _, c := range conns {
			c.close()
		}
		d.idle[i] = nil
	}
}

func (d *HTTPDoer) get(target int) *clientConn {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n := len(d.idle[target]); n > 0 {
		c := d.idle[target][n-1]
		d.idle[target][n-1] = nil
		d.idle[target] = d.idle[target][:n-1]
		return c
	}
	return nil
}

func (d *HTTPDoer) put(target int, c *clientConn) {
	c.reused = true
	d.mu.Lock()
	if !d.closed && len(d.idle[target]) < d.maxIdle {
		d.idle[target] = append(d.idle[target], c)
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	c.close()
}

func (d *HTTPDoer) dial(ctx context.Context, target int) (*clientConn, error) {
	nc, err := d.dialer.DialContext(ctx, "tcp", d.targets[target].addr)
	if err != nil {
		return nil, err
	}
	return &clientConn{nc: nc, br: bufio.NewReaderSize(nc, maxHeaderLine), wbuf: make([]byte, 0, 256)}, nil
}

// aLongTimeAgo is a deadline in the past: setting it unblocks any read or write.
var aLongTimeAgo = time.Unix(1, 0)

// Do implements Doer.
func (d *HTTPDoer) Do(ctx context.Context, deadline time.Time, target int, req Request, keepBody bool) Response {
	t := &d.targets[target]
	if t.err != nil {
		return Response{ErrKind: ErrOther, Err: t.err}
	}
	if err := ctx.Err(); err != nil {
		return Response{ErrKind: ctxKind(err), Err: err}
	}
	for attempt := 0; ; attempt++ {
		var c *clientConn
		if attempt == 0 {
			c = d.get(target) // a retry dials: the other idle ones may be stale too
		}
		if c != nil && !c.watch(ctx) {
			c.close()
			c = nil
		}
		if c == nil {
			dctx, cancel := ctx, context.CancelFunc(nil)
			if !deadline.IsZero() {
				dctx, cancel = context.WithDeadline(ctx, deadline)
			}
			var err error
			c, err = d.dial(dctx, target)
			if err != nil {
				kind := classify(dctx, err)
				if cancel != nil {
					cancel()
				}
				return Response{ErrKind: kind, Err: fmt.Errorf("connecting to %s: %w", t.addr, err)}
			}
			if cancel != nil {
				cancel()
			}
			c.watch(ctx)
		}
		r, keep, retry := d.roundTrip(ctx, deadline, c, t, req, keepBody)
		if keep {
			d.put(target, c)
		} else {
			c.close()
		}
		if !retry || attempt > 0 || ctx.Err() != nil {
			return r
		}
	}
}

// roundTrip sends req on c and reads the response. keep reports whether c can
// carry another request; retry, whether the request failed on a reused
// connection before anything of the response arrived.
func (d *HTTPDoer) roundTrip(ctx context.Context, deadline time.Time, c *clientConn, t *httpTarget, req Request, keepBody bool) (r Response, keep, retry bool) {
	c.nc.SetDeadline(deadline)
	if ctx.Err() != nil {
		// Ended just now: the watcher may have run before the deadline was set.
		return fail(ctx, Response{}, ctx.Err()), false, false
	}
	b := append(c.wbuf[:0], "GET "...)
	b = append(b, t.prefix...)
	b = append(b, req.Path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, t.host...)
	b = append(b, "\r\nUser-Agent: throttlelab\r\n"...)
	if !d.keepAlive {
		b = append(b, "Connection: close\r\n"...)
	}
	b = append(b, "\r\n"...)
	c.wbuf = b
	if _, err := c.nc.Write(b); err != nil {
		return fail(ctx, Response{}, err), false, c.reused && isReset(err)
	}
	r, keep, err := c.readResponse(keepBody)
	if err != nil {
		// Nothing arrived on a reused connection: the server had closed it.
		return fail(ctx, r, err), false, c.reused && r.Status == 0 && c.br.Buffered() == 0 && isReset(err)
	}
	return r, keep && d.keepAlive, false
}

// fail marks r, what had arrived of a response (status and bytes), as failed
// with a transport error.
func fail(ctx context.Context, r Response, err error) Response {
	r.ErrKind, r.Err = classify(ctx, err), err
	r.Body = nil
	if r.Status == 0 {
		r.Timing = servertiming.Timing{Queue: -1, CPU: -1, Wall: -1}
	}
	return r
}

// isReset reports whether err is what a connection the server closed gives.
func isReset(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, errNoStatus)
}

func ctxKind(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return ErrTimeout
	}
	return ErrCanceled
}

var (
	errNoStatus  = errors.New("connection closed before a response arrived")
	errMalformed = errors.New("malformed HTTP response")
)

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errMalformed, fmt.Sprintf(format, args...))
}

// readResponse reads one response. keep reports whether the connection can be
// reused (the body was framed and the server did not ask to close). On an
// error r.Status is set if the status line had arrived.
func (c *clientConn) readResponse(keepBody bool) (r Response, keep bool, err error) {
	r.Timing = servertiming.Timing{Queue: -1, CPU: -1, Wall: -1}
	var (
		contentLength       int64 = -1
		chunked, closeConn  bool
		http10              bool
		timingSeen, instSet bool
	)
	for {
		line, err := c.readLine()
		if err != nil {
			if err == io.EOF {
				err = errNoStatus
			}
			return r, false, err
		}
		// "HTTP/1.1 200 OK"
		if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' || (len(line) > 12 && line[12] != ' ') {
			return r, false, malformed("status line %q", line)
		}
		status := 0
		for _, ch := range line[9:12] {
			if ch < '0' || ch > '9' {
				return r, false, malformed("status line %q", line)
			}
			status = status*10 + int(ch-'0')
		}
		if status < 100 {
			return r, false, malformed("status line %q", line)
		}
		http10 = line[7] == '0'
		if status >= 200 || status == 101 {
			r.Status = status
			break
		}
		// An informational response (103 Early Hints): its headers, then the real one.
		if err := c.skipHeaders(); err != nil {
			return r, false, err
		}
	}
	for {
		line, err := c.readLine()
		if err != nil {
			return r, false, unexpectedEOF(err)
		}
		if len(line) == 0 {
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return r, false, malformed("header line %q", line)
		}
		name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
		switch {
		case equalFold(name, "content-length"):
			n, perr := strconv.ParseInt(string(value), 10, 64)
			if perr != nil || n < 0 || (contentLength >= 0 && n != contentLength) {
				return r, false, malformed("Content-Length %q", value)
			}
			contentLength = n
		case equalFold(name, "transfer-encoding"):
			if !equalFold(value, "chunked") {
				return r, false, malformed("Transfer-Encoding %q: only chunked is understood", value)
			}
			chunked = true
		case equalFold(name, "connection"):
			closeConn = closeConn || containsToken(value, "close")
		case equalFold(name, "x-instance"):
			if !instSet {
				instSet = true
				if string(value) != c.inst { // compared without allocating
					c.inst = string(value)
				}
				r.Instance = c.inst
			}
		case equalFold(name, "server-timing"):
			if !timingSeen {
				timingSeen = true
				// The string lives only for the call: Parse keeps no reference
				// to it (its errors copy it), and the buffer is not read meanwhile.
				if tm, perr := servertiming.Parse(unsafe.String(unsafe.SliceData(value), len(value))); perr == nil {
					r.Timing = tm
				}
			}
		}
	}
	keep = !closeConn && !http10
	noBody := r.Status == 204 || r.Status == 304 || r.Status < 200
	switch {
	case noBody:
	case chunked:
		err = c.readChunked(&r, keepBody)
	case contentLength >= 0:
		err = c.readBody(&r, contentLength, keepBody)
	default:
		// No framing: the body runs to the end of the connection.
		keep = false
		err = c.readToEOF(&r, keepBody)
	}
	if err != nil {
		return r, false, err
	}
	if r.Status != 200 {
		r.ErrKind = ErrStatus
		r.Err = fmt.Errorf("HTTP status %d", r.Status)
	}
	return r, keep, nil
}

// readLine returns the next line without its CRLF (or LF). The slice is valid
// until the next read.
func (c *clientConn) readLine() ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, malformed("a header line longer than %d bytes", maxHeaderLine)
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

func (c *clientConn) skipHeaders() error {
	for {
		line, err := c.readLine()
		if err != nil {
			return unexpectedEOF(err)
		}
		if len(line) == 0 {
			return nil
		}
	}
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (c *clientConn) readBody(r *Response, n int64, keepBody bool) error {
	if keepBody {
		if n > maxKeptBody {
			return malformed("Content-Length %d: a body to keep may have at most %d bytes", n, maxKeptBody)
		}
		start := len(r.Body)
		r.Body = append(r.Body, make([]byte, n)...)
		got, err := io.ReadFull(c.br, r.Body[start:])
		r.Bytes += int64(got)
		return unexpectedEOF(err)
	}
	got, err := c.br.Discard(int(n))
	r.Bytes += int64(got)
	return unexpectedEOF(err)
}

// maxKeptBody bounds a body kept in memory (a tile PNG is a few kB).
const maxKeptBody = 64 << 20

func (c *clientConn) readChunked(r *Response, keepBody bool) error {
	for {
		line, err := c.readLine()
		if err != nil {
			return unexpectedEOF(err)
		}
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i] // a chunk extension
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 || len(line) > 15 {
			return malformed("chunk size %q", line)
		}
		var n int64
		for _, ch := range line {
			var v byte
			switch {
			case ch >= '0' && ch <= '9':
				v = ch - '0'
			case ch >= 'a' && ch <= 'f':
				v = ch - 'a' + 10
			case ch >= 'A' && ch <= 'F':
				v = ch - 'A' + 10
			default:
				return malformed("chunk size %q", line)
			}
			n = n<<4 | int64(v)
		}
		if n == 0 {
			return c.skipHeaders() // trailers
		}
		if keepBody && int64(len(r.Body))+n > maxKeptBody {
			return malformed("chunked body over %d bytes", maxKeptBody)
		}
		if err := c.readBody(r, n, keepBody); err != nil {
			return err
		}
		crlf, err := c.readLine()
		if err != nil {
			return unexpectedEOF(err)
		}
		if len(crlf) != 0 {
			return malformed("chunk of %d bytes not followed by CRLF", n)
		}
	}
}

func (c *clientConn) readToEOF(r *Response, keepBody bool) error {
	var err error
	if keepBody {
		r.Body, err = io.ReadAll(io.LimitReader(c.br, maxKeptBody+1))
		r.Bytes = int64(len(r.Body))
		if err == nil && r.Bytes > maxKeptBody {
			return malformed("body over %d bytes", maxKeptBody)
		}
		return err
	}
	r.Bytes, err = io.Copy(io.Discard, c.br)
	return err
}

// equalFold reports whether b equals the lower-case ASCII s, ignoring case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		ch := b[i]
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		if ch != s[i] {
			return false
		}
	}
	return true
}

// containsToken reports whether the comma-separated list v holds token
// (lower case), ignoring case.
func containsToken(v []byte, token string) bool {
	for len(v) > 0 {
		var item []byte
		if i := bytes.IndexByte(v, ','); i >= 0 {
			item, v = v[:i], v[i+1:]
		} else {
			item, v = v, nil
		}
		if equalFold(bytes.TrimSpace(item), token) {
			return true
		}
	}
	return false
}

// classify names what went wrong with a request.
func classify(ctx context.Context, err error) string {
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.Canceled), errors.Is(err, context.Canceled):
		return ErrCanceled
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return ErrTimeout
	case errors.As(err, &ne) && ne.Timeout():
		return ErrTimeout
	case errors.Is(err, errMalformed):
		return ErrOther
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, errNoStatus):
		return ErrConnect
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return ErrConnect
	}
	return ErrOther
}
