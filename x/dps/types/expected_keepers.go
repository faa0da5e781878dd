package types

import (
	"context"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// AccountKeeper is the part of x/auth this module uses.
type AccountKeeper interface {
	GetModuleAccount(ctx context.Context, name string) sdk.ModuleAccountI
	GetModuleAddress(name string) sdk.AccAddress
}

// BankKeeper is the part of x/bank this module uses: it reads the pool and the supply and
// pays from the pool. x/dps never mints.
type BankKeeper interface {
	GetBalance(ctx context.Context, addr sdk.AccAddress, denom string) sdk.Coin
	GetSupply(ctx context.Context, denom string) sdk.Coin
	SendCoinsFromModuleToAccount(ctx context.Context, senderModule string, recipientAddr sdk.AccAddress, amt sdk.Coins) error
}

// GFLKeeper is the part of x/gfl this module reads: the network power, the nodes page by
// page, and whether a rebalance is moving the powers.
type GFLKeeper interface {
	GetNetworkPower(ctx context.Context) (gfltypes.NetworkPower, error)
	NodesAfter(ctx context.Context, after uint64, limit int) ([]gfltypes.Node, bool, error)
	RebalancePending(ctx context.Context) (bool, error)
}

// ReputationKeeper scores nodes and providers: the score in [0, 1] and whether it is at
// least x/reputation's min_score (eligible).
type ReputationKeeper interface {
	Reputation(ctx context.Context, nodeID uint64) (sdkmath.LegacyDec, bool, error)
	ProviderReputation(ctx context.Context, operator sdk.AccAddress) (sdkmath.LegacyDec, bool, error)
}

// MarketKeeper is x/market's take on every provider payment: the work reward cap must
// stay below it (x/market's WashLoopLoses).
type MarketKeeper interface {
	TakeRatePpm(ctx context.Context) (uint32, error)
}
