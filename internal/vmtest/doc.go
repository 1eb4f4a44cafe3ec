// Package vmtest runs the real-kernel tests inside virtual machines: each
// Debian kernel of the matrix boots under qemu with a chosen cgroup layout
// (pure v2, v1 with cpu and cpuacct apart, v1 with them joined, hybrid with
// cpu on v2), so the tests see the kernels and layouts users run without the
// host's cgroups ever being remounted.
//
// The tests are built as static test binaries, packed with busybox and the
// throttlelab binary into an initramfs whose init mounts the layout, runs
// each binary and prints markers on the serial console; the harness reads
// the console and tabulates kernel x layout x package:
//
//	m := vmtest.Matrix{Kernels: vmtest.Kernels, Layouts: []vmtest.Layout{vmtest.V2}, Suites: vmtest.Suites, CacheDir: vmtest.DefaultCacheDir}
//	res, err := m.Run(ctx, os.Stderr)
//	vmtest.WriteTable(os.Stdout, res)
//
// Every qemu it starts is killed when its context ends, on every path.
package vmtest
