package types

import (
	"fmt"
	"time"

	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/internal/validate"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// DefaultParams returns the launch parameters (DESIGN.md section 4, x/dps; the seed's
// 20% share and 1 DPS = 100 GFL).
func DefaultParams() Params {
	weights := make([]WorkloadWeight, 0, len(gfltypes.WorkloadClasses))
	for _, c := range gfltypes.WorkloadClasses {
		weights = append(weights, WorkloadWeight{Workload: c, WeightPpm: validate.PPMOne})
	}
	return Params{
		EndBlockGas:                 100_000_000,
		DistributionRetentionEpochs: 365,
		EpochIdentifier:             "flops",
		EmissionSharePpm:            200_000,
		DpsPerGfl:                   sdkmath.LegacyNewDecWithPrec(1, 2), // 1 DPS per 100 GFL
		HalvingPeriod:               365 * 24 * time.Hour,
		HalvingThreshold:            sdkmath.NewInt(100_000_000_000),    // 100,000 GFL-epochs in ugfl: about 4,100 GFL held through a year of 15-day epochs
		MaxSupply:                   sdkmath.NewInt(21_000_000_000_000), // 21,000,000 DPS
		AvailabilitySharePpm:        500_000,
		// 0.04x the fees earned from other accounts: below x/market's 5% take, so a
		// provider paying itself through another account loses (x/dps/README.md).
		WorkRewardCapPpm:   40_000,
		WorkloadWeights:    weights,
		MaxPayoutsPerBlock: 100,
		// a node asking more than twice its class's median ask earns no availability
		AvailabilityAskCapPpm: DefaultAvailabilityAskCapPPM,
	}
}

// DefaultAvailabilityAskCapPPM is availability_ask_cap_ppm's default: 2x the class's
// reference ask.
const DefaultAvailabilityAskCapPPM = 2 * validate.PPMOne

// MaxAvailabilityAskCapPPM bounds availability_ask_cap_ppm (1,000x).
const MaxAvailabilityAskCapPPM = 1_000 * validate.PPMOne

// Validate rejects every out-of-range value, naming it.
func (p Params) Validate() error {
	if err := p.validate(); err != nil {
		return errorsmod.Wrap(ErrInvalidParams, err.Error())
	}
	return nil
}

func (p Params) validate() error {
	for _, err := range []error{
		validate.Identifier("epoch_identifier", p.EpochIdentifier),
		validate.PPM("emission_share_ppm", p.EmissionSharePpm),
		validate.PositiveDec("dps_per_gfl", p.DpsPerGfl),
		validate.PositiveDuration("halving_period", p.HalvingPeriod),
		validate.PositiveInt("halving_threshold", p.HalvingThreshold),
		validate.PositiveInt("max_supply", p.MaxSupply),
		validate.PPM("availability_share_ppm", p.AvailabilitySharePpm),
		validate.Range("work_reward_cap_ppm", p.WorkRewardCapPpm, 0, validate.PPMOne),
		validate.Range("max_payouts_per_block", p.MaxPayoutsPerBlock, 1, 10_000),
		validate.BlockGas("end_block_gas", p.EndBlockGas),
		validate.Range("distribution_retention_epochs", p.DistributionRetentionEpochs, 1, 100_000),
	} {
		if err != nil {
			return err
		}
	}
	if c := p.AvailabilityAskCapPpm; c != 0 && (c < validate.PPMOne || c > MaxAvailabilityAskCapPPM) {
		return fmt.Errorf("availability_ask_cap_ppm %d: must be 0 (no cap) or %d to %d", c, validate.PPMOne, uint64(MaxAvailabilityAskCapPPM))
	}
	if p.DpsPerGfl.GT(MaxDPSPerGFL) {
		return fmt.Errorf("dps_per_gfl %s: must be at most %s", p.DpsPerGfl, MaxDPSPerGFL)
	}
	if len(p.WorkloadWeights) != len(gfltypes.WorkloadClasses) {
		return fmt.Errorf("workload_weights: need exactly one entry per workload class (%d), got %d", len(gfltypes.WorkloadClasses), len(p.WorkloadWeights))
	}
	seen := make(map[gfltypes.WorkloadClass]struct{}, len(p.WorkloadWeights))
	for i, w := range p.WorkloadWeights {
		if w.Workload == gfltypes.WORKLOAD_CLASS_UNSPECIFIED || gfltypes.WorkloadClass_name[int32(w.Workload)] == "" {
			return fmt.Errorf("workload_weights[%d].workload %d: unknown workload class", i, w.Workload)
		}
		if _, dup := seen[w.Workload]; dup {
			return fmt.Errorf("workload_weights[%d].workload %s: duplicate", i, w.Workload)
		}
		seen[w.Workload] = struct{}{}
		if err := validate.Range(fmt.Sprintf("workload_weights[%d].weight_ppm", i), w.WeightPpm, 1, 10*validate.PPMOne); err != nil {
			return err
		}
	}
	return nil
}
