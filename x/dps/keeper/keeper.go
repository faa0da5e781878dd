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

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/internal/epochref"
	"github.com/flopsnet/flops/x/dps/types"
)

// Keeper owns x/dps's state: the halving era, the queue of ended epochs, the distribution
// in progress, the finished distributions, every provider's rewards history, and the
// verified-work ledger the work reward is paid from, with the funding links that keep
// self-paid work out of it. The reward pool itself is the module account's udps balance
// in x/bank.
type Keeper struct {
	cdc           codec.BinaryCodec
	storeService  corestore.KVStoreService
	addressCodec  address.Codec
	accountKeeper types.AccountKeeper
	bankKeeper    types.BankKeeper
	gfl           types.GFLKeeper
	reputation    types.ReputationKeeper
	market        types.MarketKeeper
	// epochs are the epochs x/epochs runs: epoch_identifier must name one (nil: not
	// checked, a keeper test without x/epochs)
	epochs epochref.Epochs
	// authority may update params (x/gov's module account).
	authority string

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
	// RewardsByEpoch indexes Rewards by epoch (setReward keeps it in step), so that an
	// epoch's rewards are pruned page by page distribution_retention_epochs later.
	RewardsByEpoch collections.KeySet[collections.Pair[uint64, sdk.AccAddress]]
	// CurrentEpoch is the reward epoch verified work is recorded under: the number of
	// the last epoch of params.epoch_identifier that started (epochs.go).
	CurrentEpoch collections.Item[uint64]
	// Work: (epoch, provider, workload class) -> verified work (work.go); an epoch's
	// records are pruned by its distribution once paid.
	Work collections.Map[collections.Triple[uint64, sdk.AccAddress, int32], types.WorkRecord]
	// FundedBy: (recipient, sender) of every successful udps bank transfer signed by the
	// sender (funding.go).
	FundedBy collections.KeySet[collections.Pair[sdk.AccAddress, sdk.AccAddress]]
	// Deferred: the payouts that failed and wait for their retry, keyed by their item
	// (distribution.go); DeferredTotal is the sum of their amounts, reserved in the pool.
	Deferred      collections.Map[collections.Pair[string, []byte], types.DeferredPayout]
	DeferredTotal collections.Item[sdkmath.Int]
	// Retries: the distribution's failed items, due again with back-off
	// (internal/blockhook).
	Retries blockhook.Retries
}

// NewKeeper builds the keeper; it panics on a malformed authority or schema, which only
// happens while wiring the app. gfl (network power, nodes, rebalance state) and
// reputation (reward multipliers) are read by the distribution; nil leaves distributions
// waiting (a keeper test of the rest of the module). market's take bounds the work reward
// cap a params update may set; nil: a chain without x/market, whose work earns no fees.
// epochs are x/epochs' epochs, one of which epoch_identifier must name.
func NewKeeper(cdc codec.BinaryCodec, storeService corestore.KVStoreService, addressCodec address.Codec, authority string,
	ak types.AccountKeeper, bk types.BankKeeper, gfl types.GFLKeeper, reputation types.ReputationKeeper, market types.MarketKeeper,
	epochs epochref.Epochs,
) Keeper {
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
		gfl:           gfl,
		reputation:    reputation,
		market:        market,
		epochs:        epochs,
		authority:     authority,
		Params:        collections.NewItem(sb, types.ParamsKey, "params", codec.CollValue[types.Params](cdc)),
		EraState:      collections.NewItem(sb, types.EraKey, "era", codec.CollValue[types.EraState](cdc)),
		PendingEpochs: collections.NewKeySet(sb, types.PendingEpochsKey, "pending_epochs", collections.Uint64Key),
		InProgress:    collections.NewItem(sb, types.InProgressKey, "in_progress", codec.CollValue[types.Distribution](cdc)),
		Distributions: collections.NewMap(sb, types.DistributionsKey, "distributions", collections.Uint64Key, codec.CollValue[types.Distribution](cdc)),
		Rewards: collections.NewMap(sb, types.RewardsKey, "rewards",
			collections.PairKeyCodec(sdk.AccAddressKey, collections.Uint64Key), codec.CollValue[types.ProviderReward](cdc)),
		RewardsByEpoch: collections.NewKeySet(sb, types.RewardsByEpochKey, "rewards_by_epoch",
			collections.PairKeyCodec(collections.Uint64Key, sdk.AccAddressKey)),
		CurrentEpoch: collections.NewItem(sb, types.CurrentEpochKey, "current_epoch", collections.Uint64Value),
		Work: collections.NewMap(sb, types.WorkKey, "work",
			collections.TripleKeyCodec(collections.Uint64Key, sdk.AccAddressKey, collections.Int32Key), codec.CollValue[types.WorkRecord](cdc)),
		FundedBy: collections.NewKeySet(sb, types.FundedByKey, "funded_by", collections.PairKeyCodec(sdk.AccAddressKey, sdk.AccAddressKey)),
		Deferred: collections.NewMap(sb, types.DeferredKey, "deferred",
			collections.PairKeyCodec(collections.StringKey, collections.BytesKey), codec.CollValue[types.DeferredPayout](cdc)),
		DeferredTotal: collections.NewItem(sb, types.DeferredTotalKey, "deferred_total", sdk.IntValue),
		Retries:       blockhook.NewRetries(sb, types.ModuleName, types.RetryAttemptsKey, types.RetryDueKey),
	}
	schema, err := sb.Build()
	if err != nil {
		panic(err)
	}
	k.Schema = schema
	return k
}

// missingDeps names the first dependency of a distribution that is not set, or "".
func (k Keeper) missingDeps() string {
	switch {
	case k.gfl == nil:
		return "gfl"
	case k.reputation == nil:
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
