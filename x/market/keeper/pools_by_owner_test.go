package keeper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/query"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/keeper"
	"github.com/flopsnet/flops/x/market/types"
)

// openPools opens n pools for owner (funded first) and returns their ids.
func openPools(t *testing.T, f *fixture, owner string, n int) []uint64 {
	t.Helper()
	f.fund(owner, sdkmath.NewInt(1_000_000_000))
	var ids []uint64
	for range n {
		res, err := f.ms.CreatePool(f.ctx, &types.MsgCreatePool{Owner: owner, Spec: types.PoolSpec{
			Workload: gfltypes.WORKLOAD_CLASS_BATCH, Runtime: types.RUNTIME_PROCESS, Command: []string{"serve"},
			Verification: types.VERIFICATION_CLASS_NONE, UnitPrice: sdk.NewInt64Coin(udps, 1_000),
			Budget: sdk.NewInt64Coin(udps, 10_000), MaxProviders: 2, UnitMaxDuration: time.Minute,
		}})
		require.NoError(t, err)
		ids = append(ids, res.PoolId)
	}
	return ids
}

// poolsOf pages through an owner's pools by next key, limit a page.
func poolsOf(t *testing.T, f *fixture, owner string, limit uint64, reverse bool) []uint64 {
	t.Helper()
	qs := keeper.NewQueryServerImpl(f.k)
	var ids []uint64
	var key []byte
	for range 100 {
		res, err := qs.PoolsByOwner(f.ctx, &types.QueryPoolsByOwnerRequest{Owner: owner, Pagination: &query.PageRequest{Key: key, Limit: limit, Reverse: reverse}})
		require.NoError(t, err)
		for _, p := range res.Pools {
			require.Equal(t, owner, p.Owner)
			ids = append(ids, p.Id)
		}
		if len(res.Pagination.NextKey) == 0 {
			return ids
		}
		key = res.Pagination.NextKey
	}
	t.Fatal("no last page after 100")
	return nil
}

// PoolsByOwner lists the pools a client opened, and no one else's, in id order (newest
// first in reverse), whole when paged by next key; a pool pruned after its close leaves
// the list; a malformed owner is refused.
func TestPoolsByOwnerListsAClientsPools(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.JobRetentionBlocks = 5 })
	other := f.operator("other")
	var mine []uint64
	for range 3 {
		mine = append(mine, openPools(t, f, f.client, 1)...)
		openPools(t, f, other, 2)
	}
	for _, limit := range []uint64{1, 2, 0} {
		require.Equal(t, mine, poolsOf(t, f, f.client, limit, false), "pages of %d", limit)
	}
	require.Equal(t, []uint64{mine[2], mine[1], mine[0]}, poolsOf(t, f, f.client, 2, true))
	require.Len(t, poolsOf(t, f, other, 0, false), 6)

	_, err := f.ms.ClosePool(f.ctx, &types.MsgClosePool{Owner: f.client, PoolId: mine[0]})
	require.NoError(t, err)
	f.blocks(int(f.params().JobRetentionBlocks) + 2)
	_, err = f.k.Pools.Get(f.ctx, mine[0])
	require.Error(t, err, "pruned")
	require.Equal(t, mine[1:], poolsOf(t, f, f.client, 0, false), "a pruned pool leaves the list")

	_, err = keeper.NewQueryServerImpl(f.k).PoolsByOwner(f.ctx, &types.QueryPoolsByOwnerRequest{Owner: "not-an-address"})
	require.ErrorContains(t, err, "owner")
}

// Version 8 indexes pools by owner. The migration from 7 writes an entry for each pool:
// a store of version 7's layout (the pools, no index) lists nothing by owner, and after
// the migration every owner's pools, with the invariants holding.
func TestMigrate7to8IndexesPoolsByOwner(t *testing.T) {
	f := newFixture(t, nil)
	other := f.operator("other")
	mine := openPools(t, f, f.client, 3)
	theirs := openPools(t, f, other, 2)

	// version 7's layout: no index entries
	store := f.env.StoreService.OpenKVStore(f.ctx)
	it, err := store.Iterator(types.PoolsByOwnerKey.Bytes(), storetypes.PrefixEndBytes(types.PoolsByOwnerKey.Bytes()))
	require.NoError(t, err)
	var keys [][]byte
	for ; it.Valid(); it.Next() {
		keys = append(keys, it.Key())
	}
	require.NoError(t, it.Close())
	require.Len(t, keys, 5)
	for _, k := range keys {
		require.NoError(t, store.Delete(k))
	}
	require.Empty(t, poolsOf(t, f, f.client, 0, false))

	require.NoError(t, keeper.NewMigrator(f.k).Migrate7to8(f.ctx))
	require.Equal(t, mine, poolsOf(t, f, f.client, 0, false))
	require.Equal(t, theirs, poolsOf(t, f, other, 0, false))
	f.assertInvariants()
}

// Version 10 stores each pool's spec apart from its record, which keeps the spec without
// its command and environment. The migration from 9 splits a store of version 9's layout
// (the whole spec in the record); the queries give the pools whole before and after, and
// without their specs with omit_spec.
func TestMigrate9to10StoresPoolSpecsApart(t *testing.T) {
	f := newFixture(t, nil)
	ids := openPools(t, f, f.client, 3)
	qs := keeper.NewQueryServerImpl(f.k)
	whole := map[uint64]types.Pool{}
	for _, id := range ids {
		res, err := qs.Pool(f.ctx, &types.QueryPoolRequest{PoolId: id})
		require.NoError(t, err)
		require.Equal(t, []string{"serve"}, res.Pool.Spec.Command)
		whole[id] = res.Pool
		rec, err := f.k.Pools.Get(f.ctx, id)
		require.NoError(t, err)
		require.Empty(t, rec.Spec.Command, "the record holds no command")
	}

	// version 9's layout: the whole spec in the record, none apart
	for _, id := range ids {
		require.NoError(t, f.k.Pools.Set(f.ctx, id, whole[id]))
		require.NoError(t, f.k.PoolSpecs.Remove(f.ctx, id))
	}
	msg, broken := f.k.EscrowInvariant(f.ctx)
	require.True(t, broken, "version 9's layout is not this version's: %s", msg)

	require.NoError(t, keeper.NewMigrator(f.k).Migrate9to10(f.ctx))
	for _, id := range ids {
		rec, err := f.k.Pools.Get(f.ctx, id)
		require.NoError(t, err)
		require.Empty(t, rec.Spec.Command)
		require.Empty(t, rec.Spec.Env)
		res, err := qs.Pool(f.ctx, &types.QueryPoolRequest{PoolId: id})
		require.NoError(t, err)
		require.Equal(t, whole[id], res.Pool)
	}
	all, err := qs.PoolsByOwner(f.ctx, &types.QueryPoolsByOwnerRequest{Owner: f.client})
	require.NoError(t, err)
	none, err := qs.PoolsByOwner(f.ctx, &types.QueryPoolsByOwnerRequest{Owner: f.client, OmitSpec: true})
	require.NoError(t, err)
	every, err := qs.Pools(f.ctx, &types.QueryPoolsRequest{OmitSpec: true})
	require.NoError(t, err)
	require.Len(t, all.Pools, 3)
	for i, pl := range all.Pools {
		require.Equal(t, whole[pl.Id], pl)
		pl.Spec = types.PoolSpec{}
		require.Equal(t, pl, none.Pools[i], "without its spec")
		require.Equal(t, pl, every.Pools[i], "without its spec")
		one, err := qs.Pool(f.ctx, &types.QueryPoolRequest{PoolId: pl.Id, OmitSpec: true})
		require.NoError(t, err)
		require.Equal(t, pl, one.Pool, "one pool without its spec")
	}
	f.assertInvariants()
}
