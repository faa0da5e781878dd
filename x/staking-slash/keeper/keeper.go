package keeper

import (
	"context"

	"cosmossdk.io/collections"
	"cosmossdk.io/core/address"
	corestore "cosmossdk.io/core/store"
	errorsmod "cosmossdk.io/errors"

	"github.com/cosmos/cosmos-sdk/codec"

	"github.com/flopsnet/flops/x/staking-slash/types"
)

// Keeper owns x/stakingslash's state.
type Keeper struct {
	cdc           codec.BinaryCodec
	storeService  corestore.KVStoreService
	addressCodec  address.Codec
	accountKeeper types.AccountKeeper
	// authority may update params and approve nodes (x/gov's module account).
	authority string

	Schema collections.Schema
	Params collections.Item[types.Params]
}

// NewKeeper builds the keeper; it panics on a malformed authority or schema, which only
// happens while wiring the app.
func NewKeeper(cdc codec.BinaryCodec, storeService corestore.KVStoreService, addressCodec address.Codec, authority string, ak types.AccountKeeper) Keeper {
	if _, err := addressCodec.StringToBytes(authority); err != nil {
		panic(errorsmod.Wrapf(err, "stakingslash: invalid authority %q", authority))
	}
	sb := collections.NewSchemaBuilder(storeService)
	k := Keeper{
		cdc:           cdc,
		storeService:  storeService,
		addressCodec:  addressCodec,
		accountKeeper: ak,
		authority:     authority,
		Params:        collections.NewItem(sb, types.ParamsKey, "params", codec.CollValue[types.Params](cdc)),
	}
	schema, err := sb.Build()
	if err != nil {
		panic(err)
	}
	k.Schema = schema
	return k
}

// Authority returns the address allowed to update params.
func (k Keeper) Authority() string { return k.authority }

// GetParams returns the stored params.
func (k Keeper) GetParams(ctx context.Context) (types.Params, error) {
	return k.Params.Get(ctx)
}
