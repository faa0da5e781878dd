package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	"github.com/flopsnet/flops/x/dps/types"
)

// The invariants hold through a distribution (checked after every block by the fixture)
// and catch what would break them: a pool drained behind the keeper's back while a
// distribution still owes, a record whose parts do not add up, a history that does not
// match the record.
func TestInvariantsCatchBreakage(t *testing.T) {
	t.Run("pool below what the distribution owes", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{})
		network(f)
		f.endEpoch(1)
		f.endBlock()
		d, found, err := f.k.GetInProgress(f.ctx)
		require.NoError(t, err)
		require.True(t, found)
		f.bank.Move(f.ctx, poolAddr, addr("thief"), f.pool().Sub(d.Owed()).Int64()+1)
		msg, broken := f.k.PoolInvariant(f.ctx)
		require.True(t, broken, msg)
		require.Contains(t, msg, types.InvariantPool)
	})

	t.Run("paid + remainder != E", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{})
		network(f)
		f.endEpoch(1)
		f.runUntilIdle(20)
		d := f.emission(1)
		d.Remainder = d.Remainder.AddRaw(1)
		require.NoError(t, f.k.Distributions.Set(f.ctx, 1, d))
		msg, broken := f.k.DistributionsInvariant(f.ctx)
		require.True(t, broken, msg)
		require.Contains(t, msg, "!= emission")
	})

	t.Run("history does not match the record", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{})
		network(f)
		f.endEpoch(1)
		f.runUntilIdle(20)
		r := f.reward(alice, 1)
		r.Work = r.Work.AddRaw(1)
		require.NoError(t, f.k.Rewards.Set(f.ctx, collections.Join(alice, uint64(1)), r))
		msg, broken := f.k.DistributionsInvariant(f.ctx)
		require.True(t, broken, msg)
		require.Contains(t, msg, "rewards history says")
	})

	t.Run("holds on a fresh chain", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{})
		require.NoError(t, f.inv.AssertAll(f.ctx))
		require.Len(t, f.inv.Routes(), 2)
	})
}
