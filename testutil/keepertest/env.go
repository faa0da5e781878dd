// Package keepertest builds a module keeper on a real in-memory store, with the codec,
// address codec and gov authority the app uses, for keeper unit tests.
package keepertest

import (
	"context"
	"testing"
	"time"

	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"
	dbm "github.com/cosmos/cosmos-db"

	"cosmossdk.io/core/address"
	corestore "cosmossdk.io/core/store"
	"cosmossdk.io/log/v2"

	"github.com/cosmos/cosmos-sdk/codec"
	"github.com/cosmos/cosmos-sdk/runtime"
	sdkstore "github.com/cosmos/cosmos-sdk/store/v2"
	storecache "github.com/cosmos/cosmos-sdk/store/v2/cache"
	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
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
	// TransientService is the transient store mounted next to it.
	TransientService corestore.TransientStoreService
	Codec            codec.Codec
	AddressCodec     address.Codec
	// Authority is x/gov's module account, the params authority in the app.
	Authority string
}

// GenesisTime is the block time of a fresh Env.
var GenesisTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// NewEnv mounts one KV store named storeKey and returns a context at height 1.
func NewEnv(t testing.TB, storeKey string, modules ...module.AppModuleBasic) Env {
	t.Helper()
	return newEnv(t, dbm.NewMemDB(), storeKey, nil, modules...)
}

// NewEnvOnDB is NewEnv with the store on db (an on-disk database, as a node's
// application.db, where NewEnv keeps it in memory).
func NewEnvOnDB(t testing.TB, db dbm.DB, storeKey string, modules ...module.AppModuleBasic) Env {
	t.Helper()
	return newEnv(t, db, storeKey, nil, modules...)
}

// NewEnvWithInterBlockCache is NewEnv with the store behind an SDK inter-block cache, as
// a node started with --inter-block-cache=true has it (store.NewCommitKVStoreCacheManager:
// an ARC of 1,000 entries per store).
func NewEnvWithInterBlockCache(t testing.TB, storeKey string, modules ...module.AppModuleBasic) Env {
	t.Helper()
	return NewEnvWithInterBlockCacheSize(t, storecache.DefaultCommitKVStoreCacheSize, storeKey, modules...)
}

// NewEnvWithInterBlockCacheSize is NewEnvWithInterBlockCache with an ARC of size entries.
func NewEnvWithInterBlockCacheSize(t testing.TB, size uint, storeKey string, modules ...module.AppModuleBasic) Env {
	t.Helper()
	return newEnv(t, dbm.NewMemDB(), storeKey, storecache.NewCommitKVStoreCacheManager(size), modules...)
}

func newEnv(t testing.TB, db dbm.DB, storeKey string, cache storetypes.MultiStorePersistentCache, modules ...module.AppModuleBasic) Env {
	t.Helper()
	key := storetypes.NewKVStoreKey(storeKey)
	tkey := storetypes.NewTransientStoreKey("transient_" + storeKey)
	cms := sdkstore.NewCommitMultiStore(db, log.NewNopLogger())
	if cache != nil {
		cms.SetInterBlockCache(cache)
	}
	cms.MountStoreWithDB(key, storetypes.StoreTypeIAVL, db)
	cms.MountStoreWithDB(tkey, storetypes.StoreTypeTransient, db)
	if err := cms.LoadLatestVersion(); err != nil {
		t.Fatal(err)
	}
	ctx := sdk.NewContext(cms, cmtproto.Header{}, false, log.NewNopLogger()).WithBlockHeader(cmtproto.Header{Height: 1, Time: GenesisTime, ChainID: "flops-test-1"})
	enc := moduletestutil.MakeTestEncodingConfig(modules...)
	return Env{
		Ctx:              ctx,
		StoreService:     runtime.NewKVStoreService(key),
		TransientService: runtime.NewTransientStoreService(tkey),
		Codec:            enc.Codec,
		AddressCodec:     chain.NewAddressCodec(chain.Bech32Prefix),
		Authority:        authtypes.NewModuleAddress(govtypes.ModuleName).String(),
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
