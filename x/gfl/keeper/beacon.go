package keeper

import (
	"context"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/beacon"
	"github.com/flopsnet/flops/x/gfl/types"
)

var _ beacon.Beacon = Keeper{}

// recordBlockHash keeps the current block's header hash for later draws and forgets the
// one that fell out of the window (BeginBlock: constant work).
func (k Keeper) recordBlockHash(ctx sdk.Context) error {
	h := ctx.BlockHeight()
	if err := k.BlockHashes.Set(ctx, h, ctx.HeaderHash()); err != nil {
		return err
	}
	if old := h - types.BeaconHistoryBlocks; old > 0 {
		return k.BlockHashes.Remove(ctx, old)
	}
	return nil
}

// BlockHash returns the header hash of a committed block (one below the current height)
// still in the window.
func (k Keeper) BlockHash(ctx context.Context, height int64) ([]byte, error) {
	if height >= sdk.UnwrapSDKContext(ctx).BlockHeight() {
		return nil, errorsmod.Wrapf(beacon.ErrUnavailable, "height %d is not committed yet", height)
	}
	bz, err := k.BlockHashes.Get(ctx, height)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return nil, errorsmod.Wrapf(beacon.ErrUnavailable, "height %d is outside the last %d blocks", height, types.BeaconHistoryBlocks)
	}
	return bz, err
}

// Seed implements beacon.Beacon.
func (k Keeper) Seed(ctx context.Context, height int64, domain string, ids ...uint64) ([32]byte, error) {
	bz, err := k.BlockHash(ctx, height)
	if err != nil {
		return [32]byte{}, err
	}
	return beacon.Derive(bz, domain, ids...), nil
}
