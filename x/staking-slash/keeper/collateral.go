package keeper

import (
	"context"
	"errors"
	"time"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/staking-slash/types"
)

// GetCollateral returns the provider's collateral record; a provider without one gets a
// zero record (math.ZeroInt() amounts, not jailed).
func (k Keeper) GetCollateral(ctx context.Context, provider sdk.AccAddress) (types.Collateral, error) {
	c, _, err := k.getCollateral(ctx, provider)
	return c, err
}

// getCollateral also says whether the record exists.
func (k Keeper) getCollateral(ctx context.Context, provider sdk.AccAddress) (types.Collateral, bool, error) {
	c, err := k.Collaterals.Get(ctx, provider)
	switch {
	case err == nil:
		return c, true, nil
	case errors.Is(err, collections.ErrNotFound):
		s, err := k.addressString(provider)
		if err != nil {
			return types.Collateral{}, false, errorsmod.Wrapf(types.ErrInvalidAddress, "provider %X: %s", []byte(provider), err)
		}
		return types.Collateral{
			Provider:     s,
			Bonded:       sdkmath.ZeroInt(),
			Exposure:     sdkmath.ZeroInt(),
			SlashedTotal: sdkmath.ZeroInt(),
		}, false, nil
	default:
		return types.Collateral{}, false, err
	}
}

// requiredFor is gpus * min_collateral_per_gpu, udps.
func requiredFor(p types.Params, gpus uint64) (sdkmath.Int, error) {
	req, err := sdkmath.NewIntFromUint64(gpus).SafeMul(p.MinCollateralPerGpu)
	if err != nil {
		return sdkmath.Int{}, errorsmod.Wrapf(types.ErrInsufficientCollateral, "%d GPUs * %s: %s", gpus, p.MinCollateralPerGpu, err)
	}
	return req, nil
}

// exposureCap is floor(bonded * exposure_factor_ppm / 1e6), udps.
func exposureCap(p types.Params, bonded sdkmath.Int) (sdkmath.Int, error) {
	return types.PPMOf(bonded, p.ExposureFactorPpm)
}

// RequiredCollateral is what the provider must keep bonded for its locked GPUs:
// locked_gpus * min_collateral_per_gpu, udps.
func (k Keeper) RequiredCollateral(ctx context.Context, provider sdk.AccAddress) (sdkmath.Int, error) {
	p, err := k.Params.Get(ctx)
	if err != nil {
		return sdkmath.Int{}, err
	}
	c, err := k.GetCollateral(ctx, provider)
	if err != nil {
		return sdkmath.Int{}, err
	}
	return requiredFor(p, c.LockedGpus)
}

// checkCollateralCoin refuses a coin that is not a positive amount of the collateral denom.
func checkCollateralCoin(p types.Params, amount sdk.Coin) error {
	if amount.Amount.IsNil() || !amount.Amount.IsPositive() {
		return errorsmod.Wrapf(types.ErrInvalidAmount, "amount %s: must be positive", amount)
	}
	if amount.Denom != p.CollateralDenom {
		return errorsmod.Wrapf(types.ErrInvalidAmount, "amount %s: collateral denom is %s", amount, p.CollateralDenom)
	}
	return nil
}

// Bond moves amount from the provider's account into the module account and adds it to the
// provider's bonded collateral. It returns the bonded collateral after the bond.
func (k Keeper) Bond(ctx context.Context, provider sdk.AccAddress, amount sdk.Coin) (sdkmath.Int, error) {
	if err := checkAddress("provider", provider); err != nil {
		return sdkmath.Int{}, err
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return sdkmath.Int{}, err
	}
	if err := checkCollateralCoin(p, amount); err != nil {
		return sdkmath.Int{}, err
	}
	c, err := k.GetCollateral(ctx, provider)
	if err != nil {
		return sdkmath.Int{}, err
	}
	if err := k.bankKeeper.SendCoinsFromAccountToModule(ctx, provider, types.ModuleName, sdk.NewCoins(amount)); err != nil {
		return sdkmath.Int{}, errorsmod.Wrapf(err, "bond %s from %s", amount, c.Provider)
	}
	c.Bonded = c.Bonded.Add(amount.Amount)
	if err := k.Collaterals.Set(ctx, provider, c); err != nil {
		return sdkmath.Int{}, err
	}
	if err := addTotal(ctx, k.TotalBonded, amount.Amount); err != nil {
		return sdkmath.Int{}, err
	}
	return c.Bonded, nil
}

// Unbond moves amount of the provider's bonded collateral into a new unbonding entry that
// completes at block time + unbonding_time. The coins stay in the module account, and
// slashable, until EndBlock pays the entry out. Refused when it would leave the locked GPUs
// uncovered, the exposure above its cap, or the provider with more than
// max_unbonding_entries open entries.
func (k Keeper) Unbond(ctx context.Context, provider sdk.AccAddress, amount sdk.Coin) (types.UnbondingEntry, error) {
	if err := checkAddress("provider", provider); err != nil {
		return types.UnbondingEntry{}, err
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return types.UnbondingEntry{}, err
	}
	if err := checkCollateralCoin(p, amount); err != nil {
		return types.UnbondingEntry{}, err
	}
	c, err := k.GetCollateral(ctx, provider)
	if err != nil {
		return types.UnbondingEntry{}, err
	}
	if c.Bonded.LT(amount.Amount) {
		return types.UnbondingEntry{}, errorsmod.Wrapf(types.ErrInsufficientCollateral,
			"unbond %s: provider %s has only %s bonded", amount, c.Provider, c.Bonded)
	}
	remaining := c.Bonded.Sub(amount.Amount)
	required, err := requiredFor(p, c.LockedGpus)
	if err != nil {
		return types.UnbondingEntry{}, err
	}
	if remaining.LT(required) {
		return types.UnbondingEntry{}, errorsmod.Wrapf(types.ErrInsufficientCollateral,
			"unbond %s would leave %s bonded, below the %s required by %d locked GPUs", amount, remaining, required, c.LockedGpus)
	}
	capAfter, err := exposureCap(p, remaining)
	if err != nil {
		return types.UnbondingEntry{}, err
	}
	if c.Exposure.GT(capAfter) {
		return types.UnbondingEntry{}, errorsmod.Wrapf(types.ErrExposureLimit,
			"unbond %s would lower the exposure cap to %s, below the exposure %s", amount, capAfter, c.Exposure)
	}
	open, err := k.CountUnbondings(ctx, provider)
	if err != nil {
		return types.UnbondingEntry{}, err
	}
	if open >= uint64(p.MaxUnbondingEntries) {
		return types.UnbondingEntry{}, errorsmod.Wrapf(types.ErrTooManyUnbondings,
			"provider %s has %d open unbonding entries, the maximum is %d", c.Provider, open, p.MaxUnbondingEntries)
	}

	sdkCtx := sdk.UnwrapSDKContext(ctx)
	id, err := k.UnbondingSeq.Next(ctx)
	if err != nil {
		return types.UnbondingEntry{}, err
	}
	entry := types.UnbondingEntry{
		Provider:       c.Provider,
		Id:             id,
		Amount:         amount.Amount,
		CreationHeight: sdkCtx.BlockHeight(),
		CompletionTime: sdkCtx.BlockTime().Add(p.UnbondingTime).UTC(),
	}
	if err := k.Unbondings.Set(ctx, collections.Join(provider, id), entry); err != nil {
		return types.UnbondingEntry{}, err
	}
	c.Bonded = remaining
	if err := k.Collaterals.Set(ctx, provider, c); err != nil {
		return types.UnbondingEntry{}, err
	}
	if err := addTotal(ctx, k.TotalBonded, amount.Amount.Neg()); err != nil {
		return types.UnbondingEntry{}, err
	}
	if err := addTotal(ctx, k.TotalUnbonding, amount.Amount); err != nil {
		return types.UnbondingEntry{}, err
	}
	return entry, nil
}

// providerRange ranges over one provider's entries of a (provider, id) keyed collection.
func providerRange(provider sdk.AccAddress) *collections.PairRange[sdk.AccAddress, uint64] {
	return collections.NewPrefixedPairRange[sdk.AccAddress, uint64](provider)
}

// CountUnbondings counts the provider's open entries (at most max_unbonding_entries at the
// time each was created).
func (k Keeper) CountUnbondings(ctx context.Context, provider sdk.AccAddress) (uint64, error) {
	var n uint64
	err := k.Unbondings.Walk(ctx, providerRange(provider), func(UnbondingKey, types.UnbondingEntry) (bool, error) {
		n++
		return false, nil
	})
	return n, err
}

// ProviderUnbondings returns the provider's open unbonding entries by id.
func (k Keeper) ProviderUnbondings(ctx context.Context, provider sdk.AccAddress) ([]types.UnbondingEntry, error) {
	var out []types.UnbondingEntry
	err := k.Unbondings.Walk(ctx, providerRange(provider), func(_ UnbondingKey, e types.UnbondingEntry) (bool, error) {
		out = append(out, e)
		return false, nil
	})
	return out, err
}

// Jail removes the provider from scheduling until MsgUnjail at or after until; an existing
// later jail end is kept. It emits EventJail and calls the AfterJailed hook.
func (k Keeper) Jail(ctx context.Context, provider sdk.AccAddress, until time.Time, evidence types.SlashEvidence) error {
	if err := checkAddress("provider", provider); err != nil {
		return err
	}
	c, err := k.GetCollateral(ctx, provider)
	if err != nil {
		return err
	}
	c.Jailed = true
	if until.After(c.JailedUntil) {
		c.JailedUntil = until.UTC()
	}
	if err := k.Collaterals.Set(ctx, provider, c); err != nil {
		return err
	}
	if err := sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventJail{
		Provider: c.Provider, Until: c.JailedUntil,
	}); err != nil {
		return err
	}
	if h := k.hooks.hooks; h != nil {
		return h.AfterJailed(ctx, provider, c.JailedUntil, evidence)
	}
	return nil
}

// Unjail lets a jailed provider be scheduled again: only once the block time has reached
// jailed_until and its bonded collateral covers its locked GPUs.
func (k Keeper) Unjail(ctx context.Context, provider sdk.AccAddress) error {
	if err := checkAddress("provider", provider); err != nil {
		return err
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	c, err := k.GetCollateral(ctx, provider)
	if err != nil {
		return err
	}
	if !c.Jailed {
		return errorsmod.Wrapf(types.ErrNotJailed, "provider %s", c.Provider)
	}
	if now := sdk.UnwrapSDKContext(ctx).BlockTime(); now.Before(c.JailedUntil) {
		return errorsmod.Wrapf(types.ErrStillJailed, "provider %s is jailed until %s, block time is %s",
			c.Provider, c.JailedUntil.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	required, err := requiredFor(p, c.LockedGpus)
	if err != nil {
		return err
	}
	if c.Bonded.LT(required) {
		return errorsmod.Wrapf(types.ErrInsufficientCollateral,
			"provider %s has %s bonded, %d locked GPUs require %s", c.Provider, c.Bonded, c.LockedGpus, required)
	}
	c.Jailed = false
	return k.Collaterals.Set(ctx, provider, c)
}

// IsJailed says whether the provider is jailed.
func (k Keeper) IsJailed(ctx context.Context, provider sdk.AccAddress) (bool, error) {
	c, err := k.GetCollateral(ctx, provider)
	return c.Jailed, err
}

// LockForNode locks gpus more GPUs of the provider (a node registering or growing):
// refused with ErrInsufficientCollateral unless bonded >= (locked_gpus + gpus) *
// min_collateral_per_gpu.
func (k Keeper) LockForNode(ctx context.Context, provider sdk.AccAddress, gpus uint64) error {
	if err := checkAddress("provider", provider); err != nil {
		return err
	}
	if gpus == 0 {
		return nil
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	c, err := k.GetCollateral(ctx, provider)
	if err != nil {
		return err
	}
	locked := c.LockedGpus + gpus
	if locked < c.LockedGpus {
		return errorsmod.Wrapf(types.ErrInvalidAmount, "locking %d GPUs on top of %d overflows", gpus, c.LockedGpus)
	}
	required, err := requiredFor(p, locked)
	if err != nil {
		return err
	}
	if c.Bonded.LT(required) {
		return errorsmod.Wrapf(types.ErrInsufficientCollateral,
			"provider %s: %d GPUs (%d locked + %d) require %s bonded, has %s", c.Provider, locked, c.LockedGpus, gpus, required, c.Bonded)
	}
	c.LockedGpus = locked
	return k.setLocked(ctx, provider, c)
}

// UnlockForNode releases gpus locked GPUs (a node deregistering or shrinking).
func (k Keeper) UnlockForNode(ctx context.Context, provider sdk.AccAddress, gpus uint64) error {
	if err := checkAddress("provider", provider); err != nil {
		return err
	}
	if gpus == 0 {
		return nil
	}
	c, err := k.GetCollateral(ctx, provider)
	if err != nil {
		return err
	}
	if gpus > c.LockedGpus {
		return errorsmod.Wrapf(types.ErrInvalidRelease, "provider %s: unlock %d GPUs, only %d locked", c.Provider, gpus, c.LockedGpus)
	}
	c.LockedGpus -= gpus
	return k.setLocked(ctx, provider, c)
}

// checkExposureValue refuses a nil or negative value.
func checkExposureValue(value sdkmath.Int) error {
	if value.IsNil() || value.IsNegative() {
		return errorsmod.Wrapf(types.ErrInvalidAmount, "exposure value %s: must be a non-negative integer", value)
	}
	return nil
}

// exposureAfter is exposure + value and whether it stays within the cap; value is
// compared with cap - exposure first, so a huge value cannot overflow the sum.
func exposureAfter(p types.Params, c types.Collateral, value sdkmath.Int) (after, capNow sdkmath.Int, ok bool, err error) {
	capNow, err = exposureCap(p, c.Bonded)
	if err != nil {
		return sdkmath.Int{}, sdkmath.Int{}, false, err
	}
	if c.Exposure.GT(capNow) || value.GT(capNow.Sub(c.Exposure)) {
		return sdkmath.Int{}, capNow, false, nil
	}
	return c.Exposure.Add(value), capNow, true, nil
}

// AddExposure adds value (udps of a task assigned to the provider) to its exposure:
// refused with ErrExposureLimit when exposure + value > floor(exposure_factor_ppm *
// bonded / 1e6).
func (k Keeper) AddExposure(ctx context.Context, provider sdk.AccAddress, value sdkmath.Int) error {
	if err := checkAddress("provider", provider); err != nil {
		return err
	}
	if err := checkExposureValue(value); err != nil {
		return err
	}
	if value.IsZero() {
		return nil
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	c, err := k.GetCollateral(ctx, provider)
	if err != nil {
		return err
	}
	after, capNow, ok, err := exposureAfter(p, c, value)
	if err != nil {
		return err
	}
	if !ok {
		return errorsmod.Wrapf(types.ErrExposureLimit, "provider %s: exposure %s + %s exceeds the cap %s (%d ppm of %s bonded)",
			c.Provider, c.Exposure, value, capNow, p.ExposureFactorPpm, c.Bonded)
	}
	c.Exposure = after
	return k.setExposure(ctx, provider, c)
}

// ReleaseExposure lowers the provider's exposure by value (a task finished or failed).
func (k Keeper) ReleaseExposure(ctx context.Context, provider sdk.AccAddress, value sdkmath.Int) error {
	if err := checkAddress("provider", provider); err != nil {
		return err
	}
	if err := checkExposureValue(value); err != nil {
		return err
	}
	if value.IsZero() {
		return nil
	}
	c, err := k.GetCollateral(ctx, provider)
	if err != nil {
		return err
	}
	if value.GT(c.Exposure) {
		return errorsmod.Wrapf(types.ErrInvalidRelease, "provider %s: release exposure %s, only %s held", c.Provider, value, c.Exposure)
	}
	c.Exposure = c.Exposure.Sub(value)
	return k.setExposure(ctx, provider, c)
}

func (k Keeper) setExposure(ctx context.Context, provider sdk.AccAddress, c types.Collateral) error {
	if err := k.Collaterals.Set(ctx, provider, c); err != nil {
		return err
	}
	ev, err := (&types.EventExposure{Provider: c.Provider, Exposure: c.Exposure}).Event()
	if err != nil {
		return err
	}
	sdk.UnwrapSDKContext(ctx).EventManager().EmitEvent(ev)
	return nil
}

// CanAddExposure says, without writing, whether AddExposure(value) would succeed and the
// provider may be scheduled: false when jailed or when the value would exceed the cap.
func (k Keeper) CanAddExposure(ctx context.Context, provider sdk.AccAddress, value sdkmath.Int) (bool, error) {
	if err := checkAddress("provider", provider); err != nil {
		return false, err
	}
	if err := checkExposureValue(value); err != nil {
		return false, err
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return false, err
	}
	c, err := k.GetCollateral(ctx, provider)
	if err != nil {
		return false, err
	}
	if c.Jailed {
		return false, nil
	}
	_, _, ok, err := exposureAfter(p, c, value)
	return ok, err
}

// setLocked stores a collateral record whose lock changed and announces it.
func (k Keeper) setLocked(ctx context.Context, provider sdk.AccAddress, c types.Collateral) error {
	if err := k.Collaterals.Set(ctx, provider, c); err != nil {
		return err
	}
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventCollateralLocked{
		Provider: c.Provider, LockedGpus: c.LockedGpus,
	})
}
