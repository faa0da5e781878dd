package keeper

import (
	"context"
	"errors"

	"cosmossdk.io/collections"

	sdk "github.com/cosmos/cosmos-sdk/types"
	epochstypes "github.com/cosmos/cosmos-sdk/x/epochs/types"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/x/dps/types"
)

// CurrentWorkEpoch is the reward epoch verified work is recorded under: the number of the
// last epoch of params.epoch_identifier that started (BeforeEpochStart sets it), 0
// before the first one. x/dps pays that work when the epoch ends.
func (k Keeper) CurrentWorkEpoch(ctx context.Context) (uint64, error) {
	n, err := k.CurrentEpoch.Get(ctx)
	if errors.Is(err, collections.ErrNotFound) {
		return 0, nil
	}
	return n, err
}

// EpochHooks returns the x/epochs hooks of the module.
func (k Keeper) EpochHooks() epochstypes.EpochHooks { return epochHooks{k} }

type epochHooks struct{ k Keeper }

// AfterEpochEnd queues the distribution of the ended epoch (constant work; the payouts
// run in later EndBlocks). An error is logged, never returned to x/epochs.
func (h epochHooks) AfterEpochEnd(ctx context.Context, identifier string, epochNumber int64) error {
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	_ = blockhook.Apply(sdkCtx, "dps: queue distribution", func(ctx sdk.Context) error {
		return h.k.queueEpoch(ctx, identifier, epochNumber)
	})
	return nil
}

// BeforeEpochStart makes a starting epoch of params.epoch_identifier the current reward
// epoch: x/dps numbers its reward epochs as x/epochs numbers that identifier's, and keeps
// the number itself.
func (h epochHooks) BeforeEpochStart(ctx context.Context, identifier string, epochNumber int64) error {
	p, err := h.k.Params.Get(ctx)
	if err != nil || identifier != p.EpochIdentifier || epochNumber <= 0 {
		return err
	}
	return h.k.CurrentEpoch.Set(ctx, uint64(epochNumber))
}

// queueEpoch adds an ended epoch of params.epoch_identifier to the queue, once.
func (k Keeper) queueEpoch(ctx sdk.Context, identifier string, epochNumber int64) error {
	p, err := k.Params.Get(ctx)
	if err != nil || identifier != p.EpochIdentifier || epochNumber <= 0 {
		return err
	}
	epoch := uint64(epochNumber)
	if done, err := k.Distributions.Has(ctx, epoch); err != nil || done {
		return err
	}
	d, err := k.InProgress.Get(ctx)
	switch {
	case err == nil && d.Epoch == epoch:
		return nil
	case err != nil && !errors.Is(err, collections.ErrNotFound):
		return err
	}
	if err := k.PendingEpochs.Set(ctx, epoch); err != nil {
		return err
	}
	return ctx.EventManager().EmitTypedEvent(&types.EventDistributionQueued{Epoch: epoch})
}
