package keeper_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/x/market/keeper"
	"github.com/flopsnet/flops/x/market/types"
)

// The numbers of the security argument in x/market/README.md, computed from the default
// params and the keeper's own audit probability, so that the README cannot drift from
// the code. Floats are fine here: this is arithmetic about the chain, not the chain.
//
// A provider runs a single-replica EXACT task worth V (price + tip) at a cost of k <= V.
// Honest, it earns (1 - take) V - k. Cheating (skipping the work, committing anything),
// it saves k; if caught it loses the payment and is slashed S >= result_penalty_multiple
// x V. Caught means: audited (probability q), and the auditor and the committee's
// majority are honest. With a fraction m of the eligible nodes colluding with it, drawn
// at random: p_c = (1 - m) (1 - (3 m^2 - 2 m^3)).
//
//	E[cheat - honest] = k - q p_c ((1 - take) V + S)
func TestSecurityArgumentNumbers(t *testing.T) {
	p := types.DefaultParams()
	one := sdkmath.LegacyOneDec()
	q := float64(keeper.AuditProbabilityPPM(p, uint64(p.AuditWarmupTasks), one, sdkmath.NewInt(1_000_000))) / 1e6
	require.InDelta(t, 0.10, q, 1e-9, "a provider past its warm-up with a perfect score: the audit floor")
	warm := float64(keeper.AuditProbabilityPPM(p, 0, one, sdkmath.NewInt(1_000_000))) / 1e6
	require.Equal(t, 1.0, warm, "a new provider is always audited")
	big := float64(keeper.AuditProbabilityPPM(p, 1000, one, p.AuditValueThreshold)) / 1e6
	require.Equal(t, 1.0, big, "a task worth the value threshold is always audited")
	take := float64(p.TakeRatePpm) / 1e6
	M := float64(p.ResultPenaltyMultiple)

	caught := func(m float64) float64 { return (1 - m) * (1 - (3*m*m - 2*m*m*m)) }
	gain := func(q, m, kOverV float64) float64 { return kOverV - q*caught(m)*((1-take)+M) } // in units of V

	for _, m := range []float64{0, 0.05, 0.1, 0.2, 0.3} {
		for _, k := range []float64{0.25, 0.5, 1} {
			g := gain(q, m, k)
			t.Logf("m=%.2f k/V=%.2f: P(caught)=%.3f  E[cheat-honest]=%+.2f V", m, k, q*caught(m), g)
			require.Negative(t, g, "cheating must lose at m=%.2f, k/V=%.2f", m, k)
		}
	}
	// the colluding share at which cheating a task that costs its whole value breaks even
	lo, hi := 0.0, 1.0
	for range 60 {
		mid := (lo + hi) / 2
		if gain(q, mid, 1) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	t.Logf("break-even colluding share (k = V, q = floor): %.3f", lo)
	require.InDelta(t, 0.34, lo, 0.01)

	// warm-up and high-value tasks: always audited
	require.Less(t, gain(1, 0, 1), -float64(p.ResultPenaltyMultiple)+1)

	// replicas: a lone cheater among honest replicas is always in the minority
	require.Negative(t, gain(1, 0, 1))

	// BUILTIN_GEMM: a provider that computes a fraction f of the entries passes the k
	// sampled entries with probability f^k and saves (1 - f) of the cost; 1 - f^k >= 1 - f,
	// so the expected gain (1 - f) k - (1 - f^k)((1 - take) V + S) is negative for every f.
	samples := 32.0
	for _, f := range []float64{0, 0.5, 0.9, 0.99, 0.999} {
		pass := math.Pow(f, samples)
		g := (1 - f) - (1-pass)*((1-take)+M)
		t.Logf("gemm: f=%.3f pass=%.4f E=%+.3f V", f, pass, g)
		require.Negative(t, g)
	}
}
