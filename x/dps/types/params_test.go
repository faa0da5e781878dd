package types_test

import (
	"testing"

	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/testutil/keepertest"
	"github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

var bad = keepertest.Bad[types.Params]

// Every out-of-range x/dps parameter is rejected with ErrInvalidParams naming the field.
func TestParamsValidateRejects(t *testing.T) {
	validate := func(p types.Params) error { return p.Validate() }
	keepertest.RunBadParams(t, types.DefaultParams, validate, types.ErrInvalidParams, []keepertest.BadParamCase[types.Params]{
		bad("epoch_identifier", func(p *types.Params) { p.EpochIdentifier = "" }),
		bad("emission_share_ppm", func(p *types.Params) { p.EmissionSharePpm = 1_000_001 }),
		bad("dps_per_gfl", func(p *types.Params) { p.DpsPerGfl = sdkmath.LegacyZeroDec() }),
		bad("dps_per_gfl", func(p *types.Params) { p.DpsPerGfl = sdkmath.LegacyDec{} }),
		bad("dps_per_gfl 1000000.000000000000000001", func(p *types.Params) { p.DpsPerGfl = types.MaxDPSPerGFL.Add(sdkmath.LegacySmallestDec()) }),
		bad("halving_period", func(p *types.Params) { p.HalvingPeriod = 0 }),
		bad("halving_threshold", func(p *types.Params) { p.HalvingThreshold = sdkmath.ZeroInt() }),
		bad("max_supply", func(p *types.Params) { p.MaxSupply = sdkmath.NewInt(-1) }),
		bad("availability_share_ppm", func(p *types.Params) { p.AvailabilitySharePpm = 1_000_001 }),
		bad("work_reward_cap_ppm", func(p *types.Params) { p.WorkRewardCapPpm = 1_000_001 }),
		bad("max_payouts_per_block", func(p *types.Params) { p.MaxPayoutsPerBlock = 0 }),
		bad("workload_weights: need exactly one entry", func(p *types.Params) { p.WorkloadWeights = p.WorkloadWeights[1:] }),
		bad("workload_weights[1].workload WORKLOAD_CLASS_TRAINING: duplicate", func(p *types.Params) { p.WorkloadWeights[1].Workload = gfltypes.WORKLOAD_CLASS_TRAINING }),
		bad("workload_weights[2].workload 0", func(p *types.Params) { p.WorkloadWeights[2].Workload = gfltypes.WORKLOAD_CLASS_UNSPECIFIED }),
		bad("workload_weights[0].weight_ppm", func(p *types.Params) { p.WorkloadWeights[0].WeightPpm = 0 }),
		bad("workload_weights[0].weight_ppm", func(p *types.Params) { p.WorkloadWeights[0].WeightPpm = 10_000_001 }),
		bad("availability_ask_cap_ppm 999999", func(p *types.Params) { p.AvailabilityAskCapPpm = 999_999 }),
		bad("availability_ask_cap_ppm 1000000001", func(p *types.Params) { p.AvailabilityAskCapPpm = types.MaxAvailabilityAskCapPPM + 1 }),
	})
	for _, c := range []uint64{0, 1_000_000, types.MaxAvailabilityAskCapPPM} {
		p := types.DefaultParams()
		p.AvailabilityAskCapPpm = c
		if err := p.Validate(); err != nil {
			t.Fatalf("availability_ask_cap_ppm %d: %v", c, err)
		}
	}
}
