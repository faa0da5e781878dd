package keeper

import (
	"context"

	"cosmossdk.io/collections"

	"github.com/flopsnet/flops/x/reputation/types"
)

// InitGenesis stores a validated genesis state and rebuilds the derived state: the
// ranking index (with each score) and the operator aggregates.
func (k Keeper) InitGenesis(ctx context.Context, gs *types.GenesisState) error {
	if err := gs.Validate(); err != nil {
		return err
	}
	// Creates the module account on a fresh chain.
	k.accountKeeper.GetModuleAccount(ctx, types.ModuleName)
	if err := k.Params.Set(ctx, gs.Params); err != nil {
		return err
	}
	if err := k.Scoring.Set(ctx, gs.Scoring); err != nil {
		return err
	}
	for _, s := range gs.Scores {
		if err := k.setScore(ctx, nil, s); err != nil {
			return err
		}
	}
	for _, c := range gs.Counters {
		if err := k.Counters.Set(ctx, collections.Join(c.Epoch, c.NodeId), c); err != nil {
			return err
		}
	}
	for _, h := range gs.History {
		if err := k.History.Set(ctx, collections.Join(h.NodeId, h.Epoch), h); err != nil {
			return err
		}
	}
	return k.Retries.Import(ctx, gs.Retries)
}

// ExportGenesis returns the whole module state (the ranking index and operator
// aggregates are rebuilt on import). Records come out in key order.
func (k Keeper) ExportGenesis(ctx context.Context) (*types.GenesisState, error) {
	gs := &types.GenesisState{}
	var err error
	if gs.Params, err = k.Params.Get(ctx); err != nil {
		return nil, err
	}
	if gs.Scoring, err = k.Scoring.Get(ctx); err != nil {
		return nil, err
	}
	if err := k.Scores.Walk(ctx, nil, func(_ uint64, s types.NodeScore) (bool, error) {
		gs.Scores = append(gs.Scores, s)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.Counters.Walk(ctx, nil, func(_ collections.Pair[uint64, uint64], c types.EpochCounters) (bool, error) {
		gs.Counters = append(gs.Counters, c)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.History.Walk(ctx, nil, func(_ collections.Pair[uint64, uint64], h types.ScoreRecord) (bool, error) {
		gs.History = append(gs.History, h)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if gs.Retries, err = k.Retries.Export(ctx); err != nil {
		return nil, err
	}
	return gs, nil
}
