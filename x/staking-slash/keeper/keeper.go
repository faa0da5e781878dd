package keeper

import (
	"context"
	"errors"
	"time"

	"cosmossdk.io/collections"
	"cosmossdk.io/collections/indexes"
	"cosmossdk.io/core/address"
	corestore "cosmossdk.io/core/store"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/codec"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/internal/collkeys"
	"github.com/flopsnet/flops/internal/unitstore"
	"github.com/flopsnet/flops/x/staking-slash/types"
)

// UnbondingKey is (provider, unbonding id).
type UnbondingKey = collections.Pair[sdk.AccAddress, uint64]

// UnbondingIndexes are the secondary indexes of the unbonding entries.
type UnbondingIndexes struct {
	// ByCompletion is the maturity queue: (completion time, primary key). EndBlock walks
	// only the range up to the block time.
	ByCompletion *indexes.Multi[time.Time, UnbondingKey, types.UnbondingEntry]
}

// IndexesList implements collections.Indexes.
func (i UnbondingIndexes) IndexesList() []collections.Index[UnbondingKey, types.UnbondingEntry] {
	return []collections.Index[UnbondingKey, types.UnbondingEntry]{i.ByCompletion}
}

func newUnbondingIndexes(sb *collections.SchemaBuilder) UnbondingIndexes {
	return UnbondingIndexes{
		ByCompletion: indexes.NewMulti(
			sb, types.UnbondingsByCompletionKey, "unbondings_by_completion",
			collkeys.TimeKey,
			collections.PairKeyCodec(sdk.AccAddressKey, collections.Uint64Key),
			func(_ UnbondingKey, e types.UnbondingEntry) (time.Time, error) { return e.CompletionTime, nil },
		),
	}
}

// hooksRef lets every copy of the (value-type) Keeper see hooks set after the copy.
type hooksRef struct {
	hooks types.StakingSlashHooks
}

// Keeper owns x/stakingslash's state: provider collateral, unbonding entries, the slash
// history and the running totals that the collateral invariant checks against the module
// account's balance.
type Keeper struct {
	cdc           codec.BinaryCodec
	storeService  corestore.KVStoreService
	addressCodec  address.Codec
	accountKeeper types.AccountKeeper
	bankKeeper    types.BankKeeper
	// authority may update params (x/gov's module account).
	authority string
	hooks     *hooksRef

	Schema      collections.Schema
	Params      collections.Item[types.Params]
	Collaterals collections.Map[sdk.AccAddress, types.Collateral]
	Unbondings  *collections.IndexedMap[UnbondingKey, types.UnbondingEntry, UnbondingIndexes]
	Slashes     collections.Map[collections.Pair[sdk.AccAddress, uint64], types.SlashRecord]
	// SlashExpiry: (height, provider, id) of each slash record, deleted at that height
	// (slash_retention_blocks after the slash).
	SlashExpiry collections.KeySet[collections.Triple[int64, sdk.AccAddress, uint64]]
	// UnbondingSeq and SlashSeq give the next unbonding entry and slash record ids.
	UnbondingSeq collections.Sequence
	SlashSeq     collections.Sequence
	// TotalBonded is the sum of every Collateral.Bonded, TotalUnbonding the sum of every
	// open UnbondingEntry.Amount, udps; both kept exact on every change.
	TotalBonded    collections.Item[sdkmath.Int]
	TotalUnbonding collections.Item[sdkmath.Int]
	// Retries counts the failed attempts of each unbonding payout (EndBlock).
	Retries blockhook.Retries
}

// NewKeeper builds the keeper; it panics on a malformed authority or schema, which only
// happens while wiring the app.
func NewKeeper(cdc codec.BinaryCodec, storeService corestore.KVStoreService, addressCodec address.Codec, authority string, ak types.AccountKeeper, bk types.BankKeeper) Keeper {
	if _, err := addressCodec.StringToBytes(authority); err != nil {
		panic(errorsmod.Wrapf(err, "stakingslash: invalid authority %q", authority))
	}
	storeService = unitstore.Wrap(storeService) // a unit's store opened once (unitstore)
	sb := collections.NewSchemaBuilder(storeService)
	k := Keeper{
		cdc:           cdc,
		storeService:  storeService,
		addressCodec:  addressCodec,
		accountKeeper: ak,
		bankKeeper:    bk,
		authority:     authority,
		hooks:         &hooksRef{},
		Params:        collections.NewItem(sb, types.ParamsKey, "params", collkeys.DecodeOnce(codec.CollValue[types.Params](cdc))),
		Collaterals: collections.NewMap(sb, types.CollateralsKey, "collaterals",
			sdk.AccAddressKey, codec.CollValue[types.Collateral](cdc)),
		Unbondings: collections.NewIndexedMap(sb, types.UnbondingsKey, "unbondings",
			collections.PairKeyCodec(sdk.AccAddressKey, collections.Uint64Key),
			codec.CollValue[types.UnbondingEntry](cdc), newUnbondingIndexes(sb)),
		Slashes: collections.NewMap(sb, types.SlashesKey, "slashes",
			collections.PairKeyCodec(sdk.AccAddressKey, collections.Uint64Key), codec.CollValue[types.SlashRecord](cdc)),
		SlashExpiry: collections.NewKeySet(sb, types.SlashExpiryKey, "slash_expiry",
			collections.TripleKeyCodec(collections.Int64Key, sdk.AccAddressKey, collections.Uint64Key)),
		UnbondingSeq:   collections.NewSequence(sb, types.UnbondingSeqKey, "unbonding_seq"),
		SlashSeq:       collections.NewSequence(sb, types.SlashSeqKey, "slash_seq"),
		TotalBonded:    collections.NewItem(sb, types.TotalBondedKey, "total_bonded", sdk.IntValue),
		TotalUnbonding: collections.NewItem(sb, types.TotalUnbondingKey, "total_unbonding", sdk.IntValue),
		Retries:        blockhook.NewRetries(sb, types.ModuleName, types.RetryAttemptsKey, types.RetryDueKey),
	}
	schema, err := sb.Build()
	if err != nil {
		panic(err)
	}
	k.Schema = schema
	return k
}

// SetHooks installs the hooks (x/reputation) on this keeper and every copy of it. Calling
// it twice, or with nil, is a wiring error and panics.
func (k Keeper) SetHooks(h types.StakingSlashHooks) {
	if h == nil {
		panic("stakingslash: SetHooks(nil)")
	}
	if k.hooks.hooks != nil {
		panic("stakingslash: hooks already set")
	}
	k.hooks.hooks = h
}

// Authority returns the address allowed to update params.
func (k Keeper) Authority() string { return k.authority }

// GetParams returns the stored params.
func (k Keeper) GetParams(ctx context.Context) (types.Params, error) {
	return k.Params.Get(ctx)
}

// SetParams validates and stores new params. collateral_denom cannot change while any
// collateral is bonded or unbonding: the module account's coins of the old denom would no
// longer be accounted for.
func (k Keeper) SetParams(ctx context.Context, p types.Params) error {
	if err := p.Validate(); err != nil {
		return err
	}
	old, err := k.Params.Get(ctx)
	if err != nil && !errors.Is(err, collections.ErrNotFound) {
		return err
	}
	if err == nil && old.CollateralDenom != p.CollateralDenom {
		// collateral, unbonding entries, node locks and slashes are all kept in the one
		// denom: a change would orphan what the module account holds, and a proposal
		// cannot know what will be bonded by the time it executes
		return errorsmod.Wrapf(types.ErrInvalidParams, "collateral_denom %s -> %s: the collateral denom cannot be changed by a params update",
			old.CollateralDenom, p.CollateralDenom)
	}
	return k.Params.Set(ctx, p)
}

// ModuleAddress is the module account that holds all bonded and unbonding collateral.
func (k Keeper) ModuleAddress() sdk.AccAddress {
	return k.accountKeeper.GetModuleAddress(types.ModuleName)
}

// getTotal reads a running total; unset reads as zero.
func getTotal(ctx context.Context, item collections.Item[sdkmath.Int]) (sdkmath.Int, error) {
	v, err := item.Get(ctx)
	if errors.Is(err, collections.ErrNotFound) {
		return sdkmath.ZeroInt(), nil
	}
	return v, err
}

// addTotal adds delta (which may be negative) to a running total.
func addTotal(ctx context.Context, item collections.Item[sdkmath.Int], delta sdkmath.Int) error {
	if delta.IsZero() {
		return nil
	}
	v, err := getTotal(ctx, item)
	if err != nil {
		return err
	}
	return item.Set(ctx, v.Add(delta))
}

// checkAddress refuses an empty or malformed address.
func checkAddress(role string, addr sdk.AccAddress) error {
	if err := sdk.VerifyAddressFormat(addr); err != nil {
		return errorsmod.Wrapf(types.ErrInvalidAddress, "%s address %X: %s", role, []byte(addr), err)
	}
	return nil
}

func (k Keeper) addressString(addr sdk.AccAddress) (string, error) {
	return k.addressCodec.BytesToString(addr)
}
