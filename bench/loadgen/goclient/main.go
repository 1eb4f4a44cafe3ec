// Command goclient is the reference for bench/loadgen's on/off comparison: a
// plain net/http Go client, as a Go benchmark program would write one (like
// sched-bench's), running Markov on/off sources that send back to back while
// ON. It keeps no records: it counts requests and errors and prints one JSON
// line, so it is the least a Go client can do for the same load.
//
//	goclient -url http://127.0.0.1:8080/api -sources 16 -on 100ms -off 100ms -duration 5s
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	url := flag.String("url", "", "URL to GET")
	sources := flag.Int("sources", 16, "independent on/off sources")
	on := flag.Duration("on", 100*time.Millisecond, "mean ON period (exponential)")
	off := flag.Duration("off", 100*time.Millisecond, "mean OFF period (exponential)")
	d := flag.Duration("duration", 5*time.Second, "how long to run")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if *url == "" {
		fmt.Fprintln(os.Stderr, "goclient: -url is required")
		os.Exit(2)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *sources}, Timeout: 30 * time.Second}
	var ok, failed atomic.Int64
	start := time.Now()
	end := start.Add(*d)
	var wg sync.WaitGroup
	for s := 0; s < *sources; s++ {
		rng := rand.New(rand.NewPCG(*seed, uint64(s)+1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			exp := func(mean time.Duration) time.Duration { return time.Duration(rng.ExpFloat64() * float64(mean)) }
			isOn := rng.Float64() < float64(*on)/float64(*on+*off)
			for time.Now().Before(end) {
				if !isOn {
					time.Sleep(min(exp(*off), time.Until(end)))
					isOn = true
					continue
				}
				phaseEnd := time.Now().Add(exp(*on))
				for now := time.Now(); now.Before(phaseEnd) && now.Before(end); now = time.Now() {
					resp, err := client.Get(*url)
					if err != nil {
						failed.Add(1)
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						ok.Add(1)
					} else {
						failed.Add(1)
					}
				}
				isOn = false
			}
		}()
	}
	wg.Wait()
	elapsed := max(time.Since(start), *d)
	json.NewEncoder(os.Stdout).Encode(map[string]any{
		"requests": ok.Load() + failed.Load(), "errors": failed.Load(),
		"rps": float64(ok.Load()+failed.Load()) / elapsed.Seconds(),
	})
}
