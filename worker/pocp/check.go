package pocp

import (
	crand "crypto/rand"
	"fmt"
	"math/rand/v2"

	gflpocp "github.com/flopsnet/flops/x/gfl/pocp"
)

// SpotCheck tests an answer s to the valid challenge c before anything commits to it:
//
//   - s has n*n entries (else ErrMalformedAnswer);
//   - every entry is within the bound |S_ij| <= 4*n*r of docs/pocp.md section 1 (a scan
//     of n^2 entries: uninitialised or overflowed memory fails here);
//   - the four corners and `samples` uniformly random entries equal c.Entry (r*n
//     multiply-adds each, the chain's own recomputation).
//
// Failures of the last two wrap ErrWrongAnswer. The random positions come from a generator
// seeded by crypto/rand after the answer exists, so a solver cannot know which entries
// will be checked: an answer with a fraction e of wrong entries passes with probability
// about (1-e)^samples. A solver that is wrong only on a few entries can pass; the chain's
// k samples then catch it with the same odds, which is why solvers are tested against
// x/gfl/pocp.ReferenceSolve (tools/gpu-solver/check) before they are deployed.
func SpotCheck(c gflpocp.Challenge, s []int32, samples int) error {
	var seed [32]byte
	_, _ = crand.Read(seed[:]) // never fails on supported platforms (crypto/rand panics instead)
	return spotCheck(c, s, samples, rand.New(rand.NewChaCha8(seed)))
}

func spotCheck(c gflpocp.Challenge, s []int32, samples int, rng *rand.Rand) error {
	n := int(c.N)
	if len(s) != n*n {
		return fmt.Errorf("answer of %d entries for n = %d, want %d: %w", len(s), c.N, n*n, ErrMalformedAnswer)
	}
	bound := int64(4) * int64(c.N) * int64(c.R)
	for x, v := range s {
		if int64(v) > bound || int64(v) < -bound {
			return fmt.Errorf("entry S[%d][%d] = %d is outside +-4*n*r = %d: %w", x/n, x%n, v, bound, ErrWrongAnswer)
		}
	}
	last := c.N - 1
	positions := []gflpocp.Position{{I: 0, J: 0}, {I: 0, J: last}, {I: last, J: 0}, {I: last, J: last}}
	for range max(samples, 0) {
		positions = append(positions, gflpocp.Position{I: rng.Uint32N(c.N), J: rng.Uint32N(c.N)})
	}
	for _, p := range positions {
		got, want := s[int(p.I)*n+int(p.J)], c.Entry(p.I, p.J)
		if got != want {
			return fmt.Errorf("entry S[%d][%d] = %d, recomputed %d: %w", p.I, p.J, got, want, ErrWrongAnswer)
		}
	}
	return nil
}
