package keeper

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/runtime"
	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	"github.com/cosmos/cosmos-sdk/testutil"
	sdk "github.com/cosmos/cosmos-sdk/types"
)

var unwrapped int64

//go:noinline
func opaque(c context.Context) context.Context { return c }

// TestUnitContextStore: a unit's context hands every operation the store it opened once,
// which reads and writes the unit's branch and charges the unit's gas meter; its
// sdk.Context unwraps without a copy to the heap; and a context derived from it (a branch
// of its own, here) opens its own store, so the unit's store never leaks into it.
func TestUnitContextStore(t *testing.T) {
	key := storetypes.NewKVStoreKey("market")
	svc := unitStoreService{runtime.NewKVStoreService(key)}
	k := Keeper{storeService: svc}
	block := testutil.DefaultContextWithDB(t, key, storetypes.NewTransientStoreKey("t")).Ctx.WithBlockHeight(7)
	unitCtx, write := block.WithGasMeter(storetypes.NewGasMeter(1_000_000)).CacheContext()
	u := k.unit(unitCtx)

	kv := svc.OpenKVStore(u)
	require.True(t, u.(*unitContext).kv == kv, "the unit's store, opened once")
	require.NoError(t, kv.Set([]byte("a"), []byte("1")))
	require.Positive(t, unitCtx.GasMeter().GasConsumed(), "charged to the unit's meter")
	got, err := svc.OpenKVStore(unitCtx).Get([]byte("a"))
	require.NoError(t, err)
	require.Equal(t, []byte("1"), got, "the unit's branch")
	got, err = svc.OpenKVStore(block).Get([]byte("a"))
	require.NoError(t, err)
	require.Nil(t, got, "not the block's until the unit is written back")

	require.Equal(t, int64(7), sdk.UnwrapSDKContext(u).BlockHeight())
	// (through a call the compiler cannot see into, as the scheduler's calls are: a
	// context whose type it knows is devirtualized and boxed on the stack)
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
