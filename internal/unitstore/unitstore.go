// Package unitstore lets a block hook's unit of work open each module's store once.
//
// A collection opens its store again for every operation: the runtime's store service
// unwraps the context and wraps the multistore's store in the context's gas meter, two
// allocations and a copy of the context each time. An assignment of the market's
// scheduler makes about 23 operations on the market's store and a dozen more on the
// reputation's, the collateral's and x/gfl's (the two candidates' scores and collateral,
// the exposure it adds), so the openings were a seventh of its allocations. Inside a unit
// (one branch of the block's state with its own gas meter, blockhook.Budget.Run) the
// context, its multistore and its gas meter do not change: the store opened once is the
// one each operation would have opened, and it charges the same gas to the same meter.
//
// New makes a unit's Context; a module whose keeper builds its collections on Wrap's
// service then opens its store once per unit Context, on the first operation. For any
// other context (an sdk.Context, and any context derived from a unit Context, which is
// an sdk.Context again: a branch of its own, another gas meter) the service opens the
// store as the runtime's does.
package unitstore

import (
	"context"

	corestore "cosmossdk.io/core/store"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

// Context is a unit's context: the unit's sdk.Context and the stores opened on it.
// It is used by one goroutine, the block's.
type Context struct {
	sdk.Context
	boxed  any // Context as an interface value, made once
	stores []opened
}

type opened struct {
	svc *Service
	kv  corestore.KVStore
}

// New is ctx as a unit's Context (a context.Context made once: each conversion of an
// sdk.Context, 904 bytes, to the interface copies it to the heap).
func New(ctx sdk.Context) *Context {
	return &Context{Context: ctx, boxed: ctx}
}

// Value is sdk.Context's, except that the sdk.Context it hands sdk.UnwrapSDKContext is
// boxed once for the unit, not on every call.
func (u *Context) Value(key any) any {
	if key == sdk.SdkContextKey {
		return u.boxed
	}
	return u.Context.Value(key)
}

// Service is a module's store service that opens its store once per unit Context.
type Service struct {
	corestore.KVStoreService
}

// Wrap is s opening its store once per unit Context (a keeper wraps its service once and
// builds its collections on the result: the unit's stores are found by the wrapper).
func Wrap(s corestore.KVStoreService) *Service {
	if w, ok := s.(*Service); ok {
		return w
	}
	return &Service{KVStoreService: s}
}

// OpenKVStore is the unit's store of this module for a unit Context (opened on its first
// use), the wrapped service's for any other context.
func (s *Service) OpenKVStore(ctx context.Context) corestore.KVStore {
	u, ok := ctx.(*Context)
	if !ok {
		return s.KVStoreService.OpenKVStore(ctx)
	}
	for _, o := range u.stores {
		if o.svc == s {
			return o.kv
		}
	}
	kv := s.KVStoreService.OpenKVStore(u.Context)
	u.stores = append(u.stores, opened{svc: s, kv: kv})
	return kv
}
