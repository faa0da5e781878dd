package pocp

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"time"

	gflpocp "github.com/flopsnet/flops/x/gfl/pocp"
)

// Benchmark measures solver on one challenge of size (n, r) with a fresh random seed (so
// no solver can have the answer cached): the time of Prepare, that is the solve and the
// Merkle tree, as the chain's power sample counts from the challenge to the commitment.
// It returns GFLOPS(n, r, elapsed) and the time. This is what `flops-worker benchmark`
// prints and what a node claims as ClaimedGflops. Pick (n, r) so that the run takes
// seconds, as a real challenge does (docs/pocp.md section 7): a short run is dominated by
// fixed costs (an external solver's process and GPU start-up, the tree) and understates
// the power.
func Benchmark(ctx context.Context, solver Solver, n, r uint32) (gflops uint64, elapsed time.Duration, err error) {
	c := gflpocp.Challenge{N: n, R: r}
	if err := c.Validate(); err != nil {
		return 0, 0, err
	}
	_, _ = crand.Read(c.Seed[:]) // never fails on supported platforms
	a, err := Prepare(ctx, solver, c)
	if err != nil {
		return 0, 0, fmt.Errorf("benchmark: %w", err)
	}
	elapsed = a.Elapsed()
	return GFLOPS(n, r, elapsed), elapsed, nil
}

// BenchmarkClaim times the solver on challenges of size n = minN, 2*minN, ... (r = 1) until
// one takes at least enough or the next would pass maxN, and returns the last: the
// figure a node claims. A GPU solver's small challenges are all start-up and transfer, so
// they are grown until the work shows (claiming a GPU's speed from n = 1024 claimed a
// fraction of it, and the chain sized its first challenges for that). Each size is about
// 8 times the work of the one before.
func BenchmarkClaim(ctx context.Context, solver Solver, minN, maxN uint32, enough time.Duration) (gflops uint64, n uint32, elapsed time.Duration, err error) {
	for n = minN; ; n *= 2 {
		if gflops, elapsed, err = Benchmark(ctx, solver, n, 1); err != nil {
			return 0, n, 0, err
		}
		if elapsed >= enough || 2*n > maxN {
			return gflops, n, elapsed, nil
		}
	}
}

// GFLOPS is the speed of a challenge of size (n, r) solved in elapsed, in GFLOP/s:
// floor(2*n^3*r / elapsed in nanoseconds), FLOPs per nanosecond being 10^9 FLOP/s. It is
// exact for every valid challenge (2*n^3*r < 2^55); elapsed <= 0 counts as 1 ns. The
// chain's own sample (x/gfl/pocp.PowerGFLOPS) uses the same formula over block times in
// milliseconds.
func GFLOPS(n, r uint32, elapsed time.Duration) uint64 {
	ns := uint64(max(elapsed.Nanoseconds(), 1))
	return gflpocp.Challenge{N: n, R: r}.FLOPs() / ns
}
