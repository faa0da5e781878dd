package keeper

import (
	"context"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

// BeginBlocker binds the block to its drand round for the beacon (beacon.go).
func (k Keeper) BeginBlocker(goCtx context.Context) error {
	ctx := sdk.UnwrapSDKContext(goCtx)
	return k.bindBlock(ctx)
}
