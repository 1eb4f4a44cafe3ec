# throttlelab. `make` builds the binary, `make test` runs every check CI runs.
GO ?= go
BIN ?= bin/throttlelab
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/throttlelab/throttlelab/internal/cli.Version=$(VERSION)
# The container image (make image): an OCI image layout in a tar, built
# without a container engine. GOARCH picks the platform.
IMAGE_OUT ?= bin/throttlelab-oci.tar
GOARCH ?= $(shell $(GO) env GOARCH)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)

.PHONY: test-shared test-host test-compute all build validate-advise validate-slices image release k8s-binaries e2e-k8s e2e-fleet test test-vm test-kernels cgmode-layouts cgroup-restore fmt-check vet lint fuzz catalog bench bench-kernel bench-server bench-loadgen bench-sim reproduce reproduce-plan reproduce-priors clean

all: build

# The binary; make reproduce builds it inside its own recipe (not through
# $(MAKE), which make -n would run), so that its budget counts the build.
BUILD = $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/throttlelab
build:
	$(BUILD)

# The same image as the Dockerfile's: the static binary, user 65532, no shell.
image:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(GOARCH) $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o bin/throttlelab-linux-$(GOARCH) ./cmd/throttlelab
	$(GO) run ./hack/ociimage -bin bin/throttlelab-linux-$(GOARCH) -version $(VERSION) -arch $(GOARCH) -created $(SOURCE_DATE_EPOCH) -out $(IMAGE_OUT)

# A release in RELEASE_OUT (docs/install.md): make release VERSION=v0.x.y.
# Static binaries for linux/amd64 and linux/arm64 with the version stamped,
# their krew archives and plugin.yaml, the image as one multi-platform OCI
# index (an OCI layout tar), the Helm chart packaged with the version, a
# CycloneDX SBOM and SHA256SUMS. Refuses a VERSION that is no release
# version (git describe gives one on a tagged commit).
RELEASE_OUT ?= bin/release
release:
	$(GO) run ./hack/release -version $(VERSION) -created $(SOURCE_DATE_EPOCH) -out $(RELEASE_OUT)

# etcd and kube-apiserver for the k8s package's tests, built from the Go
# module proxy (minutes the first time, cached in /var/cache/throttlelab).
k8s-binaries:
	sh hack/k8s-binaries.sh

# A real one-node cluster (containerd, kubelet and the control plane, all
# under a temporary directory), examples/limits.yaml run on it with
# --backend kubernetes, and the host restored. Changes the host while it
# runs: as root, under the host lock. Results in E2E_OUT.
e2e-k8s:
	sh hack/e2e-k8s.sh

# The agent, Prometheus and advise --prometheus --apply on the same rig (as root,
# under the host lock): docs/fleet.md.
e2e-fleet:
	sh hack/e2e-fleet.sh

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# staticcheck at a pinned version, installed into GOBIN (or GOPATH/bin) by
# go install when it is missing or another version (.ci/run installs it
# first; `go run pkg@version` would not do: it asks the module proxy every
# time, so it fails offline). Later runs need no network.
STATICCHECK_VERSION := (0.8.2)
STATICCHECK ?= $(or $(shell $(GO) env GOBIN),$(shell $(GO) env GOPATH)/bin)/staticcheck
lint:
	@$(STATICCHECK) -version 2>/dev/null | grep -qF '$(STATICCHECK_VERSION)' || $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2
	$(STATICCHECK) ./...

# NORACE_PKGS: their tests of single-goroutine arithmetic at scale skip under
# the race detector (testenv.Arithmetic), which finds nothing in them and
# makes them about 8x slower; make test runs those tests again without -race,
# and only those (hack/arithmetic-tests.sh names them; the packages' other
# tests, their concurrent paths among them, ran under -race already). In the
# agent they are its sampling by need replayed against 10 ms sampling, one
# goroutine; the rest of that package (real cgroups, the agent's goroutines)
# runs under -race only.
NORACE_PKGS ?= ./advise ./cfs ./agent
# The race-detector tests in two sets (hack/test-packages.sh): every package
# whose tests only compute, or talk to servers they start on loopback, two
# at a time (the compute lane below) beside the VM step (make -j2 -O: each
# target's output stays together), whose guests' tests allow for a busy host
# (testenv.Emulated); then the packages whose tests use the host itself (real
# cgroups, a browser, wall-clock measurement) one at a time on an otherwise
# quiet machine, as they always ran: they fail when other work shares the
# CPUs (demand's nested replay checks that nothing else ran beside it; the
# cgroup tests' spinners and run examples/limits.yaml's p99s fail beside a
# qemu guest), so nothing runs beside them. Their race test binaries are
# built in the compute lane, and their tests that only compute run there. The packages whose tests start etcd and
# kube-apiserver (K8S_*_PKGS) run after the others of their set: CI builds
# those binaries in the background meanwhile, and $(K8S_WAIT) (set by
# .ci/run: hack/k8s-wait.sh) waits for that build before them and fails when
# it failed.
HOST_PKGS = $(shell sh hack/test-packages.sh host no-k8s)
# The host set in two parts: HOST_REAL_PKGS are there only for their
# real-kernel tests, which HOST_TESTS names (the project's naming rule:
# Real, and the end-to-end TestRun*, TestTop*, TestPresetMeasured,
# TestMapMeasured); their other tests only compute and run in the compute
# lane (-skip). HOST_WHOLE_PKGS (a browser, wall-clock measurement) run
# whole on the quiet machine.
HOST_TESTS := Real|^TestRun|^TestPresetMeasured|^TestTop|^TestMapMeasured
HOST_REAL_PKGS = $(shell sh hack/test-packages.sh host-real no-k8s)
HOST_WHOLE_PKGS = $(shell sh hack/test-packages.sh host-whole no-k8s)
# LATE_PKGS: shared packages run with the k8s ones, late in the compute lane:
# internal/ociimage's test builds the static binary the VM step builds first,
# and finds it in the build cache then instead of compiling it beside it.
LATE_PKGS = ./internal/ociimage
SHARED_PKGS = $(filter-out $(LATE_PKGS),$(shell sh hack/test-packages.sh shared no-k8s))
K8S_HOST_PKGS = $(shell sh hack/test-packages.sh host k8s)
K8S_SHARED_PKGS = $(shell sh hack/test-packages.sh shared k8s)
K8S_WAIT ?=
# Each step runs through hack/step.sh, which notes its wall and CPU time in
# $(STEP_TIMES) when that is set (.ci/run prints them at its end).
STEP = sh hack/step.sh
test:
	@$(STEP) fmt-check $(MAKE) --no-print-directory fmt-check
	@$(STEP) vet $(MAKE) --no-print-directory vet
	@$(STEP) lint $(MAKE) --no-print-directory lint
	@$(STEP) compute-and-vm $(MAKE) --no-print-directory -j2 -O test-compute test-vm
	$(STEP) test-host-real $(GO) test -race -p 1 -run '$(HOST_TESTS)' $(HOST_REAL_PKGS)
	$(STEP) test-host-whole $(GO) test -race -p 1 $(HOST_WHOLE_PKGS) $(K8S_HOST_PKGS)

# Everything of make test that only computes (no real cgroup, no browser, no
# wall-clock measurement), in order: the shared set under -race, the k8s
# packages of it once the control plane is there (and LATE_PKGS), the tests of
# HOST_REAL_PKGS that are not real-kernel tests, the other host packages'
# race test binaries (built, not run), the arithmetic tests without -race, and each
# fuzz target for 3 s.
test-compute:
	$(STEP) test-shared $(GO) test -race -p 2 $(SHARED_PKGS)
	$(if $(K8S_WAIT),@$(STEP) k8s-wait $(K8S_WAIT))
	$(STEP) test-k8s-shared $(GO) test -race -p 2 $(K8S_SHARED_PKGS) $(LATE_PKGS)
	$(STEP) test-host-compute $(GO) test -race -p 2 -skip '$(HOST_TESTS)' $(HOST_REAL_PKGS)
	$(STEP) build-host $(GO) test -race -p 2 -run '^$$' $(HOST_WHOLE_PKGS) $(K8S_HOST_PKGS)
	$(STEP) test-norace $(GO) test -p 2 -run "$$(sh hack/arithmetic-tests.sh $(NORACE_PKGS))" $(NORACE_PKGS)
	@$(STEP) fuzz $(MAKE) --no-print-directory fuzz FUZZTIME=3s

# The shared set alone (all of it: the k8s packages skip without etcd and
# kube-apiserver outside CI).
test-shared:
	$(STEP) test-shared $(GO) test -race -p 2 $(SHARED_PKGS) $(K8S_SHARED_PKGS) $(LATE_PKGS)

# The host set alone: its race test binaries built two at a time, then run
# one at a time.
test-host:
	$(STEP) build-host $(GO) test -race -p 2 -run '^$$' $(HOST_PKGS) $(K8S_HOST_PKGS)
	$(STEP) test-host $(GO) test -race -p 1 $(HOST_PKGS) $(K8S_HOST_PKGS)

# The real-kernel tests inside VMs (hack/vmtest, docs/testing.md): Debian's
# kernels 6.1 and 6.12 booted under qemu with a cgroup layout mounted in the
# guest; the host's cgroups are never touched. make test runs pure v2 on both
# kernels; test-kernels the whole matrix (v2, v1, v1-joined, hybrid). Without
# qemu, busybox-static or a kernel package it prints "not run" (a failure in CI).
VM_FLAGS ?=
test-vm:
	$(STEP) test-vm $(GO) run ./hack/vmtest -layouts v2 $(VM_FLAGS)

test-kernels:
	$(GO) run ./hack/vmtest $(VM_FLAGS)

# Optional and not part of make test: the real-cgroup tests again in other
# layouts made by remounting this host's controllers (hack/cgmode; as root; it
# restores the host after each). `make cgroup-restore` undoes a cgmode killed outright.
REAL_TESTS ?= Real|^TestRun|^TestPresetMeasured|^TestTop|^TestMapMeasured
REAL_PKGS ?= ./cgroup/... ./experiment/... ./watch/... ./advise/... ./server/... ./cmd/throttlelab/...
CGROUP_LAYOUTS ?= v2,v2-cpu,v1-joined
cgmode-layouts:
	$(GO) build -o bin/cgmode ./hack/cgmode
	bin/cgmode -modes $(CGROUP_LAYOUTS) -- $(GO) test -p 1 -count=1 -run '$(REAL_TESTS)' $(REAL_PKGS)

cgroup-restore:
	$(GO) build -o bin/cgmode ./hack/cgmode
	bin/cgmode -restore

# Go native fuzz targets, PACKAGE:TARGET. `go test` runs their seed corpus
# (and testdata/fuzz) as ordinary tests; `make fuzz` explores each for
# FUZZTIME, `make test` briefly. A finding is written to the package's
# testdata/fuzz/TARGET/ and fails the run.
FUZZ_TARGETS := ./experiment:FuzzParse ./units:FuzzParseMilliCPU ./server:FuzzHandler ./server:FuzzTileQuery ./server:FuzzBurnQuery
FUZZTIME ?= 60s

fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s $$pkg || exit 1; \
	done

# Regenerates the committed tile catalogue: tens of CPU minutes.
catalog: build
	$(BIN) tiles catalog --out workload/testdata/tiles.csv.gz

bench: bench-kernel bench-server bench-loadgen bench-sim

bench-kernel:
	$(GO) run ./bench/kernel

bench-server: build
	$(GO) run ./bench/server -bin $(BIN)

bench-loadgen: build
	$(GO) run ./bench/loadgen -bin $(BIN)

# The full-scale log jam experiment in the simulator, pinned to one core.
bench-sim:
	taskset -c 0 $(GO) test -run '^$$' -bench LogJam -benchtime 3x ./sim

# Every preset: its quick variant measured here (as root), and simulated at
# its original scale; rewrites docs/findings.md. Not part of make test.
# Each preset runs until its check settles (--until-settled) within
# REPRODUCE_BUDGET, the time for the whole make reproduce, its build and
# the driver's compiling included (-since: a cold build spends minutes of
# it; 0: the spec's repeats only; 24m: 23.2-24.1 minutes in all in four
# runs on 2 cores on 2026-11-29, two of which left F8 and F12 open, and
# 29m settled every row in 27.6): every row its first judging look, then
# one look at a time to the open row likeliest to settle soonest whose
# next look fits. make reproduce-plan prints the costs and runs nothing.
# REPRODUCE_FLAGS=-lock=FILE holds an flock on FILE during each measured run.
REPRODUCE_BUDGET ?= 24m
reproduce:
	start=$$(date +%s) && $(BUILD) && \
	$(GO) run ./presets/reproduce -bin $(BIN) -out docs/findings.md -budget $(REPRODUCE_BUDGET) -since $$start $(REPRODUCE_FLAGS)

reproduce-plan:
	$(GO) run ./presets/reproduce -plan -budget $(REPRODUCE_BUDGET) $(REPRODUCE_FLAGS)

# Pools the measured rows of the last make reproduce (those no other work
# disturbed, and not pooled before) into presets/priors.json, the
# run-to-run spreads a look at few repeats on this machine pools with.
reproduce-priors:
	$(GO) run ./presets/reproduce -priors-from results/reproduce

clean:
	rm -rf bin

# advise's predictions against real cgroups (as root; takes the host lock per
# workload, ~1.5 min each): three workloads unlimited and at three limits,
# predicted from the unlimited run, tabulated into docs/log.md.
VALIDATE_OUT ?= /tmp/throttlelab-validate-advise
VALIDATE_REPEATS ?= 3
validate-advise: build
	$(GO) build -o bin/validate-advise ./hack/validate-advise
	for w in poisson burst onoff; do flock /tmp/throttlelab-host.lock bin/validate-advise -bin $(BIN) -workload $$w -out $(VALIDATE_OUT) || exit 1; done
	# Programs nobody here wrote, with standard clients (Debian: nginx-light postgresql openjdk-17-jdk-headless; fortio from the module proxy),
	# sampled 60 s unlimited, then measured in VALIDATE_REPEATS consecutive 30 s windows at each knee limit (advise predicting
	# 50%, 20%, 5% throttled) and the recommended one (about 9 minutes a program with 3 windows, 4 with 1).
	command -v fortio >/dev/null || GOFLAGS= $(GO) install fortio.org/fortio@v1.68.2
	for p in nginx postgresql jvm; do flock /tmp/throttlelab-host.lock bin/validate-advise -program $$p -warmup 60s -duration 60s -settle 5s -measure 30s -repeats $(VALIDATE_REPEATS) -rounds 1 -out $(VALIDATE_OUT) || exit 1; done
	bin/validate-advise -out $(VALIDATE_OUT) -doc docs/log.md

# The slice replay against the kernel (TestSliceModelKernel, a measurement of minutes
# each): on this host, then on 6.1 and 6.12 with pure cgroup v2 in the VM matrix.
# The lines it logs are docs/log.md's table of the slice replay on 6.1, 6.12 and 6.18.
validate-slices:
	THROTTLELAB_SLICE_KERNEL=1 THROTTLELAB_SLICE_KERNEL_WINDOW=10s flock /tmp/throttlelab-host.lock $(GO) test -count=1 -v -run '^TestSliceModelKernel$$' ./demand
	$(GO) run ./hack/vmtest -kernels 6.1,6.12 -layouts v2 -pkgs demand -v -env THROTTLELAB_SLICE_KERNEL=1 -env THROTTLELAB_SLICE_KERNEL_WINDOW=10s
