package keeper_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"cosmossdk.io/collections"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

var (
	alice = addr("alice")
	bob   = addr("bob")
	carol = addr("carol")
)

// network is the scenario of most tests: 1,000 GFL in four nodes, and verified work in
// epoch 1 from alice (training and inference) and bob (training).
//
//	E      = 0.2 * 1,000 GFL * 0.01 DPS/GFL     = 2,000,000 udps
//	E_avail = E_work                            = 1,000,000
//	node 1 alice 100 GFL, reputation 1          -> 100,000
//	node 2 bob   300 GFL, reputation 0.5        -> 150,000
//	node 3 alice   0 GFL (inactive)             -> nothing
//	node 4 carol 600 GFL, 0.3, ineligible       -> nothing (below min score)
//	alice work: 1,000 GFLOP-s training + 1,000 inference (W 2): weight 3e9, fees 14 DPS
//	bob   work: 2,000 GFLOP-s training:                         weight 2e9, fees 1 DPS
//	alice: min(1e6 * 3/5 = 600,000, 4% of 14 DPS = 560,000) * 1   -> 560,000
//	bob:   min(400,000, 4% of 1 DPS = 40,000) * 0.5              -> 20,000
//	paid 250,000 + 580,000 = 830,000; remainder 1,170,000 stays in the pool
func network(f *fixture) {
	f.node(1, alice, 100)
	f.node(2, bob, 300)
	f.gfl.nodes = append(f.gfl.nodes, gfltypes.Node{Id: 3, Operator: alice.String(), Status: gfltypes.NODE_STATUS_INACTIVE})
	f.node(4, carol, 600)
	f.rep.nodes[2] = rep{dec("0.5"), true}
	f.rep.nodes[4] = rep{dec("0.3"), false}
	f.rep.providers[string(bob)] = rep{dec("0.5"), true}
	f.addWork(1, alice, training, 1_000, 10*dpsUnit)
	f.addWork(1, alice, inference, 1_000, 4*dpsUnit)
	f.addWork(1, bob, training, 2_000, 1*dpsUnit)
}

// A distribution end to end: queued at the epoch end, paid over several EndBlocks with
// at most max_payouts_per_block (2) items each, every payout as computed by hand, the
// remainder in the pool, the history and the record, the work pruned.
func TestDistributionEndToEnd(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	network(f)
	poolBefore := f.pool()

	f.endEpoch(1)
	require.True(t, f.busy(), "queued, nothing paid at the epoch end")
	require.True(t, f.pool().Equal(poolBefore))

	blocks := f.runUntilIdle(20)
	require.GreaterOrEqual(t, blocks, 6, "4 nodes, 3 records twice and a prune at 2 items a block")
	require.LessOrEqual(t, f.gfl.maxLimit, 2)

	require.Equal(t, ints(100_000+560_000), f.balance(alice))
	require.Equal(t, ints(150_000+20_000), f.balance(bob))
	require.True(t, f.balance(carol).IsZero(), "ineligible node: nothing")

	d := f.emission(1)
	requireAccounting(t, d)
	require.Equal(t, uint64(1000*gflUnit), d.TotalGfl)
	require.Equal(t, ints(2_000_000), d.Emission)
	require.Equal(t, ints(1_000_000), d.Availability)
	require.Equal(t, ints(1_000_000), d.Work)
	require.Equal(t, ints(250_000), d.PaidAvailability)
	require.Equal(t, ints(580_000), d.PaidWork)
	require.Equal(t, ints(1_170_000), d.Remainder)
	require.Equal(t, uint64(2), d.NodesPaid)
	require.Equal(t, uint64(2), d.ProvidersPaid)
	require.False(t, d.Aborted)
	require.Nil(t, d.Progress)
	require.Equal(t, poolBefore.Sub(ints(830_000)), f.pool(), "the pool paid exactly what was paid out")

	require.Equal(t, types.ProviderReward{Provider: alice.String(), Epoch: 1, Availability: ints(100_000), Work: ints(560_000)}, f.reward(alice, 1))
	require.Equal(t, types.ProviderReward{Provider: bob.String(), Epoch: 1, Availability: ints(150_000), Work: ints(20_000)}, f.reward(bob, 1))
	require.Zero(t, f.workLeft(1), "epoch 1's work is pruned")

	// The era counts this epoch's GFL and the pool baseline is net of what was paid.
	era, err := f.k.EraState.Get(f.ctx)
	require.NoError(t, err)
	require.Equal(t, ints(1000*gflUnit), era.CumulativeGfl)
	require.Equal(t, poolBefore.Sub(ints(830_000)), era.PoolBaseline)
}

// The events a user sees: queued, started, one per payout, finished.
func TestDistributionEvents(t *testing.T) {
	f := newFixture(t, fixtureOpts{params: func(p *types.Params) { p.MaxPayoutsPerBlock = 100 }})
	network(f)
	f.endEpoch(1)
	queued := events[*types.EventDistributionQueued](f)
	require.Len(t, queued, 1)
	require.Equal(t, uint64(1), queued[0].Epoch)

	f.resetEvents()
	f.endBlock() // 100 items: the whole distribution in one block
	started := events[*types.EventDistributionStarted](f)
	require.Len(t, started, 1)
	require.Equal(t, ints(2_000_000), started[0].Distribution.Emission)
	paid := events[*types.EventRewardPaid](f)
	require.Len(t, paid, 4)
	require.Equal(t, types.EventRewardPaid{Epoch: 1, Recipient: alice.String(), NodeId: 1, Kind: types.RewardKindAvailability, Amount: ints(100_000)}, *paid[0])
	// work payouts come in x/market's (provider) key order
	require.ElementsMatch(t, []types.EventRewardPaid{
		{Epoch: 1, Recipient: alice.String(), Kind: types.RewardKindWork, Amount: ints(560_000)},
		{Epoch: 1, Recipient: bob.String(), Kind: types.RewardKindWork, Amount: ints(20_000)},
	}, []types.EventRewardPaid{*paid[2], *paid[3]})
	done := events[*types.EventDistributionFinished](f)
	require.Len(t, done, 1)
	require.Equal(t, ints(1_170_000), done[0].Distribution.Remainder)
	require.False(t, f.busy())
}

// Nothing starts while x/gfl rebalances, and a distribution in progress pauses while a
// new rebalance runs (the node powers are moving).
func TestDistributionWaitsForRebalance(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	network(f)
	f.gfl.rebalancing = true
	f.endEpoch(1)
	for range 3 {
		f.endBlock()
	}
	res, err := f.qs.Distribution(f.ctx, &types.QueryDistributionRequest{})
	require.NoError(t, err)
	require.False(t, res.InProgress)
	require.Equal(t, []uint64{1}, res.PendingEpochs)
	require.Zero(t, f.gfl.calls)

	f.gfl.rebalancing = false
	f.endBlock()
	d, found, err := f.k.GetInProgress(f.ctx)
	require.NoError(t, err)
	require.True(t, found)
	cursor := d.Progress.NodeCursor
	require.Equal(t, uint64(2), cursor)

	f.gfl.rebalancing = true
	f.endBlock()
	d, _, err = f.k.GetInProgress(f.ctx)
	require.NoError(t, err)
	require.Equal(t, cursor, d.Progress.NodeCursor, "paused")

	f.gfl.rebalancing = false
	f.runUntilIdle(20)
	requireAccounting(t, f.emission(1))
	require.Equal(t, ints(660_000), f.balance(alice))
}

// The pool caps E: with 0.5 DPS in the pool the distribution plans 0.5 DPS, never more.
func TestEmissionCappedByPool(t *testing.T) {
	f := newFixture(t, fixtureOpts{pool: 500_000})
	network(f)
	f.endEpoch(1)
	f.runUntilIdle(20)
	d := f.emission(1)
	requireAccounting(t, d)
	require.Equal(t, ints(2_000_000), d.Uncapped)
	require.Equal(t, ints(500_000), d.Emission)
	require.Equal(t, ints(250_000), d.Availability)
	// alice 25,000 (a tenth), bob 37,500 (three tenths, halved); work: alice
	// min(150,000, 560,000), bob min(100,000, 40,000) * 0.5
	require.Equal(t, ints(25_000+150_000), f.balance(alice))
	require.Equal(t, ints(37_500+20_000), f.balance(bob))
	require.Equal(t, ints(500_000-232_500), f.pool())
}

// Max supply caps E: the udps outside the pool never exceeds max_supply.
func TestEmissionCappedByMaxSupply(t *testing.T) {
	// 1,000,000 DPS outside the pool; max supply leaves room for 0.3 DPS more.
	f := newFixture(t, fixtureOpts{params: func(p *types.Params) {
		p.MaxSupply = sdkmath.NewInt(1_000_000*dpsUnit + 300_000)
	}})
	network(f)
	f.endEpoch(1)
	f.runUntilIdle(20)
	d := f.emission(1)
	requireAccounting(t, d)
	require.Equal(t, ints(300_000), d.Emission)
	outside := f.bank.GetSupply(f.ctx, denom).Amount.Sub(f.pool())
	require.True(t, outside.LTE(sdkmath.NewInt(1_000_000*dpsUnit+300_000)))
}

// Once max supply is reached nothing is emitted, and the distribution still ends and
// prunes the work.
func TestNothingEmittedAtMaxSupply(t *testing.T) {
	f := newFixture(t, fixtureOpts{params: func(p *types.Params) { p.MaxSupply = sdkmath.NewInt(1_000_000 * dpsUnit) }})
	network(f)
	f.endEpoch(1)
	f.runUntilIdle(20)
	d := f.emission(1)
	requireAccounting(t, d)
	require.True(t, d.Emission.IsZero())
	require.True(t, f.balance(alice).IsZero())
	require.Zero(t, f.workLeft(1))
}

// The reputation factor: the score multiplies the reward; below x/reputation's minimum
// score (not eligible) there is nothing, whatever the score; the difference stays in the
// pool.
func TestReputationFactor(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.node(1, alice, 500)
	f.node(2, bob, 500)
	f.rep.nodes[1] = rep{dec("0.75"), true}
	f.rep.nodes[2] = rep{dec("0.9"), false}
	f.endEpoch(1)
	f.runUntilIdle(20)
	// E_avail = 0.2 * 1,000 GFL * 0.01 / 2 = 1 DPS; alice 0.5 DPS * 0.75, bob nothing
	require.Equal(t, ints(375_000), f.balance(alice))
	require.True(t, f.balance(bob).IsZero())
	d := f.emission(1)
	requireAccounting(t, d)
	require.Equal(t, ints(375_000), d.PaidAvailability)
	require.Equal(t, ints(2_000_000-375_000), d.Remainder, "no work this epoch: E_work stays too")
}

// The work reward cap: a provider whose share of E_work is large but whose fees are
// small earns at most work_reward_cap * fees.
func TestWorkRewardCap(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.node(1, carol, 1_000)
	f.rep.nodes[1] = rep{dec("1"), false} // no availability payouts, to isolate the work
	f.addWork(1, alice, training, 1_000_000, 3*dpsUnit)
	f.endEpoch(1)
	f.runUntilIdle(20)
	// alone, alice's share is all of E_work = 1 DPS; capped at 4% of 3 DPS
	require.Equal(t, ints(120_000), f.balance(alice))
	requireAccounting(t, f.emission(1))
}

// The distribution never pays more than E_avail even if node powers grow after it read
// the total (the guard against powers changing mid-distribution).
func TestAvailabilityNeverAbovePlan(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.node(1, alice, 100)
	f.node(2, bob, 100)
	f.node(3, carol, 100)
	small := uint64(100 * gflUnit) // the index says 100 GFL while the nodes hold 300
	f.gfl.totalOverride = &small
	f.endEpoch(1)
	f.runUntilIdle(20)
	d := f.emission(1)
	requireAccounting(t, d)
	// E = 0.2 DPS, E_avail 0.1 DPS: alice takes it all, nothing is left for the others
	require.Equal(t, ints(100_000), d.PaidAvailability)
	require.Equal(t, ints(100_000), f.balance(alice))
	require.True(t, f.balance(bob).IsZero())
}

// A payout that fails (a blocked recipient) or panics is deferred, not lost: the others
// are paid, the distribution finishes with the amount owed (deferred_*, reserved in the
// pool and out of the next emission), each payout is retried 1, 2, 4 and 8 blocks later
// with an EventItemFailed naming its recipient each time, paid by a retry once the bank
// takes it, and after its fifth failure resolved with an EventItemResolved: the amount
// stays in the pool. Every invariant is checked after every block.
func TestFailedPayoutIsRetriedThenResolved(t *testing.T) {
	// what bob and carol earn when nothing fails
	clean := newFixture(t, fixtureOpts{})
	network(clean)
	clean.rep.nodes[4] = rep{dec("1"), true}
	clean.endEpoch(1)
	clean.runUntilIdle(20)
	wantBob, wantCarol := clean.balance(bob), clean.balance(carol)
	require.True(t, wantBob.IsPositive())
	require.True(t, wantCarol.IsPositive())

	f := newFixture(t, fixtureOpts{})
	network(f)
	f.bank.blocked[string(bob)] = true
	f.bank.panicOnSendTo = carol
	f.rep.nodes[4] = rep{dec("1"), true}
	f.resetEvents()
	f.endEpoch(1)
	f.runUntilIdle(20)
	d := f.emission(1)
	requireAccounting(t, d)
	require.Equal(t, ints(660_000), f.balance(alice))
	require.True(t, f.balance(bob).IsZero())
	require.True(t, f.balance(carol).IsZero())
	require.Equal(t, ints(100_000), d.PaidAvailability)
	require.Equal(t, ints(560_000), d.PaidWork)
	require.Equal(t, ints(2_000_000-660_000), d.Remainder)
	require.Equal(t, wantBob.Add(wantCarol), d.DeferredAvailability.Add(d.DeferredWork), "owed, not lost")
	reserved, err := f.k.DeferredTotal.Get(f.ctx)
	require.NoError(t, err)
	require.Equal(t, wantBob.Add(wantCarol), reserved)
	for _, ev := range events[*blockhook.EventItemFailed](f) {
		require.Contains(t, []string{bob.String(), carol.String()}, ev.Account, "only the failing recipients")
		require.Less(t, ev.Attempt, uint32(blockhook.MaxAttempts), "none resolved yet")
	}
	require.Empty(t, events[*blockhook.EventItemResolved](f))

	// carol's bank is fixed: her next retry pays her
	f.bank.panicOnSendTo = nil
	for range 10 {
		if f.balance(carol).IsPositive() {
			break
		}
		f.endBlock()
	}
	require.Equal(t, wantCarol, f.balance(carol))
	d = f.emission(1)
	require.Equal(t, wantBob, d.DeferredAvailability.Add(d.DeferredWork))
	require.Equal(t, ints(2_000_000-660_000).Sub(wantCarol), d.Remainder)
	require.Equal(t, wantCarol, f.reward(carol, 1).Availability.Add(f.reward(carol, 1).Work))

	// bob stays blocked: each of his payouts (availability and work) fails five times,
	// then is resolved
	era, err := f.k.EraState.Get(f.ctx)
	require.NoError(t, err)
	for range 40 {
		f.endBlock()
	}
	bobFailures := map[string]int{}
	for _, ev := range events[*blockhook.EventItemFailed](f) {
		if ev.Account == bob.String() {
			bobFailures[ev.Kind]++
		}
	}
	require.Equal(t, map[string]int{"availability": blockhook.MaxAttempts, "work": blockhook.MaxAttempts}, bobFailures)
	resolved := events[*blockhook.EventItemResolved](f)
	require.Len(t, resolved, 2)
	for _, ev := range resolved {
		require.Equal(t, "the reward stays in the pool", ev.Rule)
		require.Equal(t, bob.String(), ev.Account)
	}
	require.True(t, f.balance(bob).IsZero())
	d = f.emission(1)
	require.True(t, d.DeferredAvailability.Add(d.DeferredWork).IsZero(), "nothing owed any more")
	require.Equal(t, ints(2_000_000-660_000).Sub(wantCarol), d.Remainder, "bob's reward is part of the remainder")
	reserved, err = f.k.DeferredTotal.Get(f.ctx)
	require.NoError(t, err)
	require.True(t, reserved.IsZero())
	after, err := f.k.EraState.Get(f.ctx)
	require.NoError(t, err)
	require.Equal(t, era.PoolBaseline.Add(wantBob), after.PoolBaseline, "back in the pool, not counted as a replenishment")
	it, err := f.k.Deferred.Iterate(f.ctx, nil)
	require.NoError(t, err)
	require.False(t, it.Valid(), "no deferred payout left")
	require.NoError(t, it.Close())
}

// A step that keeps failing (x/gfl cannot page its nodes) is retried with back-off while
// the distribution waits, then, after its fifth failure, resolved by ending the
// distribution where it is (aborted) so that the queue moves on.
func TestFailingStepIsRetriedThenAborts(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	network(f)
	f.gfl.err = errors.New("store corrupted")
	f.resetEvents()
	f.endEpoch(1)
	f.endEpoch(2)
	for range 17 {
		f.endBlock()
	}
	var failed []*blockhook.EventItemFailed
	for _, ev := range events[*blockhook.EventItemFailed](f) {
		if ev.Id == 1 {
			failed = append(failed, ev)
		}
	}
	require.Len(t, failed, blockhook.MaxAttempts)
	for i, ev := range failed {
		require.Equal(t, "step", ev.Kind)
		require.Equal(t, uint32(i+1), ev.Attempt)
	}
	resolved := events[*blockhook.EventItemResolved](f)
	require.Len(t, resolved, 1)
	require.Equal(t, uint64(1), resolved[0].Id)
	d := f.emission(1)
	requireAccounting(t, d)
	require.True(t, d.Aborted)
	require.Equal(t, d.Emission, d.Remainder)

	f.gfl.err = nil
	f.runUntilIdle(20)
	requireAccounting(t, f.emission(2))
	require.False(t, f.emission(2).Aborted)
}

// A step that fails once is retried a block later and the distribution goes on.
func TestFailingStepRecovers(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	network(f)
	f.gfl.err = errors.New("transient")
	f.endEpoch(1)
	f.endBlock()
	f.gfl.err = nil
	f.runUntilIdle(20)
	d := f.emission(1)
	requireAccounting(t, d)
	require.False(t, d.Aborted)
	require.Equal(t, ints(660_000), f.balance(alice))
}

// A keeper without its dependencies never panics: the distribution waits (and is logged).
func TestUnsetDependencySkipped(t *testing.T) {
	f := newFixture(t, fixtureOpts{noWiring: true})
	f.endEpoch(1)
	require.NotPanics(t, func() {
		for range 3 {
			f.endBlock()
		}
	})
	res, err := f.qs.Distribution(f.ctx, &types.QueryDistributionRequest{})
	require.NoError(t, err)
	require.Equal(t, []uint64{1}, res.PendingEpochs)

	f.wire(f.gfl, f.rep)
	f.node(1, alice, 100)
	f.runUntilIdle(10)
	requireAccounting(t, f.emission(1))
	require.Equal(t, ints(100_000), f.balance(alice))
}

// Distributions run one at a time in epoch order; an epoch is queued once; epochs of
// another identifier are ignored.
func TestQueue(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.node(1, alice, 100)
	require.NoError(t, f.k.EpochHooks().AfterEpochEnd(f.ctx, "day", 1))
	f.endEpoch(2)
	f.endEpoch(1)
	f.endEpoch(1)
	res, err := f.qs.Distribution(f.ctx, &types.QueryDistributionRequest{})
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 2}, res.PendingEpochs)

	f.endBlock()
	d, found, err := f.k.GetInProgress(f.ctx)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, uint64(1), d.Epoch, "the oldest first")
	f.runUntilIdle(10)
	require.True(t, f.emission(1).StartHeight <= f.emission(2).StartHeight)
	require.True(t, f.emission(1).EndHeight <= f.emission(2).StartHeight)

	f.endEpoch(1) // already paid: not queued again
	require.False(t, f.busy())
}

// x/dps numbers its own reward epochs: the current one is the last epoch of
// params.epoch_identifier that started (x/epochs' BeforeEpochStart), 0 before the first;
// another identifier's epochs and non-positive numbers change nothing. Verified work is
// recorded under it.
func TestCurrentWorkEpoch(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	n, err := f.k.CurrentWorkEpoch(f.ctx)
	require.NoError(t, err)
	require.Zero(t, n, "before the first epoch")
	h := f.k.EpochHooks()
	require.NoError(t, h.BeforeEpochStart(f.ctx, "flops", 7))
	require.NoError(t, h.BeforeEpochStart(f.ctx, "day", 9))
	require.NoError(t, h.BeforeEpochStart(f.ctx, "flops", -1))
	n, err = f.k.CurrentWorkEpoch(f.ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(7), n)
	f.endEpoch(7)
	n, err = f.k.CurrentWorkEpoch(f.ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(8), n, "the epoch after the one that ended")
	require.NoError(t, f.k.RecordWork(f.ctx, markettypes.VerifiedWork{
		Payer: addr("client"), Provider: alice, Workload: training, GflopSeconds: ints(5), Fees: ints(9),
	}))
	require.Equal(t, 1, f.workLeft(8))
	require.Zero(t, f.workLeft(7))
}

// The distribution reads and prunes the ledger in pages of at most max_payouts_per_block
// records: every block deletes at most that many.
func TestWorkPagesAreBounded(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.node(1, carol, 1_000)
	f.rep.nodes[1] = rep{dec("1"), false}
	for i := range 7 {
		f.addWork(1, addr(fmt.Sprintf("p%d", i)), training, 1_000, dpsUnit)
	}
	f.endEpoch(1)
	left := f.workLeft(1)
	for range 30 {
		f.endBlock()
		now := f.workLeft(1)
		require.LessOrEqual(t, left-now, 2, "max_payouts_per_block")
		left = now
		if !f.busy() {
			break
		}
	}
	require.Zero(t, left)
	requireAccounting(t, f.emission(1))
}

// Halvings on the chain: by threshold after enough GFL, and a replenished pool (x/market's
// take) delays a threshold halving; by time whatever the GFL.
func TestHalvingsInKeeper(t *testing.T) {
	run := func(f *fixture, epoch int64) types.Distribution {
		f.endEpoch(epoch)
		f.runUntilIdle(20)
		return f.emission(uint64(epoch))
	}
	threshold := func(p *types.Params) { p.HalvingThreshold = sdkmath.NewInt(2_500 * gflUnit) }

	t.Run("threshold", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{params: threshold})
		f.node(1, alice, 1_000)
		require.Equal(t, types.HALVING_CAUSE_UNSPECIFIED, run(f, 1).Halving) // 1,000
		require.Equal(t, types.HALVING_CAUSE_UNSPECIFIED, run(f, 2).Halving) // 2,000
		d := run(f, 3)                                                       // 3,000 >= 2,500
		require.Equal(t, types.HALVING_CAUSE_THRESHOLD, d.Halving)
		require.Equal(t, uint32(1), d.Era)
		require.Equal(t, ints(1_000_000), d.Emission, "the halving epoch pays half")
		era, err := f.qs.Era(f.ctx, &types.QueryEraRequest{})
		require.NoError(t, err)
		require.Equal(t, uint32(1), era.Era)
		require.Equal(t, "0.005000000000000000", era.Rate.String())
		require.True(t, era.CumulativeGfl.IsZero())
		require.Equal(t, ints(2_500*gflUnit), era.RemainingGfl)
	})

	t.Run("replenishment delays it", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{params: threshold})
		f.node(1, alice, 1_000)
		run(f, 1)
		run(f, 2)
		// x/market's take brings 6 DPS into the pool: it buys back 600 GFL at R = 0.01
		f.bank.Move(f.ctx, addr("treasury"), poolAddr, 6*dpsUnit)
		d := run(f, 3)
		require.Equal(t, types.HALVING_CAUSE_UNSPECIFIED, d.Halving)
		require.Equal(t, ints(6*dpsUnit), d.Replenished)
		require.Equal(t, ints(600*gflUnit), d.GflCredit)
		era, err := f.qs.Era(f.ctx, &types.QueryEraRequest{})
		require.NoError(t, err)
		require.Equal(t, ints(2_400*gflUnit), era.CumulativeGfl) // 2,000 - 600 + 1,000
		require.Equal(t, types.HALVING_CAUSE_THRESHOLD, run(f, 4).Halving)
	})

	t.Run("time", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{})
		f.node(1, alice, 1)
		require.Equal(t, types.HALVING_CAUSE_UNSPECIFIED, run(f, 1).Halving)
		f.ctx = f.ctx.WithBlockTime(f.ctx.BlockTime().Add(365 * 24 * time.Hour))
		d := run(f, 2)
		require.Equal(t, types.HALVING_CAUSE_TIME, d.Halving)
		require.Equal(t, uint32(1), d.Era)
		halvings := events[*types.EventHalving](f)
		require.Len(t, halvings, 1)
		require.Equal(t, types.EventHalving{Era: 1, Cause: types.HALVING_CAUSE_TIME, Epoch: 2, CumulativeGfl: ints(2 * gflUnit)}, *halvings[0])
		era, err := f.qs.Era(f.ctx, &types.QueryEraRequest{})
		require.NoError(t, err)
		require.Equal(t, d.StartTime, era.LastHalvingTime)
		require.Equal(t, d.StartTime.Add(365*24*time.Hour), era.NextHalvingTime)
	})
}

// A provider whose records span several blocks (one record per block here) is paid once,
// on its whole tally: its training work carries the weight, its inference work the fees;
// paid per part it would get nothing.
func TestProviderSpanningBlocks(t *testing.T) {
	f := newFixture(t, fixtureOpts{params: func(p *types.Params) { p.MaxPayoutsPerBlock = 1 }})
	f.node(1, carol, 1_000)
	f.rep.nodes[1] = rep{dec("1"), false}
	f.addWork(1, alice, training, 5_000, 0)
	f.addWork(1, alice, inference, 0, 2*dpsUnit)
	f.addWork(1, alice, int32(gfltypes.WORKLOAD_CLASS_RENDERING), 0, 1*dpsUnit)
	f.endEpoch(1)
	blocks := f.runUntilIdle(30)
	require.GreaterOrEqual(t, blocks, 8, "1 node, 3 records twice, 3 pruned")
	d := f.emission(1)
	requireAccounting(t, d)
	require.Equal(t, ints(120_000), f.balance(alice), "4% of 3 DPS of fees")
	require.Equal(t, uint64(1), d.ProvidersPaid)
}

// Distribution records do not accumulate: when epoch n's distribution finishes, that of
// n - distribution_retention_epochs is deleted, unless it still owes deferred payouts, and
// so are that epoch's reward records (paged in the PRUNE phase, by their epoch index).
func TestOldDistributionsArePruned(t *testing.T) {
	f := newFixture(t, fixtureOpts{params: func(p *types.Params) { p.DistributionRetentionEpochs = 2 }})
	network(f)
	f.bank.blocked[string(bob)] = true // epoch 1 owes bob until his payouts resolve
	f.endEpoch(1)
	f.runUntilIdle(20)
	f.bank.blocked[string(bob)] = false
	has := func(n uint64) bool {
		ok, err := f.k.Distributions.Has(f.ctx, n)
		require.NoError(t, err)
		return ok
	}
	d1 := f.emission(1)
	require.True(t, d1.DeferredAvailability.Add(d1.DeferredWork).IsPositive())
	// epoch 2 finishes before bob's retries: 1 is within retention anyway
	f.endEpoch(2)
	f.runUntilIdle(20)
	require.True(t, has(1))
	// epoch 3 finishes: epoch 1 is past retention; it is deleted once it owes nothing
	for range 40 {
		f.endBlock() // bob's retries pay him
	}
	d1 = f.emission(1)
	require.True(t, d1.DeferredAvailability.Add(d1.DeferredWork).IsZero())
	rewards := func(n uint64) (records, indexed int) {
		require.NoError(t, f.k.Rewards.Walk(f.ctx, nil, func(k collections.Pair[sdk.AccAddress, uint64], _ types.ProviderReward) (bool, error) {
			if k.K2() == n {
				records++
			}
			return false, nil
		}))
		require.NoError(t, f.k.RewardsByEpoch.Walk(f.ctx, collections.NewPrefixedPairRange[uint64, sdk.AccAddress](n), func(collections.Pair[uint64, sdk.AccAddress]) (bool, error) {
			indexed++
			return false, nil
		}))
		return records, indexed
	}
	r1, i1 := rewards(1)
	require.Positive(t, r1)
	require.Equal(t, r1, i1, "every reward record is indexed by its epoch")
	f.endEpoch(3)
	f.runUntilIdle(20)
	require.False(t, has(1), "epoch 1 pruned")
	r1, i1 = rewards(1)
	require.Zero(t, r1+i1, "epoch 1's rewards pruned with it")
	r2, i2 := rewards(2)
	require.Positive(t, r2)
	require.Equal(t, r2, i2)
	require.True(t, has(2))
	require.True(t, has(3))
	f.endEpoch(4)
	f.runUntilIdle(20)
	require.False(t, has(2), "epoch 2 pruned")
	require.True(t, has(4))
}

// A distribution past retention that still owes deferred payouts is kept.
func TestOwingDistributionIsNotPruned(t *testing.T) {
	f := newFixture(t, fixtureOpts{params: func(p *types.Params) { p.DistributionRetentionEpochs = 1 }})
	network(f)
	f.bank.blocked[string(bob)] = true
	f.endEpoch(1)
	f.runUntilIdle(20)
	f.endEpoch(2)
	f.runUntilIdle(20)
	d1 := f.emission(1)
	require.True(t, d1.DeferredAvailability.Add(d1.DeferredWork).IsPositive(), "bob's retries are still pending")
	ok, err := f.k.Distributions.Has(f.ctx, 1)
	require.NoError(t, err)
	require.True(t, ok, "kept while it owes")
}
