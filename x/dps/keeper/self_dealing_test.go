package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"

	"github.com/flopsnet/flops/x/dps/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// Self-dealing does not pay. A provider (mallory) funds a second account (sock) that
// submits jobs to mallory's node and pays F for them: x/market records the work as paid
// by another account, which the chain cannot tell apart from a real client. The loop
// costs x/market's take (5% of F with the default params); the work reward it earns is
// at most work_reward_cap * F = 4% of F, however large mallory's share of E_work is. So
// the loop always loses, by at least 1% of F.
func TestSelfDealingLoopLoses(t *testing.T) {
	mp := markettypes.DefaultParams()
	require.Equal(t, uint32(50_000), mp.TakeRatePpm, "the argument assumes x/market's 5% take")
	require.Equal(t, uint64(40_000), types.DefaultParams().WorkRewardCapPpm)

	for _, fees := range []int64{1 * dpsUnit, 37 * dpsUnit, 500 * dpsUnit} {
		// A large network and pool: mallory's share of E_work (all of it: she is the only
		// worker) is far above the cap, so only the cap limits her.
		f := newFixture(t, fixtureOpts{pool: 1_000_000 * dpsUnit, params: func(p *types.Params) {
			p.WorkRewardCapPpm = types.DefaultParams().WorkRewardCapPpm
			p.MaxPayoutsPerBlock = 100
			p.HalvingThreshold = types.DefaultParams().MaxSupply // no halving in this test
		}})
		mallory, sock := addr("mallory"), addr("sock")
		f.node(1, carol, 1_000_000) // E_work = 1,000 DPS
		f.rep.nodes[1] = rep{dec("1"), false}
		f.bank.Move(f.ctx, addr("treasury"), sock, fees)

		// The loop, as x/market settles it: sock's escrow pays mallory minus the take, the
		// take goes half to the reward pool, half to the fee collector.
		split := markettypes.SplitPayment(sdkmath.NewInt(fees), mp.TakeRatePpm, mp.TakePoolSharePpm)
		f.bank.Move(f.ctx, sock, mallory, split.Provider.Int64())
		f.bank.Move(f.ctx, sock, poolAddr, split.Pool.Int64())
		f.bank.Move(f.ctx, sock, authtypes.NewModuleAddress(authtypes.FeeCollectorName), split.FeeCollector.Int64())
		f.addWork(1, mallory, training, 1_000_000_000, fees)
		before := sdkmath.NewInt(fees) // what mallory and sock held together

		f.endEpoch(1)
		f.runUntilIdle(10)
		d := f.emission(1)
		requireAccounting(t, d)
		require.True(t, d.Work.GT(sdkmath.NewInt(fees)), "her uncapped share would exceed the fees")

		reward := f.reward(mallory, 1).Work
		cost := split.Pool.Add(split.FeeCollector)
		require.Equal(t, sdkmath.NewInt(fees).MulRaw(40_000).QuoRaw(1_000_000), reward, "exactly the cap: 4%% of F")
		require.Equal(t, sdkmath.NewInt(fees).MulRaw(50_000).QuoRaw(1_000_000), cost, "the take: 5%% of F")
		require.True(t, reward.LT(cost))
		after := f.balance(mallory).Add(f.balance(sock))
		require.True(t, after.LT(before), "F = %d: the loop left %s of %s", fees, after, before)
		require.Equal(t, before.Sub(cost).Add(reward), after)
	}
}
