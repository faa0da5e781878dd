package keeper

import (
	"context"

	"cosmossdk.io/collections"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/market/types"
)

// WorkRecords returns up to limit entries of an epoch's verified work after the given key
// (nil: from the start), in (provider, workload) order, and whether more follow. Only
// tasks paid by another account that the provider did not fund are recorded (x/market
// records nothing for self-paid work; funding.go).
func (k Keeper) WorkRecords(ctx context.Context, epoch uint64, after *types.WorkCursor, limit int) ([]types.ProviderWork, bool, error) {
	rng := collections.NewPrefixedTripleRange[uint64, sdk.AccAddress, int32](epoch)
	if after != nil {
		rng = new(collections.Range[collections.Triple[uint64, sdk.AccAddress, int32]]).
			StartExclusive(collections.Join3(epoch, after.Provider, after.Workload)).
			EndExclusive(collections.TriplePrefix[uint64, sdk.AccAddress, int32](epoch + 1))
	}
	it, err := k.Work.Iterate(ctx, rng)
	if err != nil {
		return nil, false, err
	}
	defer func() { _ = it.Close() }()
	var out []types.ProviderWork
	for ; it.Valid() && len(out) < limit; it.Next() {
		kv, err := it.KeyValue()
		if err != nil {
			return nil, false, err
		}
		out = append(out, types.ProviderWork{Provider: kv.Key.K2(), Workload: kv.Key.K3(), Record: kv.Value})
	}
	return out, it.Valid(), nil
}

// PruneWork deletes up to limit work records of an epoch (once it has been paid) and
// reports whether the epoch has none left.
func (k Keeper) PruneWork(ctx context.Context, epoch uint64, limit int) (bool, error) {
	entries, more, err := k.WorkRecords(ctx, epoch, nil, limit)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if err := k.Work.Remove(ctx, collections.Join3(epoch, e.Provider, e.Workload)); err != nil {
			return false, err
		}
	}
	return !more, nil
}
