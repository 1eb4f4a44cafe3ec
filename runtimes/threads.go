package runtimes

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// RunnableThreads counts the threads of pids that are runnable right now
// (state R in /proc/PID/task/TID/stat, under root): the parallelism the
// group shows at this instant, one reading. A thread that exits while read
// is not counted; a process that cannot be listed gives a warning.
// Reading it costs one file per thread: call it at discovery, not every
// sample.
func RunnableThreads(root string, pids []int) (int, []Warning) {
	n := 0
	var warns []Warning
	for _, pid := range pids {
		dir := filepath.Join(root, "proc", strconv.Itoa(pid), "task")
		tasks, err := os.ReadDir(dir)
		if err != nil {
			r := reader{root: root, pid: pid}
			warns = append(warns, *r.warn(fmt.Errorf("listing %s: %w", dir, err)))
			continue
		}
		for _, t := range tasks {
			b, err := os.ReadFile(filepath.Join(dir, t.Name(), "stat"))
			if err != nil {
				continue // exited since the listing
			}
			if s, err := parseStatState(b); err == nil && s == 'R' {
				n++
			}
		}
	}
	return n, warns
}
