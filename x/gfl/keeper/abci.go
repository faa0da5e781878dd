package keeper

import (
	sdk "github.com/cosmos/cosmos-sdk/types"
)

// BeginBlocker records the block hash for the beacon.
func (k Keeper) BeginBlocker(ctx sdk.Context) error {
	return k.recordBlockHash(ctx)
}

// EndBlocker concludes expired challenges, issues the due ones and advances a pending
// rebalance; each step is bounded by its max_..._per_block param and every item runs in a
// cache context (internal/blockhook), so one failure never halts the chain.
func (k Keeper) EndBlocker(ctx sdk.Context) error {
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	if err := k.expireChallenges(ctx, p); err != nil {
		return err
	}
	if err := k.issueDueChallenges(ctx, p); err != nil {
		return err
	}
	return k.rebalanceStep(ctx, p)
}
