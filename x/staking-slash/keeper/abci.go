package keeper

import (
	"context"
	"fmt"
	"time"

	"cosmossdk.io/collections"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/staking-slash/types"
)

// EndBlock pays out matured unbonding entries (completion_time <= block time) in
// completion order, then (provider, id) order for equal times. At most
// max_matured_per_block entries are attempted per block; the rest stay queued for later
// blocks. Each payout runs in its own cache context: a failure (or panic) is logged and
// skipped, the entry stays queued and is retried in a later block, and the chain goes on.
func (k Keeper) EndBlock(ctx context.Context) error {
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	due, err := k.dueUnbondings(ctx, sdkCtx.BlockTime(), int(p.MaxMaturedPerBlock))
	if err != nil {
		return err
	}
	for _, pk := range due {
		if err := k.matureUnbonding(sdkCtx, pk, p.CollateralDenom); err != nil {
			sdkCtx.Logger().Error("unbonding payout failed; retried in a later block",
				"module", types.ModuleName, "provider", pk.K1().String(), "unbonding_id", pk.K2(), "err", err)
		}
	}
	return nil
}

// dueUnbondings returns up to limit keys of entries with completion_time <= now, walking
// only that range of the maturity queue.
func (k Keeper) dueUnbondings(ctx context.Context, now time.Time, limit int) ([]UnbondingKey, error) {
	rng := collections.NewPrefixUntilPairRange[time.Time, UnbondingKey](now)
	iter, err := k.Unbondings.Indexes.ByCompletion.Iterate(ctx, rng)
	if err != nil {
		return nil, err
	}
	var due []UnbondingKey
	for ; iter.Valid() && len(due) < limit; iter.Next() {
		pk, err := iter.PrimaryKey()
		if err != nil {
			_ = iter.Close()
			return nil, err
		}
		due = append(due, pk)
	}
	return due, iter.Close()
}

// matureUnbonding pays one entry out to its provider and removes it, all or nothing.
func (k Keeper) matureUnbonding(ctx sdk.Context, pk UnbondingKey, denom string) (err error) {
	cacheCtx, write := ctx.CacheContext()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	e, err := k.Unbondings.Get(cacheCtx, pk)
	if err != nil {
		return err
	}
	if err := k.Unbondings.Remove(cacheCtx, pk); err != nil {
		return err
	}
	if err := addTotal(cacheCtx, k.TotalUnbonding, e.Amount.Neg()); err != nil {
		return err
	}
	if err := k.payOut(cacheCtx, pk.K1(), denom, e.Amount); err != nil {
		return err
	}
	if err := cacheCtx.EventManager().EmitTypedEvent(&types.EventUnbondingMatured{
		Provider: e.Provider, UnbondingId: e.Id, Amount: e.Amount,
	}); err != nil {
		return err
	}
	write()
	return nil
}
