package keeper

import (
	"context"

	"github.com/flopsnet/flops/x/market/types"
)

// InitGenesis stores a validated genesis state.
func (k Keeper) InitGenesis(ctx context.Context, gs *types.GenesisState) error {
	if err := gs.Validate(); err != nil {
		return err
	}
	// Creates the module account on a fresh chain.
	k.accountKeeper.GetModuleAccount(ctx, types.ModuleName)
	return k.Params.Set(ctx, gs.Params)
}

// ExportGenesis returns the whole module state.
func (k Keeper) ExportGenesis(ctx context.Context) (*types.GenesisState, error) {
	p, err := k.Params.Get(ctx)
	if err != nil {
		return nil, err
	}
	return &types.GenesisState{Params: p}, nil
}
