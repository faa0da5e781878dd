package app

import (
	"context"

	epochskeeper "github.com/cosmos/cosmos-sdk/x/epochs/keeper"
)

// epochCounter numbers reward epochs by an x/epochs epoch: verified work recorded by
// x/market counts in the epoch in progress.
type epochCounter struct {
	epochs     *epochskeeper.Keeper
	identifier string
}

// CurrentWorkEpoch implements markettypes.WorkEpochKeeper.
func (e epochCounter) CurrentWorkEpoch(ctx context.Context) (uint64, error) {
	info, err := e.epochs.EpochInfo.Get(ctx, e.identifier)
	if err != nil {
		return 0, err
	}
	return uint64(max(info.CurrentEpoch, 0)), nil
}
