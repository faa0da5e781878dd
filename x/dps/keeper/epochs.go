package keeper

import (
	"context"
	"errors"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"
	epochstypes "github.com/cosmos/cosmos-sdk/x/epochs/types"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/x/dps/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

var _ markettypes.WorkEpochKeeper = Keeper{}

// CurrentWorkEpoch is the number of the current x/epochs epoch named by
// params.epoch_identifier: x/market records verified work under it, and x/dps pays that
// work when the epoch ends. 0 before the epoch's counting starts.
func (k Keeper) CurrentWorkEpoch(ctx context.Context) (uint64, error) {
	if k.wiring.epochs == nil {
		return 0, errorsmod.Wrap(types.ErrNotWired, "epochs keeper")
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return 0, err
	}
	info, err := k.wiring.epochs.GetEpochInfo(sdk.UnwrapSDKContext(ctx), p.EpochIdentifier)
	if err != nil {
		return 0, err
	}
	return uint64(max(info.CurrentEpoch, 0)), nil
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

// BeforeEpochStart implements epochstypes.EpochHooks.
func (h epochHooks) BeforeEpochStart(context.Context, string, int64) error { return nil }

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
