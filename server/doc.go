// Package server is the throttlelab workload server: Mandelbrot tiles, CPU burn and
// a trivial API endpoint, with every response saying where its time went.
//
// Each work response carries X-Instance and a Server-Timing header with three
// durations in milliseconds: queue (waiting for a worker), cpu (CPU time the
// request's OS thread really got, from the thread CPU clock with the goroutine
// locked to its thread) and wall (from request read to response). wall - queue -
// cpu is the time the request was runnable but not running: throttled or preempted.
//
// Example:
//
//	cal, _ := workload.CalibrateBurn(1<<20, 5)
//	srv, err := server.New(server.Config{Name: "a", Burn: cal})
//	if err != nil {
//		return err
//	}
//	ln, _ := net.Listen("tcp", "127.0.0.1:0")
//	return srv.Serve(ctx, ln) // until ctx is cancelled, then graceful shutdown
package server
