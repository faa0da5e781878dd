package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	"github.com/flopsnet/flops/x/gfl/keeper"
)

// Version 2 indexes the window's drand bindings by round; the migration from 1 builds the
// index from the bindings, one entry each, and the oldest round is read from it.
func TestMigrate1to2IndexesTheBindingsByRound(t *testing.T) {
	f, _ := drandFixture(t, nil)
	f.blocks(4)
	var want []collections.Pair[uint64, int64]
	require.NoError(t, f.k.RoundBlocks.Walk(f.ctx, nil, func(k collections.Pair[uint64, int64]) (bool, error) {
		want = append(want, k)
		return false, nil
	}))
	require.Len(t, want, 5)
	require.NoError(t, f.k.RoundBlocks.Clear(f.ctx, nil)) // a version 1 store
	require.NoError(t, keeper.NewMigrator(f.k).Migrate1to2(f.ctx))
	var got []collections.Pair[uint64, int64]
	require.NoError(t, f.k.RoundBlocks.Walk(f.ctx, nil, func(k collections.Pair[uint64, int64]) (bool, error) {
		got = append(got, k)
		return false, nil
	}))
	require.Equal(t, want, got)
	for _, k := range got {
		br, err := f.k.BlockRounds.Get(f.ctx, k.K2())
		require.NoError(t, err)
		require.Equal(t, br.Round, k.K1())
	}
}
