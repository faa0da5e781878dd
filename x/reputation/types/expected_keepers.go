package types

import (
	"context"

	sdk "github.com/cosmos/cosmos-sdk/types"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// AccountKeeper is the part of x/auth this module uses.
type AccountKeeper interface {
	GetModuleAccount(ctx context.Context, name string) sdk.ModuleAccountI
	GetModuleAddress(name string) sdk.AccAddress
}

// GFLKeeper is the part of x/gfl this module uses: the operator of a node that x/market
// reports before x/gfl's own hooks made it known.
type GFLKeeper interface {
	GetNode(ctx context.Context, id uint64) (gfltypes.Node, error)
}
