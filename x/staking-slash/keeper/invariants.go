package keeper

import (
	"fmt"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/invariant"
	"github.com/flopsnet/flops/x/staking-slash/types"
)

// RegisterInvariants registers the module's accounting invariants.
func (k Keeper) RegisterInvariants(reg invariant.Registrar) {
	reg.Register(types.ModuleName, types.InvariantCollateral, CollateralInvariant(k))
}

// CollateralInvariant checks that the module account's balance of the collateral denom
// equals the sum of every provider's bonded collateral plus every open unbonding entry,
// and that the running totals TotalBonded and TotalUnbonding equal those sums.
func CollateralInvariant(k Keeper) invariant.Invariant {
	return func(ctx sdk.Context) (string, bool) {
		msg, broken := k.checkCollateral(ctx)
		return invariant.Format(types.ModuleName, types.InvariantCollateral, msg, broken), broken
	}
}

func (k Keeper) checkCollateral(ctx sdk.Context) (string, bool) {
	p, err := k.Params.Get(ctx)
	if err != nil {
		return fmt.Sprintf("params: %s", err), true
	}
	sumBonded := sdkmath.ZeroInt()
	if err := k.Collaterals.Walk(ctx, nil, func(_ sdk.AccAddress, c types.Collateral) (bool, error) {
		sumBonded = sumBonded.Add(c.Bonded)
		return false, nil
	}); err != nil {
		return fmt.Sprintf("collaterals: %s", err), true
	}
	sumUnbonding := sdkmath.ZeroInt()
	if err := k.Unbondings.Walk(ctx, nil, func(_ UnbondingKey, e types.UnbondingEntry) (bool, error) {
		sumUnbonding = sumUnbonding.Add(e.Amount)
		return false, nil
	}); err != nil {
		return fmt.Sprintf("unbondings: %s", err), true
	}
	totalBonded, err := getTotal(ctx, k.TotalBonded)
	if err != nil {
		return fmt.Sprintf("total bonded: %s", err), true
	}
	totalUnbonding, err := getTotal(ctx, k.TotalUnbonding)
	if err != nil {
		return fmt.Sprintf("total unbonding: %s", err), true
	}
	balance := k.bankKeeper.GetBalance(ctx, k.ModuleAddress(), p.CollateralDenom).Amount
	want := sumBonded.Add(sumUnbonding)

	msg := fmt.Sprintf("module account balance %s%s, bonded %s + unbonding %s = %s; running totals bonded %s, unbonding %s",
		balance, p.CollateralDenom, sumBonded, sumUnbonding, want, totalBonded, totalUnbonding)
	broken := !balance.Equal(want) || !totalBonded.Equal(sumBonded) || !totalUnbonding.Equal(sumUnbonding)
	return msg, broken
}
