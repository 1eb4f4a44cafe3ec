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
	"runtime"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address")
	procs := flag.Int("gomaxprocs", 1, "GOMAXPROCS")
	flag.Parse()
	runtime.GOMAXPROCS(*procs)
	body := []byte("{\"ok\":true}\n")
	http.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	http.Serve(ln, nil)
}
