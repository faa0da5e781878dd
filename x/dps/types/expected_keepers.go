package types

import (
	"context"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	epochstypes "github.com/cosmos/cosmos-sdk/x/epochs/types"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
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

// MarketKeeper is the part of x/market this module reads: an epoch's verified work, in
// (provider, workload) order, and its pruning once paid.
type MarketKeeper interface {
	WorkRecords(ctx context.Context, epoch uint64, after *markettypes.WorkCursor, limit int) ([]markettypes.ProviderWork, bool, error)
	PruneWork(ctx context.Context, epoch uint64, limit int) (bool, error)
}

// ReputationKeeper scores nodes and providers: the score in [0, 1] and whether it is at
// least x/reputation's min_score (eligible).
type ReputationKeeper interface {
	Reputation(ctx context.Context, nodeID uint64) (sdkmath.LegacyDec, bool, error)
	ProviderReputation(ctx context.Context, operator sdk.AccAddress) (sdkmath.LegacyDec, bool, error)
}

// EpochsKeeper reads an x/epochs epoch. The SDK's *epochskeeper.Keeper implements it as
// it is (its GetEpochInfo takes an sdk.Context).
type EpochsKeeper interface {
	GetEpochInfo(ctx sdk.Context, identifier string) (epochstypes.EpochInfo, error)
}
