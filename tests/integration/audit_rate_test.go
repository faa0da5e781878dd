package integration

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/beacon"
	"github.com/flopsnet/flops/testutil/apptest"
	marketkeeper "github.com/flopsnet/flops/x/market/keeper"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// The audit probability: 100% in a provider's warm-up and at or above the value threshold,
// otherwise max(audit_floor, 1 - reputation).
func TestAuditProbability(t *testing.T) {
	p := markettypes.DefaultParams() // floor 10%, warm-up 10, threshold 1,000 DPS
	one := sdkmath.LegacyOneDec()
	small := sdkmath.NewInt(1_000_000)
	cases := []struct {
		name    string
		settled uint64
		score   sdkmath.LegacyDec
		price   sdkmath.Int
		want    uint32
	}{
		{"first task: warm-up", 0, one, small, 1_000_000},
		{"tenth task: still warm-up", 9, one, small, 1_000_000},
		{"after warm-up, perfect reputation: the floor", 10, one, small, 100_000},
		{"reputation 0.6: 40%", 50, sdkmath.LegacyMustNewDecFromStr("0.6"), small, 400_000},
		{"reputation 0.95: the floor wins", 50, sdkmath.LegacyMustNewDecFromStr("0.95"), small, 100_000},
		{"at the value threshold: always", 50, one, p.AuditValueThreshold, 1_000_000},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, marketkeeper.AuditProbabilityPPM(p, tc.settled, tc.score, tc.price), tc.name)
	}
}

// The draw of the chain (sha256 of the block after the commitment, the audit domain and the
// task id, below p out of 10^6) audits at the configured rate: measured over 20,000
// (block, task) pairs for each probability, within four standard deviations.
func TestAuditDrawRate(t *testing.T) {
	const n = 20_000
	for _, ppm := range []uint64{0, 10_000, 100_000, 300_000, 1_000_000} {
		hits := 0
		for i := uint64(0); i < n; i++ {
			seed := beacon.Derive(apptest.BlockHash(int64(1+i%997)), markettypes.DomainAudit, i)
			if beacon.Below(seed, 1_000_000) < ppm {
				hits++
			}
		}
		prob := float64(ppm) / 1e6
		sd := math.Sqrt(n * prob * (1 - prob))
		require.InDeltaf(t, n*prob, float64(hits), 4*sd+0.5, "p = %d ppm: %d of %d audited", ppm, hits, n)
	}
}

// On the chain: a new provider's first tasks are all audited; after its warm-up, its
// tasks are audited at the floor (set to 30% here): 60 tasks, within four standard
// deviations of 18.
func TestAuditRateOnChain(t *testing.T) {
	a, _ := marketAppLate(t, 4, 0, func(p *markettypes.Params) { p.AuditFloorPpm = 300_000 })
	for _, n := range []string{"p1", "p2", "p3", "p4"} {
		bondAndRegister(t, a, n, 8)
	}
	d := newDriver(t, a, "p1", "p2", "p3", "p4")
	p, _ := a.MarketKeeper.GetParams(a.Ctx())
	run := func(tasks uint32) (audited int) {
		spec := exactJob(a, 1, 0)
		spec.TaskCount = tasks
		spec.Requirements.AllowedClasses = []string{"A100-40GB"}
		spec.VerificationBudget = sdk.NewCoin(udps, spec.MaxPricePerTask.Amount.MulRaw(int64(tasks)*(1+int64(p.CommitteeSize))))
		job := submit(t, a, spec)
		d.until(120, "job finished", jobDone(t, a, job))
		return len(role(t, a, job, markettypes.TASK_ROLE_AUDIT))
	}
	// warm-up: every provider's first tasks (p.AuditWarmupTasks of them) are audited
	require.Equal(t, 4, run(4), "warm-up: every task audited")
	// run enough tasks that every provider is past its warm-up
	run(40)
	audited := run(60)
	sd := math.Sqrt(60 * 0.3 * 0.7)
	require.InDeltaf(t, 18, float64(audited), 4*sd, "%d of 60 audited at a 30%% floor", audited)
	a.AssertInvariants()
}
