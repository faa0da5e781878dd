package keeper

import (
	"context"
	"errors"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/dps/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// The verified-work ledger. x/market reports every settled task and paid pool unit
// through its AfterWorkVerified hook; x/dps counts it under its current reward epoch
// (epochs.go) unless the payer is the provider or an account the provider funded
// (funding.go), and pays the epoch's work reward from it when the epoch's distribution
// runs, which then prunes the epoch's records (distribution.go).

// MarketHooks returns x/dps's x/market hooks: the verified-work report. The others are
// x/reputation's.
func (k Keeper) MarketHooks() markettypes.MarketHooks { return marketHooks{k} }

type marketHooks struct{ k Keeper }

var _ markettypes.MarketHooks = marketHooks{}

// AfterWorkVerified records verified work, unless it is self-paid. A failure writes
// nothing and is returned (x/market then fails the settlement's step).
func (h marketHooks) AfterWorkVerified(ctx context.Context, w markettypes.VerifiedWork) error {
	return h.k.RecordWork(ctx, w)
}

// AfterTaskAcked implements markettypes.MarketHooks.
func (marketHooks) AfterTaskAcked(context.Context, uint64, bool) error { return nil }

// AfterTaskLapsed implements markettypes.MarketHooks.
func (marketHooks) AfterTaskLapsed(context.Context, uint64, string) error { return nil }

// AfterTaskVerified implements markettypes.MarketHooks.
func (marketHooks) AfterTaskVerified(context.Context, uint64, bool) error { return nil }

// AfterTaskSettled implements markettypes.MarketHooks.
func (marketHooks) AfterTaskSettled(context.Context, uint64, bool) error { return nil }

// RecordWork adds verified work to its provider's record of the current reward epoch and
// workload class, unless the payer is the provider or was funded by it.
func (k Keeper) RecordWork(ctx context.Context, w markettypes.VerifiedWork) error {
	if ok, err := k.earnsWork(ctx, w.Payer, w.Provider); err != nil || !ok {
		return err
	}
	epoch, err := k.CurrentWorkEpoch(ctx)
	if err != nil {
		return err
	}
	key := collections.Join3(epoch, w.Provider, w.Workload)
	rec, err := k.Work.Get(ctx, key)
	switch {
	case errors.Is(err, collections.ErrNotFound):
		rec = types.WorkRecord{GflopSeconds: sdkmath.ZeroInt(), Fees: sdkmath.ZeroInt()}
	case err != nil:
		return err
	}
	rec.GflopSeconds = rec.GflopSeconds.Add(w.GflopSeconds)
	rec.Fees = rec.Fees.Add(w.Fees)
	rec.Tasks++
	return k.Work.Set(ctx, key, rec)
}

// WorkRecords returns up to limit entries of an epoch's verified work after the given key
// (nil: from the start), in (provider, workload) order, and whether more follow.
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
