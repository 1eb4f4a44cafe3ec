package loadgen

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// farFuture is a deadline no test reaches.
func farFuture() time.Time { return time.Now().Add(time.Minute) }

// TestHTTPDoerAgainstNetHTTP sends requests to a real net/http server that
// frames its answers each way HTTP/1.1 allows, and checks what the doer makes
// of them, request after request on the same connections.
func TestHTTPDoerAgainstNetHTTP(t *testing.T) {
	big := strings.Repeat("x", 100_000)
	var conns sync.Map // remote addresses the server saw
	mux := http.NewServeMux()
	mux.HandleFunc("/length", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Instance", "a")
		w.Header().Set("Server-Timing", "queue;dur=0.5, cpu;dur=1, wall;dur=2")
		w.Header().Set("Content-Length", "5")
		io.WriteString(w, "hello")
	})
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Instance", "b")
		io.WriteString(w, big[:50_000])
		w.(http.Flusher).Flush() // no Content-Length: chunked
		io.WriteString(w, big[50_000:])
	})
	mux.HandleFunc("/close", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "bye")
	})
	mux.HandleFunc("/empty", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusInternalServerError) })
	mux.HandleFunc("/path", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.URL.RequestURI()+" "+r.Host) })
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Store(c.RemoteAddr().String(), true)
		}
	}
	srv.Start()
	defer srv.Close()

	d := NewHTTPDoer([]string{srv.URL, srv.URL + "/base/"}, 4, true)
	defer d.Close()
	ctx := context.Background()
	tests := []struct {
		path     string
		target   int
		keepBody bool
		want     Response
		body     string
	}{
		{"/length", 0, false, Response{Status: 200, Bytes: 5, Instance: "a"}, ""},
		{"/length", 0, true, Response{Status: 200, Bytes: 5, Instance: "a"}, "hello"},
		{"/chunked", 0, false, Response{Status: 200, Bytes: int64(len(big)), Instance: "b"}, ""},
		{"/chunked", 0, true, Response{Status: 200, Bytes: int64(len(big)), Instance: "b"}, big},
		{"/close", 0, false, Response{Status: 200, Bytes: 3}, ""},
		{"/empty", 0, false, Response{Status: 204, ErrKind: ErrStatus}, ""},
		{"/fail", 0, false, Response{Status: 500, Bytes: 3, ErrKind: ErrStatus}, ""},
		{"/path?x=1&y=2", 0, true, Response{Status: 200}, "/path?x=1&y=2 " + strings.TrimPrefix(srv.URL, "http://")},
		{"/length", 1, false, Response{Status: 404, Bytes: 19, ErrKind: ErrStatus}, ""}, // /base/length
	}
	for round := 0; round < 3; round++ {
		for _, tt := range tests {
			got := d.Do(ctx, farFuture(), tt.target, Request{Path: tt.path}, tt.keepBody)
			if tt.path == "/path?x=1&y=2" {
				tt.want.Bytes = int64(len(tt.body))
			}
			if got.Status != tt.want.Status || got.Bytes != tt.want.Bytes || got.Instance != tt.want.Instance || got.ErrKind != tt.want.ErrKind {
				t.Errorf("round %d %s: got status %d, %d bytes, instance %q, error %q (%v); want %d, %d, %q, %q",
					round, tt.path, got.Status, got.Bytes, got.Instance, got.ErrKind, got.Err, tt.want.Status, tt.want.Bytes, tt.want.Instance, tt.want.ErrKind)
			}
			if tt.keepBody && string(got.Body) != tt.body {
				t.Errorf("%s: body of %d bytes, want %d", tt.path, len(got.Body), len(tt.body))
			}
			if tt.path == "/length" && tt.target == 0 && (got.Timing.Queue != 500*time.Microsecond || got.Timing.CPU != time.Millisecond || got.Timing.Wall != 2*time.Millisecond) {
				t.Errorf("/length: timing %+v, want 0.5, 1, 2 ms", got.Timing)
			}
			if tt.path == "/chunked" && got.Timing.Wall != -1 {
				t.Errorf("/chunked: no Server-Timing, but timing %+v", got.Timing)
			}
		}
	}
	// Keep-alive: 27 requests, of which 3 on connections the server closed.
	n := 0
	conns.Range(func(any, any) bool { n++; return true })
	if n < 3 || n > 6 {
		t.Errorf("the server saw %d connections for 27 requests (3 of them Connection: close), want 3 to 6", n)
	}
}

// TestHTTPDoerNewConnection: without keep-alive every request has a
// connection of its own, and asks the server to close it.
func TestHTTPDoerNewConnection(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.RemoteAddr] = true
		mu.Unlock()
		if !r.Close {
			t.Error("request without Connection: close")
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	d := NewHTTPDoer([]string{srv.URL}, 4, false)
	defer d.Close()
	for i := 0; i < 5; i++ {
		if r := d.Do(context.Background(), farFuture(), 0, Request{Path: "/"}, false); r.ErrKind != "" {
			t.Fatal(r.Err)
		}
	}
	if len(seen) != 5 {
		t.Errorf("5 requests came on %d connections, want 5", len(seen))
	}
}

// TestHTTPDoerServerRestart: connections kept alive to a server that went
// away fail over to new ones once it is back; while it is away, requests
// fail as connect errors.
func TestHTTPDoerServerRestart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	srv := &http.Server{Handler: handler}
	go srv.Serve(ln)
	d := NewHTTPDoer([]string{"http://" + addr}, 4, true)
	defer d.Close()
	ctx := context.Background()
	// Two connections in the pool.
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := d.Do(ctx, farFuture(), 0, Request{Path: "/"}, false); r.ErrKind != "" {
				t.Error(r.Err)
			}
		}()
	}
	wg.Wait()
	srv.Close() // closes the kept-alive connections too
	if r := d.Do(ctx, farFuture(), 0, Request{Path: "/"}, false); r.ErrKind != ErrConnect {
		t.Errorf("server down: error %q (%v), want %q", r.ErrKind, r.Err, ErrConnect)
	}
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	srv2 := &http.Server{Handler: handler}
	go srv2.Serve(ln2)
	defer srv2.Close()
	for i := 0; i < 4; i++ {
		if r := d.Do(ctx, farFuture(), 0, Request{Path: "/"}, false); r.ErrKind != "" || r.Status != 200 {
			t.Errorf("request %d after the restart: status %d, error %q (%v)", i, r.Status, r.ErrKind, r.Err)
		}
	}
}

// TestHTTPDoerStaleConnection: a kept-alive connection the server closed
// while idle is replaced, invisibly, as net/http does.
func TestHTTPDoerStaleConnection(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	srv.Config.IdleTimeout = time.Nanosecond // closes every connection once idle
	srv.Start()
	defer srv.Close()
	d := NewHTTPDoer([]string{srv.URL}, 4, true)
	defer d.Close()
	for i := 0; i < 20; i++ {
		if r := d.Do(context.Background(), farFuture(), 0, Request{Path: "/"}, false); r.ErrKind != "" {
			t.Fatalf("request %d: %q %v", i, r.ErrKind, r.Err)
		}
	}
}

// TestHTTPDoerSlowAndCancelled: a response slower than the deadline is a
// timeout, one cut short by the context is cancelled, and the connection
// pool survives both.
func TestHTTPDoerSlowAndCancelled(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	defer close(release)
	d := NewHTTPDoer([]string{srv.URL}, 4, true)
	defer d.Close()

	r := d.Do(context.Background(), time.Now().Add(50*time.Millisecond), 0, Request{Path: "/slow"}, false)
	if r.ErrKind != ErrTimeout {
		t.Errorf("slow response: error %q (%v), want %q", r.ErrKind, r.Err, ErrTimeout)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Response)
	go func() { done <- d.Do(ctx, farFuture(), 0, Request{Path: "/slow"}, false) }()
	// Cancel once the request is in the server's hands... or before: either
	// way it must end as cancelled.
	cancel()
	if r := <-done; r.ErrKind != ErrCanceled {
		t.Errorf("cancelled request: error %q (%v), want %q", r.ErrKind, r.Err, ErrCanceled)
	}
	if r := d.Do(context.Background(), farFuture(), 0, Request{Path: "/fast"}, false); r.ErrKind != "" {
		t.Errorf("after a timeout and a cancellation: %q %v", r.ErrKind, r.Err)
	}
}

// TestHTTPDoerCancelInFlight: cancelling the shared context ends a request
// the server is sitting on.
func TestHTTPDoerCancelInFlight(t *testing.T) {
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-r.Context().Done()
	}))
	defer srv.Close()
	d := NewHTTPDoer([]string{srv.URL}, 4, true)
	defer d.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Response)
	go func() { done <- d.Do(ctx, farFuture(), 0, Request{Path: "/"}, false) }()
	<-arrived
	cancel()
	if r := <-done; r.ErrKind != ErrCanceled {
		t.Errorf("error %q (%v), want %q", r.ErrKind, r.Err, ErrCanceled)
	}
}

// rawServer answers every connection's first request with resp, then closes.
func rawServer(t *testing.T, resp string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				io.WriteString(c, resp)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestHTTPDoerMalformed: what is not HTTP/1.1 as the doer understands it is an
// error, never a success or a hang; a body framed by the connection's end is
// read to it.
func TestHTTPDoerMalformed(t *testing.T) {
	tests := []struct {
		name, resp string
		kind       string
		bytes      int64
	}{
		{"garbage", "SSH-2.0-OpenSSH\r\n\r\n", ErrOther, 0},
		{"bad status", "HTTP/1.1 2x0 OK\r\n\r\n", ErrOther, 0},
		{"short status", "HTTP/1.1 20\r\n\r\n", ErrOther, 0},
		{"header without colon", "HTTP/1.1 200 OK\r\nnonsense\r\n\r\n", ErrOther, 0},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n", ErrOther, 0},
		{"conflicting lengths", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", ErrOther, 0},
		{"unknown coding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", ErrOther, 0},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", ErrOther, 0},
		{"chunk without CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n", ErrOther, 3},
		{"huge header line", "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 10000) + "\r\n\r\n", ErrOther, 0},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", ErrConnect, 3},
		{"truncated chunks", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", ErrConnect, 2},
		{"truncated headers", "HTTP/1.1 200 OK\r\nContent-Le", ErrConnect, 0},
		{"nothing", "", ErrConnect, 0},
		{"body to the end", "HTTP/1.1 200 OK\r\n\r\nuntil close", "", 11},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", "", 2},
		{"early hints first", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "", 2},
		{"chunk extension and trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: 1\r\n\r\n", "", 3},
		{"bad server timing ignored", "HTTP/1.1 200 OK\r\nServer-Timing: queue;dur=x\r\nContent-Length: 0\r\n\r\n", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewHTTPDoer([]string{rawServer(t, tt.resp)}, 1, true)
			defer d.Close()
			r := d.Do(context.Background(), time.Now().Add(10*time.Second), 0, Request{Path: "/"}, false)
			if r.ErrKind != tt.kind || r.Bytes != tt.bytes {
				t.Errorf("error %q (%v), %d bytes; want error %q, %d bytes", r.ErrKind, r.Err, r.Bytes, tt.kind, tt.bytes)
			}
			if tt.kind == ErrOther && !errors.Is(r.Err, errMalformed) {
				t.Errorf("error %v does not say the response was malformed", r.Err)
			}
			if tt.kind == "" && r.Timing.Wall != -1 {
				t.Errorf("timing %+v from a response without a valid Server-Timing", r.Timing)
			}
		})
	}
}

// TestHTTPDoerBadTargets: a target that is not plain http, or refuses
// connections, gives an error record.
func TestHTTPDoerBadTargets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	tests := []struct{ url, kind string }{
		{"https://example.invalid", ErrOther},
		{"://", ErrOther},
		{closed, ErrConnect},
	}
	for _, tt := range tests {
		d := NewHTTPDoer([]string{tt.url}, 1, true)
		r := d.Do(context.Background(), farFuture(), 0, Request{Path: "/"}, false)
		if r.ErrKind != tt.kind || r.Err == nil {
			t.Errorf("%s: error %q (%v), want %q", tt.url, r.ErrKind, r.Err, tt.kind)
		}
		d.Close()
	}
}

// TestEqualFoldAndTokens checks the header matching helpers.
func TestEqualFoldAndTokens(t *testing.T) {
	for _, tt := range []struct {
		in, token string
		eq, has   bool
	}{
		{"Content-Length", "content-length", true, true},
		{"CLOSE", "close", true, true},
		{"keep-alive, Close", "close", false, true},
		{"closed", "close", false, false},
		{"", "close", false, false},
	} {
		if got := equalFold([]byte(tt.in), tt.token); got != tt.eq {
			t.Errorf("equalFold(%q, %q) = %v", tt.in, tt.token, got)
		}
		if got := containsToken([]byte(tt.in), tt.token); got != tt.has {
			t.Errorf("containsToken(%q, %q) = %v", tt.in, tt.token, got)
		}
	}
}

// TestHTTPDoerClose: after Close no connection is kept, not even that of a
// request in flight at the time: it is closed when its request ends.
func TestHTTPDoerClose(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	closed := make(chan struct{}, 16)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			arrived <- struct{}{}
			<-release
		}
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	}
	srv.Start()
	defer srv.Close()
	d := NewHTTPDoer([]string{srv.URL}, 4, true)
	done := make(chan Response)
	go func() { done <- d.Do(context.Background(), farFuture(), 0, Request{Path: "/slow"}, false) }()
	<-arrived
	d.Close()
	close(release)
	if r := <-done; r.ErrKind != "" {
		t.Fatal(r.Err)
	}
	d.mu.Lock()
	kept := len(d.idle[0])
	d.mu.Unlock()
	if kept != 0 {
		t.Fatalf("%d connections kept after Close", kept)
	}
	<-closed // the server sees the client close it
}
