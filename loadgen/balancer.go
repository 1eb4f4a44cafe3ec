package loadgen

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
)

// Balancer picks the target of each request, as a load balancer in front of
// several instances would. Implementations are safe for concurrent use.
type Balancer interface {
	// Pick returns the index of the target for the next request.
	Pick() int
	// Done reports that a request to target i finished (for balancers that count
	// outstanding requests).
	Done(i int)
	// Name is the balancer's spec, as ParseBalancer takes it.
	Name() string
}

// MaxIngress bounds K in ingress:K.
const MaxIngress = 1024

// ParseBalancer makes a balancer over n targets from its spec: random,
// roundrobin, ingress:K, least or p2c. seed makes the random choices repeatable.
func ParseBalancer(spec string, n int, seed uint64) (Balancer, error) {
	if n < 1 {
		return nil, fmt.Errorf("balancer needs at least one target")
	}
	rng := rand.New(rand.NewPCG(seed, 0xba1a))
	switch {
	case spec == "random":
		return &randomBalancer{n: n, rng: rng}, nil
	case spec == "roundrobin":
		return &ingressBalancer{name: spec, rr: []int{n - 1}, n: n, rng: rng}, nil
	case strings.HasPrefix(spec, "ingress:"):
		k, err := strconv.Atoi(strings.TrimPrefix(spec, "ingress:"))
		if err != nil || k < 1 || k > MaxIngress {
			return nil, fmt.Errorf("balancer %q: want ingress:K with 1 to %d independent round-robin balancers", spec, MaxIngress)
		}
		b := &ingressBalancer{name: spec, rr: make([]int, k), n: n, rng: rng}
		// Independent ingress pods start at independent positions.
		for i := range b.rr {
			b.rr[i] = rng.IntN(n)
		}
		return b, nil
	case spec == "least":
		return &leastBalancer{out: make([]int, n), rng: rng}, nil
	case spec == "p2c":
		return &p2cBalancer{leastBalancer{out: make([]int, n), rng: rng}}, nil
	}
	return nil, fmt.Errorf("balancer %q: want random, roundrobin, ingress:K, least or p2c", spec)
}

// randomBalancer picks a target uniformly at random for every request, as a
// Kubernetes Service (kube-proxy in iptables mode) does.
type randomBalancer struct {
	mu  sync.Mutex
	n   int
	rng *rand.Rand
}

func (b *randomBalancer) Pick() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rng.IntN(b.n)
}
func (b *randomBalancer) Done(int)     {}
func (b *randomBalancer) Name() string { return "random" }

// ingressBalancer models K independent round-robin balancers (ingress pods);
// each request goes through one picked at random. K = 1 is plain round robin.
type ingressBalancer struct {
	mu   sync.Mutex
	name string
	rr   []int // last target of each balancer
	n    int
	rng  *rand.Rand
}

func (b *ingressBalancer) Pick() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := 0
	if len(b.rr) > 1 {
		k = b.rng.IntN(len(b.rr))
	}
	b.rr[k] = (b.rr[k] + 1) % b.n
	return b.rr[k]
}
func (b *ingressBalancer) Done(int)     {}
func (b *ingressBalancer) Name() string { return b.name }

// leastBalancer picks the target with the fewest outstanding requests, breaking
// ties at random.
type leastBalancer struct {
	mu  sync.Mutex
	out []int
	rng *rand.Rand
}

func (b *leastBalancer) Pick() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	best, ties := 0, 0
	for i, o := range b.out {
		switch {
		case i == 0 || o < b.out[best]:
			best, ties = i, 1
		case o == b.out[best]:
			// Reservoir sampling over the tied targets.
			ties++
			if b.rng.IntN(ties) == 0 {
				best = i
			}
		}
	}
	b.out[best]++
	return best
}

func (b *leastBalancer) Done(i int) {
	b.mu.Lock()
	b.out[i]--
	b.mu.Unlock()
}
func (b *leastBalancer) Name() string { return "least" }

// p2cBalancer picks two distinct targets at random and sends to the one with
// fewer outstanding requests (the power of two choices).
type p2cBalancer struct{ leastBalancer }

func (b *p2cBalancer) Pick() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.out)
	if n == 1 {
		b.out[0]++
		return 0
	}
	i := b.rng.IntN(n)
	j := b.rng.IntN(n - 1)
	if j >= i {
		j++
	}
	if b.out[j] < b.out[i] || (b.out[j] == b.out[i] && b.rng.IntN(2) == 0) {
		i = j
	}
	b.out[i]++
	return i
}
func (b *p2cBalancer) Name() string { return "p2c" }
