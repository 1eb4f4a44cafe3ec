// Package servertiming reads the Server-Timing header that throttlelab's
// server writes on every work response: how long the request queued, the CPU
// time its thread got and its wall time. The server, the load generator and
// the simulator share it without pulling in each other's dependencies.
//
// Example:
//
//	t, err := servertiming.Parse(resp.Header.Get("Server-Timing"))
//	if err == nil && t.Stall() >= 0 {
//		fmt.Println("runnable but not running for", t.Stall())
//	}
package servertiming
