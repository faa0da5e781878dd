package unitstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/runtime"
	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	"github.com/cosmos/cosmos-sdk/testutil"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/unitstore"
)

var unwrapped int64

// opaque hides a context's type from the compiler, as the keepers' calls do (a context
// whose type it can see is devirtualized, and the sdk.Context boxed on the stack).
//
//go:noinline
func opaque(c context.Context) context.Context { return c }

// TestUnitStore: a unit's Context hands every operation of a module the store it opened
// on its first, which reads and writes the unit's branch and charges the unit's gas
// meter; each module its own store; its sdk.Context unwraps without a copy to the heap;
// and a context derived from it (a branch of its own) opens its own store, so the unit's
// store never leaks into it.
func TestUnitStore(t *testing.T) {
	key, other := storetypes.NewKVStoreKey("market"), storetypes.NewKVStoreKey("reputation")
	svc, otherSvc := unitstore.Wrap(runtime.NewKVStoreService(key)), unitstore.Wrap(runtime.NewKVStoreService(other))
	require.Same(t, svc, unitstore.Wrap(svc), "wrapped once")
	block := testutil.DefaultContextWithKeys(map[string]*storetypes.KVStoreKey{"market": key, "reputation": other}, nil, nil).WithBlockHeight(7)
	unitCtx, write := block.WithGasMeter(storetypes.NewGasMeter(1_000_000)).CacheContext()
	u := unitstore.New(unitCtx)

	kv := svc.OpenKVStore(u)
	require.True(t, kv == svc.OpenKVStore(u), "the unit's store, opened once")
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = svc.OpenKVStore(opaque(u)) }), "no opening after the first")
	require.NoError(t, kv.Set([]byte("a"), []byte("1")))
	require.Positive(t, unitCtx.GasMeter().GasConsumed(), "charged to the unit's meter")
	got, err := svc.OpenKVStore(unitCtx).Get([]byte("a"))
	require.NoError(t, err)
	require.Equal(t, []byte("1"), got, "the unit's branch")
	got, err = svc.OpenKVStore(block).Get([]byte("a"))
	require.NoError(t, err)
	require.Nil(t, got, "not the block's until the unit is written back")

	// another module's store: its own, also opened once
	require.False(t, otherSvc.OpenKVStore(u) == kv)
	require.True(t, otherSvc.OpenKVStore(u) == otherSvc.OpenKVStore(u))

	require.Equal(t, int64(7), sdk.UnwrapSDKContext(u).BlockHeight())
	opaqueU := opaque(u)
	require.Zero(t, testing.AllocsPerRun(100, func() { unwrapped = sdk.UnwrapSDKContext(opaqueU).BlockHeight() }), "unwrapped without boxing the context")

	// a branch of the unit: its own store, its writes not in the unit's until written
	inner, innerWrite := sdk.UnwrapSDKContext(u).CacheContext()
	innerKV := svc.OpenKVStore(inner)
	require.False(t, kv == innerKV, "the branch's own store")
	require.NoError(t, innerKV.Set([]byte("b"), []byte("2")))
	got, err = kv.Get([]byte("b"))
	require.NoError(t, err)
	require.Nil(t, got, "the branch's write is not the unit's before it is written")
	innerWrite()
	got, err = kv.Get([]byte("b"))
	require.NoError(t, err)
	require.Equal(t, []byte("2"), got)

	write()
	got, err = svc.OpenKVStore(block).Get([]byte("b"))
	require.NoError(t, err)
	require.Equal(t, []byte("2"), got, "the unit written back to the block")
}
