package keeper

import (
	"context"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/sdkint"
	"github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// The market stores accounts as canonical bech32 strings (owners, providers, operators).
// These helpers decode a stored account where x/bank or x/staking-slash need its bytes;
// a stored address that does not decode is a broken invariant, returned as an error.

// payOut sends amount of the market denom from the escrow account to a stored account.
func (k Keeper) payOut(ctx context.Context, to string, denom string, amount sdkmath.Int) error {
	if !amount.IsPositive() {
		return nil
	}
	addr, err := k.acc(to)
	if err != nil {
		return err
	}
	return k.bankKeeper.SendCoinsFromModuleToAccount(ctx, types.ModuleName, addr, sdk.NewCoins(sdk.NewCoin(denom, amount)))
}

// addExposure, releaseExposure and canAddExposure are x/staking-slash's, for a stored
// provider.
func (k Keeper) addExposure(ctx context.Context, provider string, v sdkmath.Int) error {
	addr, err := k.acc(provider)
	if err != nil {
		return err
	}
	return k.collateral.AddExposure(ctx, addr, v)
}

func (k Keeper) releaseExposure(ctx context.Context, provider string, v sdkmath.Int) error {
	addr, err := k.acc(provider)
	if err != nil {
		return err
	}
	return k.collateral.ReleaseExposure(ctx, addr, v)
}

func (k Keeper) canAddExposure(ctx context.Context, provider string, v sdkmath.Int) (bool, error) {
	addr, err := k.acc(provider)
	if err != nil {
		return false, err
	}
	return k.collateral.CanAddExposure(ctx, addr, v)
}

// slash slashes a stored provider for a result; ppm is first raised by penaltyPPM so that
// the slash covers exposure. A wrong result compensates the job's owner (owner set) with
// compensation_ppm of the slash, but at most *owed, what the result cost the owner and is
// not yet made good (the verification it had to pay because of it), which the compensation
// paid then lowers: a task's own reservation comes back to its owner when its result is
// wrong, so compensation up to the task's value made an owner that could cause a wrong
// result richer than it started. The verifiers are rewarded; what no beneficiary takes is
// burned.
func (k Keeper) slash(ctx context.Context, provider string, ppm uint32, exposure sdkmath.Int, reason sstypes.SlashReason, owner string, owed *sdkmath.Int, verifiers []sdk.AccAddress, ev sstypes.SlashEvidence) error {
	_, err := k.slashed(ctx, provider, ppm, exposure, reason, owner, owed, verifiers, ev)
	return err
}

// slashed is slash, saying how much it took.
func (k Keeper) slashed(ctx context.Context, provider string, ppm uint32, exposure sdkmath.Int, reason sstypes.SlashReason, owner string, owed *sdkmath.Int, verifiers []sdk.AccAddress, ev sstypes.SlashEvidence) (sdkmath.Int, error) {
	addr, err := k.acc(provider)
	if err != nil {
		return sdkmath.Int{}, err
	}
	b := sstypes.Beneficiaries{Rewarded: verifiers}
	if owner != "" {
		if b.Compensate, err = k.acc(owner); err != nil {
			return sdkmath.Int{}, err
		}
		b.CompensationCap = sdkmath.ZeroInt()
		if owed != nil && owed.IsPositive() {
			b.CompensationCap = *owed
		}
	}
	if ppm, err = k.penaltyPPM(ctx, addr, ppm, exposure); err != nil {
		return sdkmath.Int{}, err
	}
	rec, err := k.collateral.Slash(ctx, addr, ppm, reason, b, ev)
	if err != nil {
		return sdkmath.Int{}, err
	}
	if owed != nil && !rec.Compensation.IsNil() {
		*owed = owed.Sub(rec.Compensation)
	}
	return sdkint.OrZero(rec.Amount), nil
}

// abandoned slashes a provider that gave a task up (a lapse, a release, an unconfirmed
// failure report): ppm of its collateral, burned, but no more than
// failure_penalty_multiple x the task's value (jobLimit), rounded up to a whole ppm of the
// collateral, and, when limit is not nil, at most limit. It returns what it took.
//
// A job can cause these slashes (a command that takes the machine down, a job that fails
// on some runs only), so they are held to what the job is worth: a share of the whole
// bond let a client burn as much of a large provider's collateral as it liked, for the
// price of one task each time (x/market/README.md, "The slashes a job can cause").
func (k Keeper) abandoned(ctx context.Context, p types.Params, provider string, ppm uint32, value, limit sdkmath.Int, reason sstypes.SlashReason, ev sstypes.SlashEvidence) (sdkmath.Int, error) {
	addr, err := k.acc(provider)
	if err != nil {
		return sdkmath.Int{}, err
	}
	if ppm, err = k.collateral.CoveringFraction(ctx, addr, ppm, jobLimit(p, value)); err != nil {
		return sdkmath.Int{}, err
	}
	var rec sstypes.SlashRecord
	if limit.IsNil() {
		rec, err = k.collateral.Slash(ctx, addr, ppm, reason, sstypes.Beneficiaries{}, ev)
	} else {
		rec, err = k.collateral.SlashAtMost(ctx, addr, ppm, limit, reason, sstypes.Beneficiaries{}, ev)
	}
	if err != nil {
		return sdkmath.Int{}, err
	}
	return sdkint.OrZero(rec.Amount), nil
}

// jobLimit is the most a slash that a job can cause takes: failure_penalty_multiple x the
// task's value (nothing when the value is unknown or not positive).
func jobLimit(p types.Params, value sdkmath.Int) sdkmath.Int {
	if value.IsNil() || !value.IsPositive() {
		return sdkmath.ZeroInt()
	}
	return exposureOfFailure(p, value)
}

// accs decodes stored accounts.
func (k Keeper) accs(addrs ...string) ([]sdk.AccAddress, error) {
	out := make([]sdk.AccAddress, 0, len(addrs))
	for _, s := range addrs {
		a, err := k.acc(s)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}
