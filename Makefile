# throttlelab. `make` builds the binary, `make test` runs every check CI runs.
GO ?= go
BIN ?= bin/throttlelab
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/throttlelab/throttlelab/internal/cli.Version=$(VERSION)

.PHONY: all build test fmt-check vet fuzz catalog bench bench-kernel bench-server bench-loadgen bench-sim reproduce clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/throttlelab

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

test: fmt-check vet
	$(GO) test -race -p 1 ./...
	$(MAKE) --no-print-directory fuzz FUZZTIME=3s

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
reproduce: build
	$(GO) run ./experiments/reproduce -bin $(BIN) -out docs/findings.md

clean:
	rm -rf bin
