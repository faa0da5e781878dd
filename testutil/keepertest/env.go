// Package keepertest builds a module keeper on a real in-memory store, with the codec,
// address codec and gov authority the app uses, for keeper unit tests.
package keepertest

import (
	"context"
	"testing"
	"time"

	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"

	"cosmossdk.io/core/address"
	corestore "cosmossdk.io/core/store"

	"github.com/cosmos/cosmos-sdk/codec"
	"github.com/cosmos/cosmos-sdk/runtime"
	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	sdktestutil "github.com/cosmos/cosmos-sdk/testutil"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/module"
	moduletestutil "github.com/cosmos/cosmos-sdk/types/module/testutil"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"

	"github.com/flopsnet/flops/internal/chain"
)

// Env is a context on a fresh store plus what a keeper constructor needs.
type Env struct {
	Ctx          sdk.Context
	StoreService corestore.KVStoreService
	Codec        codec.Codec
	AddressCodec address.Codec
	// Authority is x/gov's module account, the params authority in the app.
	Authority string
}

// GenesisTime is the block time of a fresh Env.
var GenesisTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// NewEnv mounts one KV store named storeKey and returns a context at height 1.
func NewEnv(t testing.TB, storeKey string, modules ...module.AppModuleBasic) Env {
	t.Helper()
	key := storetypes.NewKVStoreKey(storeKey)
	tkey := storetypes.NewTransientStoreKey("transient_" + storeKey)
	tc := sdktestutil.DefaultContextWithDB(t, key, tkey)
	ctx := tc.Ctx.WithBlockHeader(cmtproto.Header{Height: 1, Time: GenesisTime, ChainID: "flops-test-1"})
	enc := moduletestutil.MakeTestEncodingConfig(modules...)
	return Env{
		Ctx:          ctx,
		StoreService: runtime.NewKVStoreService(key),
		Codec:        enc.Codec,
		AddressCodec: chain.NewAddressCodec(chain.Bech32Prefix),
		Authority:    authtypes.NewModuleAddress(govtypes.ModuleName).String(),
	}
}

// AccountKeeper is a fake x/auth that knows module accounts.
type AccountKeeper struct {
	// Created records the module accounts asked for, in order.
	Created []string
}

// GetModuleAddress returns a module account's address.
func (a *AccountKeeper) GetModuleAddress(name string) sdk.AccAddress {
	return authtypes.NewModuleAddress(name)
}

// GetModuleAccount returns a module account and records that it was asked for.
func (a *AccountKeeper) GetModuleAccount(_ context.Context, name string) sdk.ModuleAccountI {
	a.Created = append(a.Created, name)
	return authtypes.NewEmptyModuleAccount(name)
}

// Addr returns a deterministic test address with the flops prefix, distinct per seed.
func Addr(seed string) string {
	return sdk.AccAddress(authtypes.NewModuleAddress("test/" + seed)).String()
}
