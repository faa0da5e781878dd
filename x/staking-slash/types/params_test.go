package types_test

import (
	"testing"

	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/testutil/keepertest"
	"github.com/flopsnet/flops/x/staking-slash/types"
)

var bad = keepertest.Bad[types.Params]

// Every out-of-range x/staking-slash parameter is rejected with ErrInvalidParams naming
// the field.
func TestParamsValidateRejects(t *testing.T) {
	validate := func(p types.Params) error { return p.Validate() }
	keepertest.RunBadParams(t, types.DefaultParams, validate, types.ErrInvalidParams, []keepertest.BadParamCase[types.Params]{
		bad("collateral_denom", func(p *types.Params) { p.CollateralDenom = "" }),
		bad("collateral_denom", func(p *types.Params) { p.CollateralDenom = "1bad" }),
		bad("min_collateral_per_gpu", func(p *types.Params) { p.MinCollateralPerGpu = sdkmath.ZeroInt() }),
		bad("min_collateral_per_gpu", func(p *types.Params) { p.MinCollateralPerGpu = sdkmath.Int{} }),
		bad("exposure_factor_ppm", func(p *types.Params) { p.ExposureFactorPpm = 0 }),
		bad("exposure_factor_ppm", func(p *types.Params) { p.ExposureFactorPpm = 100_000_001 }),
		bad("unbonding_time", func(p *types.Params) { p.UnbondingTime = 0 }),
		bad("max_unbonding_entries", func(p *types.Params) { p.MaxUnbondingEntries = 0 }),
		bad("max_unbonding_entries", func(p *types.Params) { p.MaxUnbondingEntries = 101 }),
		bad("max_matured_per_block", func(p *types.Params) { p.MaxMaturedPerBlock = 0 }),
		bad("compensation_ppm", func(p *types.Params) { p.CompensationPpm = 1_000_001 }),
		bad("reward_ppm", func(p *types.Params) { p.RewardPpm = 1_000_001 }),
		bad("compensation_ppm + reward_ppm = 1000001", func(p *types.Params) { p.CompensationPpm, p.RewardPpm = 600_000, 400_001 }),
	})
}
