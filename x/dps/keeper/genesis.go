package keeper

import (
	"context"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

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
		if err := k.Rewards.Set(ctx, collections.Join(sdk.AccAddress(provider), r.Epoch), r); err != nil {
			return err
		}
	}
	return nil
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
	return gs, nil
}
