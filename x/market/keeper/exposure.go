package keeper

import (
	"context"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/validate"
	"github.com/flopsnet/flops/x/market/types"
)

// Collateral at risk (x/market/README.md, the security argument). Every task in flight
// reserves exposure = value x result_penalty_multiple of its provider's collateral, where
// value is what the task pays (price + tip for a primary, price for the verification
// roles); a pool claim reserves unit price x the multiple. A wrong result, and a result
// committed but never revealed, is slashed max(the param's fraction of the collateral,
// the task's exposure): so the collateral always covers the worst slash of the tasks in
// flight, and the penalty scales with what a cheater hoped to gain, whatever the size of
// its bond.

// taskValue is what a task pays its provider.
func taskValue(job types.Job, role types.TaskRole, price sdkmath.Int) sdkmath.Int {
	if role == types.TASK_ROLE_PRIMARY && !job.Spec.PriorityTip.Amount.IsNil() {
		return price.Add(job.Spec.PriorityTip.Amount)
	}
	return price
}

// exposureOf is the collateral a task (or claim) of the given value reserves.
func exposureOf(p types.Params, value sdkmath.Int) sdkmath.Int {
	return value.MulRaw(int64(p.ResultPenaltyMultiple))
}

// penaltyPPM is the fraction of a provider's collateral that a wrong or withheld result
// costs: ppm, or more so that the slash (which cuts the bonded collateral and the
// unbonding entries alike) is at least the task's exposure; at most all of it. The least
// such fraction is x/staking-slash's CoveringFraction, over bonded and unbonding together:
// counted over the bonded part alone, a provider with entries unbonding lost the exposure
// times (bonded + unbonding) / bonded, and all it had with nothing bonded.
func (k Keeper) penaltyPPM(ctx context.Context, provider sdk.AccAddress, ppm uint32, exposure sdkmath.Int) (uint32, error) {
	if exposure.IsNil() || !exposure.IsPositive() {
		return ppm, nil
	}
	f, err := k.collateral.CoveringFraction(ctx, provider, validate.PPMOne, exposure)
	if err != nil {
		return 0, err
	}
	return max(ppm, f), nil
}
