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
	// Name is the balancer as ParseBalancer reads it.
	Name() string
}

// MaxIngress bounds K in ingress:K.
const MaxIngress = 1024

// BalancerKind names a balancing policy.
type BalancerKind string

// Balancing policies.
const (
	// BalanceRandom picks a target at random per request, as a Kubernetes
	// Service does.
	BalanceRandom BalancerKind = "random"
	// BalanceRoundRobin takes the targets in turn.
	BalanceRoundRobin BalancerKind = "roundrobin"
	// BalanceIngress sends each request through one of Ingress independent
	// round-robin balancers, picked at random (several ingress pods).
	BalanceIngress BalancerKind = "ingress"
	// BalanceLeast picks the target with the fewest outstanding requests.
	BalanceLeast BalancerKind = "least"
	// BalanceP2C picks the less busy of two targets drawn at random.
	BalanceP2C BalancerKind = "p2c"
)

// BalancerSpec is a parsed balancer: its kind, and K of ingress:K. The zero
// value is random, the default. In YAML and on flags it is written as
// ParseBalancer reads it.
type BalancerSpec struct {
	Kind BalancerKind
	// Ingress is K of ingress:K (BalanceIngress only).
	Ingress int
}

// ParseBalancer parses a balancer: random, roundrobin, ingress:K, least or
// p2c; "" is random. It is the one parser of balancers: specs and flags reach
// it through UnmarshalText.
func ParseBalancer(spec string) (BalancerSpec, error) {
	switch k := BalancerKind(spec); k {
	case "", BalanceRandom:
		return BalancerSpec{}, nil
	case BalanceRoundRobin, BalanceLeast, BalanceP2C:
		return BalancerSpec{Kind: k}, nil
	}
	if n, ok := strings.CutPrefix(spec, "ingress:"); ok {
		k, err := strconv.Atoi(n)
		if err == nil && k >= 1 && k <= MaxIngress {
			return BalancerSpec{Kind: BalanceIngress, Ingress: k}, nil
		}
		return BalancerSpec{}, fmt.Errorf("balancer %q: want ingress:K with 1 to %d independent round-robin balancers", spec, MaxIngress)
	}
	return BalancerSpec{}, fmt.Errorf("balancer %q: want random, roundrobin, ingress:K, least or p2c", spec)
}

// String writes the balancer as ParseBalancer reads it.
func (b BalancerSpec) String() string {
	switch b.Kind {
	case "":
		return string(BalanceRandom)
	case BalanceIngress:
		return "ingress:" + strconv.Itoa(b.Ingress)
	}
	return string(b.Kind)
}

// Random reports the random balancer (the zero value, or one made with
// BalanceRandom).
func (b BalancerSpec) Random() bool { return b.Kind == "" || b.Kind == BalanceRandom }

// MarshalText writes the balancer as String does.
func (b BalancerSpec) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText parses the balancer with ParseBalancer.
func (b *BalancerSpec) UnmarshalText(text []byte) error {
	v, err := ParseBalancer(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// Set parses the balancer of a flag (pflag.Value).
func (b *BalancerSpec) Set(s string) error { return b.UnmarshalText([]byte(s)) }

// Type names the flag's value (pflag.Value).
func (b *BalancerSpec) Type() string { return "balancer" }

// New makes the balancer over n targets; seed makes its random choices
// repeatable.
func (b BalancerSpec) New(n int, seed uint64) (Balancer, error) {
	if n < 1 {
		return nil, fmt.Errorf("balancer needs at least one target")
	}
	rng := rand.New(rand.NewPCG(seed, 0xba1a))
	if b.Random() {
		return &randomBalancer{n: n, rng: rng}, nil
	}
	switch b.Kind {
	case BalanceRoundRobin:
		return &ingressBalancer{name: b.String(), rr: []int{n - 1}, n: n, rng: rng}, nil
	case BalanceIngress:
		if b.Ingress < 1 || b.Ingress > MaxIngress {
			return nil, fmt.Errorf("balancer %s: want ingress:K with 1 to %d independent round-robin balancers", b, MaxIngress)
		}
		ib := &ingressBalancer{name: b.String(), rr: make([]int, b.Ingress), n: n, rng: rng}
		// Independent ingress pods start at independent positions.
		for i := range ib.rr {
			ib.rr[i] = rng.IntN(n)
		}
		return ib, nil
	case BalanceLeast:
		return &leastBalancer{out: make([]int, n), rng: rng}, nil
	case BalanceP2C:
		return &p2cBalancer{leastBalancer{out: make([]int, n), rng: rng}}, nil
	}
	return nil, fmt.Errorf("balancer %q: want random, roundrobin, ingress:K, least or p2c", string(b.Kind))
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
