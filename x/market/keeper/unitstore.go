package keeper

import (
	"context"

	corestore "cosmossdk.io/core/store"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

// unitContext is an assignment unit's context with the market's store opened once for the
// unit. The store service opens the store again for every operation a collection makes:
// it unwraps the context and wraps the multistore's store in the context's gas meter, two
// allocations each time, and an assignment makes about 28 (a seventh of its allocations,
// which at scale are paid again in GC). A unit's context, its multistore and its gas
// meter do not change while it runs, so the store opened once is the one each operation
// would have opened, charging the same gas to the same meter. A context derived from it
// (another branch, another gas meter) is an sdk.Context again and opens its own.
type unitContext struct {
	sdk.Context
	kv    corestore.KVStore
	boxed any // Context as an interface value, made once
}

// Value is sdk.Context's, except that the sdk.Context it hands sdk.UnwrapSDKContext is
// boxed once for the unit, not once per call (904 bytes each: an examination unwraps its
// context a few dozen times).
func (u *unitContext) Value(key any) any {
	if key == sdk.SdkContextKey {
		return u.boxed
	}
	return u.Context.Value(key)
}

// unitStoreService is the market keeper's store service: a unitContext's store, or the
// wrapped service's for any other context.
type unitStoreService struct {
	corestore.KVStoreService
}

func (s unitStoreService) OpenKVStore(ctx context.Context) corestore.KVStore {
	if u, ok := ctx.(*unitContext); ok {
		return u.kv
	}
	return s.KVStoreService.OpenKVStore(ctx)
}

// unit is ctx as an assignment unit's context (converted to a context.Context once: each
// conversion of an sdk.Context, 904 bytes, to the interface copies it to the heap).
func (k Keeper) unit(ctx sdk.Context) context.Context {
	return &unitContext{Context: ctx, kv: k.storeService.OpenKVStore(ctx), boxed: ctx}
}
