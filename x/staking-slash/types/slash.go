package types

import (
	"fmt"

	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/internal/validate"
)

var ppmOne = sdkmath.NewInt(validate.PPMOne)

// PPMOf returns floor(amount * ppm / 1,000,000) for a non-negative amount. The remainder
// stays with whoever holds amount. It fails (never panics) if the product overflows 256
// bits.
func PPMOf(amount sdkmath.Int, ppm uint64) (sdkmath.Int, error) {
	if amount.IsNil() || amount.IsNegative() {
		return sdkmath.Int{}, fmt.Errorf("amount %s: must be a non-negative integer", amount)
	}
	prod, err := amount.SafeMul(sdkmath.NewIntFromUint64(ppm))
	if err != nil {
		return sdkmath.Int{}, fmt.Errorf("%s * %d ppm: %w", amount, ppm, err)
	}
	return prod.Quo(ppmOne), nil
}

// SlashSplit is how the total of one slash is shared out, in udps:
//
//	compensation = floor(total * compensation_ppm / 1e6)   if there is a harmed client, else 0
//	reward       = floor(total * reward_ppm / 1e6)         if n > 0 are rewarded, else 0
//	reward_each  = floor(reward / n)
//	reward_paid  = reward_each * n                         (the division's remainder is burned)
//	burned       = total - compensation - reward_paid      (>= 0: compensation_ppm + reward_ppm <= 1e6)
//
// so compensation + reward_paid + burned == total exactly: nothing is created or lost.
type SlashSplit struct {
	Compensation sdkmath.Int
	RewardEach   sdkmath.Int
	RewardPaid   sdkmath.Int
	Burned       sdkmath.Int
}

// CapCompensation lowers the compensation to at most limit (Beneficiaries.CompensationCap)
// and burns the difference: the split still sums to the total.
func (s SlashSplit) CapCompensation(limit sdkmath.Int) SlashSplit {
	if s.Compensation.GT(limit) {
		s.Burned = s.Burned.Add(s.Compensation.Sub(limit))
		s.Compensation = limit
	}
	return s
}

// SplitSlash computes the SlashSplit of total among a harmed client (if compensated) and
// rewarded recipients.
func SplitSlash(total sdkmath.Int, compensationPPM, rewardPPM uint32, compensated bool, rewarded int) (SlashSplit, error) {
	if uint64(compensationPPM)+uint64(rewardPPM) > validate.PPMOne {
		return SlashSplit{}, fmt.Errorf("compensation %d ppm + reward %d ppm exceed %d", compensationPPM, rewardPPM, validate.PPMOne)
	}
	if rewarded < 0 {
		return SlashSplit{}, fmt.Errorf("rewarded count %d: must not be negative", rewarded)
	}
	s := SlashSplit{
		Compensation: sdkmath.ZeroInt(),
		RewardEach:   sdkmath.ZeroInt(),
		RewardPaid:   sdkmath.ZeroInt(),
	}
	var err error
	if compensated {
		if s.Compensation, err = PPMOf(total, uint64(compensationPPM)); err != nil {
			return SlashSplit{}, err
		}
	}
	if rewarded > 0 {
		reward, err := PPMOf(total, uint64(rewardPPM))
		if err != nil {
			return SlashSplit{}, err
		}
		n := sdkmath.NewInt(int64(rewarded))
		s.RewardEach = reward.Quo(n)
		s.RewardPaid = s.RewardEach.Mul(n)
	}
	s.Burned = total.Sub(s.Compensation).Sub(s.RewardPaid)
	return s, nil
}
