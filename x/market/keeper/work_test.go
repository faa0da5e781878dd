package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/keepertest"
	"github.com/flopsnet/flops/x/market/types"
)

// WorkRecords pages through one epoch's work only, in key order, from any position;
// PruneWork deletes one epoch's records in bounded steps and leaves the others.
func TestWorkRecordsPagesOneEpoch(t *testing.T) {
	f := newFixture(t, nil)
	provs := []sdk.AccAddress{
		sdk.MustAccAddressFromBech32(keepertest.Addr("a")),
		sdk.MustAccAddressFromBech32(keepertest.Addr("b")),
		sdk.MustAccAddressFromBech32(keepertest.Addr("c")),
	}
	rec := func(n int64) types.WorkRecord {
		return types.WorkRecord{GflopSeconds: sdkmath.NewInt(n), Fees: sdkmath.NewInt(n), Tasks: uint64(n)}
	}
	for epoch := uint64(1); epoch <= 3; epoch++ {
		for i, p := range provs {
			for w := int32(1); w <= 2; w++ {
				require.NoError(t, f.k.Work.Set(f.ctx, collections.Join3(epoch, p, w), rec(int64(epoch*100)+int64(i*10)+int64(w))))
			}
		}
	}
	var all []types.ProviderWork
	var after *types.WorkCursor
	for {
		page, more, err := f.k.WorkRecords(f.ctx, 2, after, 4)
		require.NoError(t, err)
		all = append(all, page...)
		if !more {
			break
		}
		last := page[len(page)-1]
		after = &types.WorkCursor{Provider: last.Provider, Workload: last.Workload}
	}
	require.Len(t, all, 6)
	for _, e := range all {
		require.Equal(t, uint64(2), e.Record.Tasks/100, "epoch 2 only")
	}
	for {
		done, err := f.k.PruneWork(f.ctx, 2, 4)
		require.NoError(t, err)
		if done {
			break
		}
	}
	left, _, err := f.k.WorkRecords(f.ctx, 2, nil, 100)
	require.NoError(t, err)
	require.Empty(t, left)
	for _, e := range []uint64{1, 3} {
		page, _, err := f.k.WorkRecords(f.ctx, e, nil, 100)
		require.NoError(t, err)
		require.Len(t, page, 6, "epoch %d untouched", e)
	}
}
