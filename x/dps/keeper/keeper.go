package keeper

import (
	"context"
	"errors"

	"cosmossdk.io/collections"
	"cosmossdk.io/core/address"
	corestore "cosmossdk.io/core/store"
	errorsmod "cosmossdk.io/errors"
	"cosmossdk.io/log/v2"
	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/codec"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/dps/types"
)

// wiring holds the keepers set after construction (the app builds x/dps before some of
// them); a pointer, so that every copy of the value-type Keeper sees them.
type wiring struct {
	gfl        types.GFLKeeper
	market     types.MarketKeeper
	reputation types.ReputationKeeper
	epochs     types.EpochsKeeper
}

// Keeper owns x/dps's state: the halving era, the queue of ended epochs, the distribution
// in progress, the finished distributions and every provider's rewards history. The
// reward pool itself is the module account's udps balance in x/bank.
type Keeper struct {
	cdc           codec.BinaryCodec
	storeService  corestore.KVStoreService
	addressCodec  address.Codec
	accountKeeper types.AccountKeeper
	bankKeeper    types.BankKeeper
	// authority may update params (x/gov's module account).
	authority string
	wiring    *wiring

	Schema collections.Schema
	Params collections.Item[types.Params]
	// EraState is the halving state; set at genesis.
	EraState collections.Item[types.EraState]
	// PendingEpochs are the ended epochs waiting for their distribution, in order.
	PendingEpochs collections.KeySet[uint64]
	// InProgress is the distribution being paid, one at a time.
	InProgress collections.Item[types.Distribution]
	// Distributions: epoch -> finished distribution.
	Distributions collections.Map[uint64, types.Distribution]
	// Rewards: (provider, epoch) -> what the provider received from that epoch.
	Rewards collections.Map[collections.Pair[sdk.AccAddress, uint64], types.ProviderReward]
}

// NewKeeper builds the keeper; it panics on a malformed authority or schema, which only
// happens while wiring the app. x/gfl, x/market, x/reputation and x/epochs come later
// through SetGFL, SetMarket, SetReputation and SetEpochs.
func NewKeeper(cdc codec.BinaryCodec, storeService corestore.KVStoreService, addressCodec address.Codec, authority string, ak types.AccountKeeper, bk types.BankKeeper) Keeper {
	if _, err := addressCodec.StringToBytes(authority); err != nil {
		panic(errorsmod.Wrapf(err, "dps: invalid authority %q", authority))
	}
	sb := collections.NewSchemaBuilder(storeService)
	k := Keeper{
		cdc:           cdc,
		storeService:  storeService,
		addressCodec:  addressCodec,
		accountKeeper: ak,
		bankKeeper:    bk,
		authority:     authority,
		wiring:        &wiring{},
		Params:        collections.NewItem(sb, types.ParamsKey, "params", codec.CollValue[types.Params](cdc)),
		EraState:      collections.NewItem(sb, types.EraKey, "era", codec.CollValue[types.EraState](cdc)),
		PendingEpochs: collections.NewKeySet(sb, types.PendingEpochsKey, "pending_epochs", collections.Uint64Key),
		InProgress:    collections.NewItem(sb, types.InProgressKey, "in_progress", codec.CollValue[types.Distribution](cdc)),
		Distributions: collections.NewMap(sb, types.DistributionsKey, "distributions", collections.Uint64Key, codec.CollValue[types.Distribution](cdc)),
		Rewards: collections.NewMap(sb, types.RewardsKey, "rewards",
			collections.PairKeyCodec(sdk.AccAddressKey, collections.Uint64Key), codec.CollValue[types.ProviderReward](cdc)),
	}
	schema, err := sb.Build()
	if err != nil {
		panic(err)
	}
	k.Schema = schema
	return k
}

// SetGFL sets x/gfl (network power, nodes, rebalance state).
func (k Keeper) SetGFL(g types.GFLKeeper) { k.wiring.gfl = g }

// SetMarket sets x/market (verified work records).
func (k Keeper) SetMarket(m types.MarketKeeper) { k.wiring.market = m }

// SetReputation sets x/reputation (reward multipliers).
func (k Keeper) SetReputation(r types.ReputationKeeper) { k.wiring.reputation = r }

// SetEpochs sets x/epochs (the current epoch number for CurrentWorkEpoch).
func (k Keeper) SetEpochs(e types.EpochsKeeper) { k.wiring.epochs = e }

// missingDeps names the first dependency of a distribution that is not set, or "".
func (k Keeper) missingDeps() string {
	switch {
	case k.wiring.gfl == nil:
		return "gfl"
	case k.wiring.market == nil:
		return "market"
	case k.wiring.reputation == nil:
		return "reputation"
	}
	return ""
}

// Authority returns the address allowed to update params.
func (k Keeper) Authority() string { return k.authority }

// GetParams returns the stored params.
func (k Keeper) GetParams(ctx context.Context) (types.Params, error) {
	return k.Params.Get(ctx)
}

// PoolAddress is the reward pool: the dps module account.
func (k Keeper) PoolAddress() sdk.AccAddress {
	return k.accountKeeper.GetModuleAddress(types.ModuleName)
}

// PoolBalance is the reward pool's udps balance.
func (k Keeper) PoolBalance(ctx context.Context) sdkmath.Int {
	return k.bankKeeper.GetBalance(ctx, k.PoolAddress(), types.Denom).Amount
}

// GetEra returns the halving state.
func (k Keeper) GetEra(ctx context.Context) (types.EraState, error) {
	return k.EraState.Get(ctx)
}

// GetInProgress returns the distribution being paid and whether there is one.
func (k Keeper) GetInProgress(ctx context.Context) (types.Distribution, bool, error) {
	d, err := k.InProgress.Get(ctx)
	if errors.Is(err, collections.ErrNotFound) {
		return types.Distribution{}, false, nil
	}
	return d, err == nil, err
}

func (k Keeper) logger(ctx sdk.Context) log.Logger {
	return ctx.Logger().With("module", "x/"+types.ModuleName)
}
