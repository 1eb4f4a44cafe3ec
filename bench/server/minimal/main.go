// Command minimal is the reference for bench/server: a plain net/http handler that
// answers /api like throttlelab serve does, with no timing headers, metrics or
// thread locking.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address")
	procs := flag.Int("gomaxprocs", 1, "GOMAXPROCS")
	timeouts := flag.Bool("timeouts", true, "the same http.Server timeouts as throttlelab serve")
	flag.Parse()
	runtime.GOMAXPROCS(*procs)
	body := []byte("{\"ok\":true}\n")
	mux := http.NewServeMux()
	mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	hs := &http.Server{Handler: mux}
	if *timeouts {
		// Not instrumentation: the protection against slow clients that serve has
		// (a deadline per request), so the comparison isolates instrumentation.
		hs.ReadHeaderTimeout = 10 * time.Second
		hs.IdleTimeout = 2 * time.Minute
		hs.MaxHeaderBytes = 16 << 10
	}
	// Exit cleanly on SIGTERM, as serve does, so a profiler wrapping the process
	// (valgrind) can write its results.
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
		<-sig
		hs.Close()
	}()
	hs.Serve(ln)
}
