package keeper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cosmossdk.io/collections"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/internal/collkeys"
	"github.com/flopsnet/flops/x/staking-slash/types"
)

// kindMature is the block-work kind of an unbonding payout.
const kindMature = types.ItemMature

// EndBlock pays out matured unbonding entries (completion_time <= block time) in
// completion order, then (provider, id) order for equal times, within end_block_gas
// (internal/blockhook; max_matured_per_block caps the entries taken); the rest stay
// queued for later blocks. Each payout is one atomic unit. A payout that fails (nothing of
// it written) is re-queued with back-off: its completion time moves 2^(n-1) minutes past
// the block time after its n-th failure, with an EventItemFailed; after five failures the
// entry is resolved by returning its amount to the provider's bonded collateral (it can
// be unbonded again), with an EventItemResolved, so that nothing stays unbonding for ever.
func (k Keeper) EndBlock(goCtx context.Context) error {
	ctx := sdk.UnwrapSDKContext(goCtx)
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	b := blockhook.NewBudget(p.EndBlockGas)
	var due []UnbondingKey
	if err := b.Run(ctx, "stakingslash: due unbondings", func(c sdk.Context) error {
		var err error
		due, err = k.dueUnbondings(c, c.BlockTime(), int(p.MaxMaturedPerBlock))
		return err
	}); err != nil {
		return k.blockWorkStopped(ctx, err)
	}
	for _, pk := range due {
		it := blockhook.Item{Kind: kindMature, ID: pk.K2(), Addr: pk.K1()}
		err := b.Run(ctx, "stakingslash: mature unbonding", func(c sdk.Context) error {
			if err := k.matureUnbonding(c, pk, p.CollateralDenom); err != nil {
				return err
			}
			return k.Retries.Succeeded(c, it)
		})
		switch {
		case errors.Is(err, blockhook.ErrBudgetSpent):
			return k.blockWorkStopped(ctx, err)
		case err != nil:
			ctx.Logger().Error("unbonding payout failed; re-queued", "module", types.ModuleName,
				"provider", pk.K1().String(), "unbonding_id", pk.K2(), "err", err)
			if err := b.Run(ctx, "stakingslash: payout failed", func(c sdk.Context) error {
				return k.unbondingFailed(c, pk, it, err)
			}); err != nil {
				return k.blockWorkStopped(ctx, err)
			}
		}
	}
	if err := b.Run(ctx, "stakingslash: expired slash records", func(c sdk.Context) error {
		return k.pruneSlashes(c, slashPruneChunk)
	}); err != nil {
		return k.blockWorkStopped(ctx, err)
	}
	return nil
}

// slashPruneChunk bounds the slash records deleted per block (the rest wait).
const slashPruneChunk = 64

// pruneSlashes deletes up to limit slash records whose retention ended by this block.
func (k Keeper) pruneSlashes(ctx sdk.Context, limit int) error {
	keys, err := collkeys.CollectKeys(ctx, k.SlashExpiry, collections.NewPrefixUntilTripleRange[int64, sdk.AccAddress, uint64](ctx.BlockHeight()), limit)
	if err != nil {
		return err
	}
	for _, key := range keys {
		if err := k.Slashes.Remove(ctx, collections.Join(key.K2(), key.K3())); err != nil {
			return err
		}
		if err := k.SlashExpiry.Remove(ctx, key); err != nil {
			return err
		}
	}
	return nil
}

// blockWorkStopped ends the block's work where it is: the budget is spent (the rest waits
// for the next block), or a read of the queue failed, which is logged and retried next
// block rather than halting the chain.
func (k Keeper) blockWorkStopped(ctx sdk.Context, err error) error {
	if !errors.Is(err, blockhook.ErrBudgetSpent) {
		ctx.Logger().Error("unbonding queue: block work stopped", "module", types.ModuleName, "err", err)
	}
	return nil
}

// unbondingFailed re-queues a failed payout with back-off, or, after MaxAttempts
// failures, returns its amount to the provider's bonded collateral.
func (k Keeper) unbondingFailed(ctx sdk.Context, pk UnbondingKey, it blockhook.Item, cause error) error {
	e, err := k.Unbondings.Get(ctx, pk)
	if err != nil {
		return err
	}
	n, err := k.Retries.Record(ctx, it, 0, cause)
	if err != nil {
		return err
	}
	if n < blockhook.MaxAttempts {
		e.CompletionTime = ctx.BlockTime().Add(time.Duration(blockhook.Backoff(n)) * time.Minute).UTC()
		return k.Unbondings.Set(ctx, pk, e)
	}
	// resolved: the amount goes back to the bonded collateral
	if err := k.Unbondings.Remove(ctx, pk); err != nil {
		return err
	}
	c, err := k.GetCollateral(ctx, pk.K1())
	if err != nil {
		return err
	}
	c.Bonded = c.Bonded.Add(e.Amount)
	if err := k.Collaterals.Set(ctx, pk.K1(), c); err != nil {
		return err
	}
	if err := addTotal(ctx, k.TotalUnbonding, e.Amount.Neg()); err != nil {
		return err
	}
	if err := addTotal(ctx, k.TotalBonded, e.Amount); err != nil {
		return err
	}
	return k.Retries.Resolved(ctx, it, fmt.Sprintf("its %s returned to the provider's bonded collateral", e.Amount), cause)
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

// matureUnbonding pays one entry out to its provider and removes it (the caller runs it
// as one atomic unit).
func (k Keeper) matureUnbonding(ctx sdk.Context, pk UnbondingKey, denom string) error {
	e, err := k.Unbondings.Get(ctx, pk)
	if err != nil {
		return err
	}
	if err := k.Unbondings.Remove(ctx, pk); err != nil {
		return err
	}
	if err := addTotal(ctx, k.TotalUnbonding, e.Amount.Neg()); err != nil {
		return err
	}
	if err := k.payOut(ctx, pk.K1(), denom, e.Amount); err != nil {
		return err
	}
	return ctx.EventManager().EmitTypedEvent(&types.EventUnbondingMatured{
		Provider: e.Provider, UnbondingId: e.Id, Amount: e.Amount,
	})
}
