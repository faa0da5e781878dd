package types

import (
	"fmt"
	"time"

	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/internal/validate"
)

// DefaultParams returns the launch parameters (DESIGN.md section 4, x/staking-slash).
func DefaultParams() Params {
	return Params{
		EndBlockGas:          100_000_000,
		SlashRetentionBlocks: 1_000_000, // about 69 days of 6 s blocks
		CollateralDenom:      "udps",
		MinCollateralPerGpu:  sdkmath.NewInt(100_000_000), // 100 DPS per GPU
		ExposureFactorPpm:    1_000_000,                   // exposure of the tasks in flight (x/market: value x result_penalty_multiple) <= 1x collateral
		UnbondingTime:        7 * 24 * time.Hour,
		MaxUnbondingEntries:  7,
		MaxMaturedPerBlock:   100,
		CompensationPpm:      500_000,
		RewardPpm:            250_000,
	}
}

// Validate rejects every out-of-range value, naming it.
func (p Params) Validate() error {
	if err := p.validate(); err != nil {
		return errorsmod.Wrap(ErrInvalidParams, err.Error())
	}
	return nil
}

func (p Params) validate() error {
	for _, err := range []error{
		validate.Denom("collateral_denom", p.CollateralDenom),
		validate.PositiveInt("min_collateral_per_gpu", p.MinCollateralPerGpu),
		validate.Range("exposure_factor_ppm", p.ExposureFactorPpm, 1, 100*validate.PPMOne),
		validate.PositiveDuration("unbonding_time", p.UnbondingTime),
		validate.Range("max_unbonding_entries", p.MaxUnbondingEntries, 1, 100),
		validate.Range("max_matured_per_block", p.MaxMaturedPerBlock, 1, 10_000),
		validate.BlockGas("end_block_gas", p.EndBlockGas),
		validate.Range("slash_retention_blocks", p.SlashRetentionBlocks, 1, 1_000_000_000),
		validate.PPM("compensation_ppm", p.CompensationPpm),
		validate.PPM("reward_ppm", p.RewardPpm),
	} {
		if err != nil {
			return err
		}
	}
	if sum := uint64(p.CompensationPpm) + uint64(p.RewardPpm); sum > validate.PPMOne {
		return fmt.Errorf("compensation_ppm + reward_ppm = %d: must be at most %d", sum, validate.PPMOne)
	}
	return nil
}
