package keeper

import (
	"context"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

// BeginBlocker records the block hash for the beacon.
func (k Keeper) BeginBlocker(goCtx context.Context) error {
	ctx := sdk.UnwrapSDKContext(goCtx)
	return k.recordBlockHash(ctx)
}
