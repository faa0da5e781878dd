package keeper_test

import (
	"testing"

	"github.com/cosmos/gogoproto/proto"
	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/x/dps/types"
)

// Export in the middle of a distribution, import into a fresh chain, and finish there:
// the payouts and the record are those of an uninterrupted run, and export -> import ->
// export gives the same bytes.
func TestGenesisRoundTripMidDistribution(t *testing.T) {
	// The reference: epochs 1 and 2 paid without interruption.
	ref := newFixture(t, fixtureOpts{})
	network(ref)
	ref.endEpoch(1)
	ref.runUntilIdle(20)
	ref.addWork(2, alice, training, 1_000, 10*dpsUnit)
	ref.endEpoch(2)
	ref.endEpoch(3)
	ref.runUntilIdle(30)

	// The same chain exported after epoch 1 and three blocks of epoch 2 (with epoch 3
	// queued behind it).
	f := newFixture(t, fixtureOpts{})
	network(f)
	f.endEpoch(1)
	f.runUntilIdle(20)
	f.addWork(2, alice, training, 1_000, 10*dpsUnit)
	f.endEpoch(2)
	f.endEpoch(3)
	for range 3 {
		f.endBlock()
	}
	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.NotNil(t, gs.InProgress)
	require.Equal(t, uint64(2), gs.InProgress.Epoch)
	require.Equal(t, []uint64{3}, gs.PendingEpochs)
	require.Len(t, gs.Distributions, 1)
	require.NotEmpty(t, gs.Rewards)
	require.NoError(t, gs.Validate())

	// A fresh chain: the bank holds what f's did, the other modules are f's.
	g := newFixture(t, fixtureOpts{noWiring: true, pool: f.pool().Int64(),
		others: f.bank.GetSupply(f.ctx, denom).Amount.Sub(f.pool()).Int64()})
	g.wire(f.gfl, f.rep)
	require.NoError(t, g.k.InitGenesis(g.ctx, gs))
	again, err := g.k.ExportGenesis(g.ctx)
	require.NoError(t, err)
	want, err := proto.Marshal(gs)
	require.NoError(t, err)
	got, err := proto.Marshal(again)
	require.NoError(t, err)
	require.Equal(t, want, got, "export -> import -> export")

	aliceAtExport, bobAtExport := f.balance(alice), f.balance(bob)
	g.runUntilIdle(30)
	d, r := g.emission(2), ref.emission(2)
	requireAccounting(t, d)
	d.EndHeight, r.EndHeight = 0, 0
	require.Equal(t, r, d)
	for _, e := range []uint64{1, 2, 3} {
		require.Equal(t, ref.reward(alice, e), g.reward(alice, e), "epoch %d", e)
		require.Equal(t, ref.reward(bob, e), g.reward(bob, e), "epoch %d", e)
	}
	// what was paid before the export on one chain and after it on the other adds up to
	// the uninterrupted run
	require.Equal(t, ref.balance(alice), aliceAtExport.Add(g.balance(alice)))
	require.Equal(t, ref.balance(bob), bobAtExport.Add(g.balance(bob)))
	require.True(t, g.balance(alice).IsPositive())
	requireAccounting(t, g.emission(3))
}

// InitGenesis refuses an invalid state and InitGenesis of a new chain starts era 0 at the
// genesis time with the pool's genesis balance as baseline.
func TestInitGenesis(t *testing.T) {
	f := newFixture(t, fixtureOpts{pool: 42 * dpsUnit})
	era, err := f.k.EraState.Get(f.ctx)
	require.NoError(t, err)
	require.Equal(t, types.EraState{LastHalvingTime: f.ctx.BlockTime(), CumulativeGfl: ints(0), PoolBaseline: ints(42 * dpsUnit)}, era)

	gs := types.DefaultGenesisState()
	gs.PendingEpochs = []uint64{2, 1}
	require.ErrorIs(t, f.k.InitGenesis(f.ctx, gs), types.ErrInvalidGenesis)
}
