//go:build race

package testenv

// Race reports whether the test binary was built with the race detector (go
// test -race).
const Race = true
