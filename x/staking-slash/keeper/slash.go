package keeper

import (
	"context"
	"fmt"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/validate"
	"github.com/flopsnet/flops/x/staking-slash/types"
)

// Slash takes fractionPPM of the provider's bonded collateral and of each of its open
// unbonding entries (a slash during unbonding reaches unbonding collateral):
//
//	total = floor(bonded * f / 1e6) + sum over entries of floor(entry * f / 1e6)
//
// and shares it out with types.SplitSlash: compensation to b.Compensate (if set, at most
// b.CompensationCap), equal rewards to b.Rewarded (if any), the rest burned from the module
// account. The module
// account's balance falls by exactly total. A provider with nothing bonded or unbonding
// gets a zero record, not an error. The record is kept in the slash history, EventSlash is
// emitted and the AfterSlashed hook called. Everything before the hook runs in a cache
// context: a failure changes nothing; a failing hook's error is returned (the caller's tx
// or block item then fails whole).
func (k Keeper) Slash(ctx context.Context, provider sdk.AccAddress, fractionPPM uint32, reason types.SlashReason, b types.Beneficiaries, evidence types.SlashEvidence) (types.SlashRecord, error) {
	if err := checkAddress("provider", provider); err != nil {
		return types.SlashRecord{}, err
	}
	if err := validate.PPM("fraction", fractionPPM); err != nil {
		return types.SlashRecord{}, errorsmod.Wrap(types.ErrInvalidSlash, err.Error())
	}
	if err := types.ValidateSlashReason(reason); err != nil {
		return types.SlashRecord{}, errorsmod.Wrap(types.ErrInvalidSlash, err.Error())
	}
	compensate := len(b.Compensate) > 0
	if compensate {
		if err := checkAddress("compensated", b.Compensate); err != nil {
			return types.SlashRecord{}, err
		}
		if b.CompensationCap.IsNil() || b.CompensationCap.IsNegative() {
			return types.SlashRecord{}, errorsmod.Wrapf(types.ErrInvalidSlash, "compensation cap %s: must be set, zero or more, when a client is compensated", b.CompensationCap)
		}
	}
	for i, r := range b.Rewarded {
		if err := checkAddress(fmt.Sprintf("rewarded[%d]", i), r); err != nil {
			return types.SlashRecord{}, err
		}
	}

	sdkCtx := sdk.UnwrapSDKContext(ctx)
	cacheCtx, write := sdkCtx.CacheContext()
	rec, err := k.slash(cacheCtx, provider, fractionPPM, reason, b, evidence)
	if err != nil {
		return types.SlashRecord{}, err
	}
	write()
	if h := k.hooks.hooks; h != nil {
		if err := h.AfterSlashed(ctx, rec); err != nil {
			return rec, err
		}
	}
	return rec, nil
}

// SlashAtMost is Slash with its total at most limit (zero or more): the fraction is
// lowered, when it must be, to the largest whose total does not pass limit,
// floor(limit * 1e6 / (bonded + unbonding)), so that every part is still cut at one
// fraction. The record says the fraction taken.
func (k Keeper) SlashAtMost(ctx context.Context, provider sdk.AccAddress, fractionPPM uint32, limit sdkmath.Int, reason types.SlashReason, b types.Beneficiaries, evidence types.SlashEvidence) (types.SlashRecord, error) {
	f, err := k.fractionFor(ctx, provider, fractionPPM, "limit", limit, false)
	if err != nil {
		return types.SlashRecord{}, err
	}
	return k.Slash(ctx, provider, f, reason, b, evidence)
}

// CoveringFraction is fractionPPM lowered, when it can be, to the least fraction of the
// provider's collateral (bonded and unbonding) whose cut reaches amount (zero or more),
// ceil(amount * 1e6 / (bonded + unbonding)): Slash at it takes amount (less the rounding
// down of each part cut, a unit each), or more by less than one ppm of the collateral,
// and never more than fractionPPM takes. A sum that a ppm of a large bond cannot express
// exactly (x/market holds the slashes a job can cause to a multiple of the task's value)
// is rounded up, not away to nothing.
func (k Keeper) CoveringFraction(ctx context.Context, provider sdk.AccAddress, fractionPPM uint32, amount sdkmath.Int) (uint32, error) {
	return k.fractionFor(ctx, provider, fractionPPM, "amount", amount, true)
}

// fractionFor is fractionPPM, lowered when it would cut more than sum (named what) of
// the provider's collateral, bonded and unbonding, to the fraction that cuts at most sum
// (up false) or the least that cuts at least sum (up true).
func (k Keeper) fractionFor(ctx context.Context, provider sdk.AccAddress, fractionPPM uint32, what string, sum sdkmath.Int, up bool) (uint32, error) {
	if sum.IsNil() || sum.IsNegative() {
		return 0, errorsmod.Wrapf(types.ErrInvalidSlash, "%s %s: must be zero or more", what, sum)
	}
	if err := checkAddress("provider", provider); err != nil {
		return 0, err
	}
	if err := validate.PPM("fraction", fractionPPM); err != nil {
		return 0, errorsmod.Wrap(types.ErrInvalidSlash, err.Error())
	}
	// the fraction is decided on what the cut would reach; Slash then checks the rest
	c, _, err := k.getCollateral(ctx, provider)
	if err != nil {
		return 0, err
	}
	entries, err := k.ProviderUnbondings(ctx, provider)
	if err != nil {
		return 0, err
	}
	base := c.Bonded
	for _, e := range entries {
		base = base.Add(e.Amount)
	}
	if !base.IsPositive() {
		return fractionPPM, nil
	}
	// down: sum of floor(part * f / 1e6) <= floor(base * f / 1e6) <= sum
	num := sum.MulRaw(validate.PPMOne)
	f := num.Quo(base)
	if up && !num.Mod(base).IsZero() {
		f = f.AddRaw(1) // up: base * f / 1e6 >= sum
	}
	if f.LT(sdkmath.NewIntFromUint64(uint64(fractionPPM))) {
		return uint32(f.Uint64()), nil
	}
	return fractionPPM, nil
}

func (k Keeper) slash(ctx sdk.Context, provider sdk.AccAddress, f uint32, reason types.SlashReason, b types.Beneficiaries, evidence types.SlashEvidence) (types.SlashRecord, error) {
	p, err := k.Params.Get(ctx)
	if err != nil {
		return types.SlashRecord{}, err
	}
	c, found, err := k.getCollateral(ctx, provider)
	if err != nil {
		return types.SlashRecord{}, err
	}

	// The bonded part.
	bondedCut, err := types.PPMOf(c.Bonded, uint64(f))
	if err != nil {
		return types.SlashRecord{}, err
	}
	if bondedCut.IsPositive() {
		c.Bonded = c.Bonded.Sub(bondedCut)
		if err := addTotal(ctx, k.TotalBonded, bondedCut.Neg()); err != nil {
			return types.SlashRecord{}, err
		}
	}

	// The unbonding part: each entry lowered in place. The entries are read first, then
	// written, so the store is not written under an open iterator.
	entries, err := k.ProviderUnbondings(ctx, provider)
	if err != nil {
		return types.SlashRecord{}, err
	}
	unbondingCut := sdkmath.ZeroInt()
	for _, e := range entries {
		cut, err := types.PPMOf(e.Amount, uint64(f))
		if err != nil {
			return types.SlashRecord{}, err
		}
		if !cut.IsPositive() {
			continue
		}
		e.Amount = e.Amount.Sub(cut)
		if err := k.Unbondings.Set(ctx, collections.Join(provider, e.Id), e); err != nil {
			return types.SlashRecord{}, err
		}
		unbondingCut = unbondingCut.Add(cut)
	}
	if err := addTotal(ctx, k.TotalUnbonding, unbondingCut.Neg()); err != nil {
		return types.SlashRecord{}, err
	}

	total := bondedCut.Add(unbondingCut)
	// A provider without a record has nothing to slash (unbonding entries need one) and
	// gets none.
	if found {
		c.SlashedTotal = c.SlashedTotal.Add(total)
		if err := k.Collaterals.Set(ctx, provider, c); err != nil {
			return types.SlashRecord{}, err
		}
	}

	compensate := len(b.Compensate) > 0
	split, err := types.SplitSlash(total, p.CompensationPpm, p.RewardPpm, compensate, len(b.Rewarded))
	if err != nil {
		return types.SlashRecord{}, errorsmod.Wrap(types.ErrInvalidSlash, err.Error())
	}
	if compensate {
		split = split.CapCompensation(b.CompensationCap)
	}
	rec := types.SlashRecord{
		Provider:     c.Provider,
		Reason:       reason,
		FractionPpm:  f,
		Amount:       total,
		Compensation: split.Compensation,
		Reward:       split.RewardPaid,
		Burned:       split.Burned,
		Evidence:     evidence,
		Height:       ctx.BlockHeight(),
		Time:         ctx.BlockTime().UTC(),
	}
	if compensate {
		if rec.Compensated, err = k.addressString(b.Compensate); err != nil {
			return types.SlashRecord{}, errorsmod.Wrapf(types.ErrInvalidAddress, "compensated: %s", err)
		}
		if err := k.payOut(ctx, b.Compensate, p.CollateralDenom, split.Compensation); err != nil {
			return types.SlashRecord{}, errorsmod.Wrapf(err, "compensation %s to %s", split.Compensation, rec.Compensated)
		}
	}
	for _, r := range b.Rewarded {
		s, err := k.addressString(r)
		if err != nil {
			return types.SlashRecord{}, errorsmod.Wrapf(types.ErrInvalidAddress, "rewarded: %s", err)
		}
		rec.Rewarded = append(rec.Rewarded, s)
		if err := k.payOut(ctx, r, p.CollateralDenom, split.RewardEach); err != nil {
			return types.SlashRecord{}, errorsmod.Wrapf(err, "reward %s to %s", split.RewardEach, s)
		}
	}
	if split.Burned.IsPositive() {
		if err := k.bankKeeper.BurnCoins(ctx, types.ModuleName, sdk.NewCoins(sdk.NewCoin(p.CollateralDenom, split.Burned))); err != nil {
			return types.SlashRecord{}, errorsmod.Wrapf(err, "burn %s%s", split.Burned, p.CollateralDenom)
		}
	}

	if rec.Id, err = k.SlashSeq.Next(ctx); err != nil {
		return types.SlashRecord{}, err
	}
	if err := k.Slashes.Set(ctx, collections.Join(provider, rec.Id), rec); err != nil {
		return types.SlashRecord{}, err
	}
	if err := k.SlashExpiry.Set(ctx, collections.Join3(rec.Height+int64(p.SlashRetentionBlocks), provider, rec.Id)); err != nil {
		return types.SlashRecord{}, err
	}
	if err := ctx.EventManager().EmitTypedEvent(&types.EventSlash{Record: rec}); err != nil {
		return types.SlashRecord{}, err
	}
	return rec, nil
}

// payOut sends amount of denom from the module account to addr; zero sends nothing.
func (k Keeper) payOut(ctx context.Context, addr sdk.AccAddress, denom string, amount sdkmath.Int) error {
	if !amount.IsPositive() {
		return nil
	}
	return k.bankKeeper.SendCoinsFromModuleToAccount(ctx, types.ModuleName, addr, sdk.NewCoins(sdk.NewCoin(denom, amount)))
}
