package keeper

import (
	"context"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/x/dps/types"
)

// InitGenesis stores a validated genesis state. Without an era (a new chain), era 0
// starts at the genesis block time and the reward pool's genesis balance (x/bank's
// genesis runs first) is the replenishment baseline: genesis funding is not
// replenishment.
func (k Keeper) InitGenesis(ctx context.Context, gs *types.GenesisState) error {
	if err := gs.Validate(); err != nil {
		return err
	}
	// Creates the module account (the reward pool) on a fresh chain.
	k.accountKeeper.GetModuleAccount(ctx, types.ModuleName)
	if err := k.Params.Set(ctx, gs.Params); err != nil {
		return err
	}
	era := types.EraState{
		LastHalvingTime: sdk.UnwrapSDKContext(ctx).BlockTime(),
		CumulativeGfl:   sdkmath.ZeroInt(),
		PoolBaseline:    k.PoolBalance(ctx),
	}
	if gs.Era != nil {
		era = *gs.Era
	}
	if err := k.EraState.Set(ctx, era); err != nil {
		return err
	}
	for _, e := range gs.PendingEpochs {
		if err := k.PendingEpochs.Set(ctx, e); err != nil {
			return err
		}
	}
	if gs.InProgress != nil {
		if err := k.InProgress.Set(ctx, *gs.InProgress); err != nil {
			return err
		}
	}
	for _, d := range gs.Distributions {
		if err := k.Distributions.Set(ctx, d.Epoch, d); err != nil {
			return err
		}
	}
	for _, r := range gs.Rewards {
		provider, err := k.addressCodec.StringToBytes(r.Provider)
		if err != nil {
			return err
		}
		if err := k.setReward(ctx, provider, r); err != nil {
			return err
		}
	}
	if err := k.CurrentEpoch.Set(ctx, gs.CurrentEpoch); err != nil {
		return err
	}
	for _, w := range gs.Work {
		provider, err := k.addressCodec.StringToBytes(w.Provider)
		if err != nil {
			return err
		}
		if err := k.Work.Set(ctx, collections.Join3(w.Epoch, sdk.AccAddress(provider), w.Workload), w.Record); err != nil {
			return err
		}
	}
	for _, l := range gs.FundingLinks {
		recipient, err := k.addressCodec.StringToBytes(l.Recipient)
		if err != nil {
			return err
		}
		funder, err := k.addressCodec.StringToBytes(l.Funder)
		if err != nil {
			return err
		}
		if err := k.FundedBy.Set(ctx, collections.Join(sdk.AccAddress(recipient), sdk.AccAddress(funder))); err != nil {
			return err
		}
	}
	total := sdkmath.ZeroInt()
	for _, dp := range gs.DeferredPayouts {
		recipient, err := k.addressCodec.StringToBytes(dp.Recipient)
		if err != nil {
			return err
		}
		it := blockhook.Item{Kind: dp.Kind, ID: dp.Epoch, Sub: dp.NodeId, Addr: recipient}
		if err := k.Deferred.Set(ctx, deferredKey(it), dp); err != nil {
			return err
		}
		total = total.Add(dp.Amount)
	}
	if err := k.DeferredTotal.Set(ctx, total); err != nil {
		return err
	}
	return k.Retries.Import(ctx, gs.Retries)
}

// ExportGenesis returns the whole module state.
func (k Keeper) ExportGenesis(ctx context.Context) (*types.GenesisState, error) {
	p, err := k.Params.Get(ctx)
	if err != nil {
		return nil, err
	}
	gs := &types.GenesisState{Params: p}
	era, err := k.EraState.Get(ctx)
	if err != nil {
		return nil, err
	}
	gs.Era = &era
	if err := k.PendingEpochs.Walk(ctx, nil, func(e uint64) (bool, error) {
		gs.PendingEpochs = append(gs.PendingEpochs, e)
		return false, nil
	}); err != nil {
		return nil, err
	}
	d, found, err := k.GetInProgress(ctx)
	if err != nil {
		return nil, err
	}
	if found {
		gs.InProgress = &d
	}
	if err := k.Distributions.Walk(ctx, nil, func(_ uint64, d types.Distribution) (bool, error) {
		gs.Distributions = append(gs.Distributions, d)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.Rewards.Walk(ctx, nil, func(_ collections.Pair[sdk.AccAddress, uint64], r types.ProviderReward) (bool, error) {
		gs.Rewards = append(gs.Rewards, r)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if gs.CurrentEpoch, err = k.CurrentWorkEpoch(ctx); err != nil {
		return nil, err
	}
	if err := k.Work.Walk(ctx, nil, func(key collections.Triple[uint64, sdk.AccAddress, int32], r types.WorkRecord) (bool, error) {
		provider, err := k.addressCodec.BytesToString(key.K2())
		if err != nil {
			return true, err
		}
		gs.Work = append(gs.Work, types.WorkEntry{Epoch: key.K1(), Provider: provider, Workload: key.K3(), Record: r})
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.FundedBy.Walk(ctx, nil, func(key collections.Pair[sdk.AccAddress, sdk.AccAddress]) (bool, error) {
		recipient, err := k.addressCodec.BytesToString(key.K1())
		if err != nil {
			return true, err
		}
		funder, err := k.addressCodec.BytesToString(key.K2())
		if err != nil {
			return true, err
		}
		gs.FundingLinks = append(gs.FundingLinks, types.FundingLink{Recipient: recipient, Funder: funder})
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.Deferred.Walk(ctx, nil, func(_ collections.Pair[string, []byte], dp types.DeferredPayout) (bool, error) {
		gs.DeferredPayouts = append(gs.DeferredPayouts, dp)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if gs.Retries, err = k.Retries.Export(ctx); err != nil {
		return nil, err
	}
	return gs, nil
}
