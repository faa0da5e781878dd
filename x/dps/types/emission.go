package types

import (
	"math/big"
	"time"

	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/internal/validate"
)

// The emission and its halvings (DESIGN.md section 4, x/dps; DeepSquare's section 4).
// Pure functions of integers: the keeper applies them, the simulator in scripts/emission
// draws docs/emission.png with them, and the table tests pin them.
//
// Units: GFL in ugfl (1 ugfl = 1 GFLOP/s), DPS in udps. R0 = dps_per_gfl is DPS per GFL,
// which is also udps per ugfl (both denoms have 6 decimals). In era h the rate is
// R = R0 / 2^h.
//
// A distribution of epoch n, at block time t, with network power G (ugfl), pool balance
// B and udps supply S, does in this order:
//
//  1. cumulative += G.
//  2. Replenishment credit (the seed's buyback): replenished = max(B - pool_baseline, 0),
//     the DPS that came into the pool since the previous distribution started net of what
//     it paid; cumulative = max(cumulative - floor(replenished / R), 0). The credit comes
//     after this epoch's GFL so that a pool refilled as fast as the network uses it keeps
//     the threshold away however large the network is (credited first, it could only
//     cancel earlier epochs' GFL, and a network above the threshold would halve every
//     epoch whatever the buyback).
//  3. Halving test: if t - last_halving >= halving_period (cause TIME), or else
//     cumulative >= halving_threshold (cause THRESHOLD): h += 1, cumulative = 0,
//     last_halving = t. At most one halving per distribution.
//  4. Emission in the (possibly new) era: uncapped = floor(share * G * R0 / 2^h);
//     E = min(uncapped, B, max(max_supply - (S - B), 0)): never more than the pool holds,
//     and never so much that the udps outside the pool exceeds max_supply.
//  5. Split: E_avail = floor(E * availability_share), E_work = E - E_avail.
//  6. pool_baseline = B; the keeper subtracts what the distribution pays when it ends.

// ppm is 1,000,000 as a big integer.
var ppm = big.NewInt(validate.PPMOne)

// decPrecision is 10^18, the scale of a LegacyDec's integer representation.
var decPrecision = new(big.Int).Exp(big.NewInt(10), big.NewInt(sdkmath.LegacyPrecision), nil)

// MaxDPSPerGFL bounds dps_per_gfl (R0) so that every product below stays far inside
// sdkmath.Int's 256 bits.
var MaxDPSPerGFL = sdkmath.LegacyNewDec(1_000_000)

// Rate is R = R0 / 2^h, truncated to 18 decimals (for queries; the state machine never
// rounds R itself).
func Rate(r0 sdkmath.LegacyDec, era uint32) sdkmath.LegacyDec {
	if r0.IsNil() || !r0.IsPositive() {
		return sdkmath.LegacyZeroDec()
	}
	raw := new(big.Int).Rsh(r0.BigInt(), uint(era))
	return sdkmath.LegacyNewDecFromBigIntWithPrec(raw, sdkmath.LegacyPrecision)
}

// UncappedEmission is floor(share_ppm / 10^6 * G * R0 / 2^h) udps, with G in ugfl.
func UncappedEmission(sharePPM uint32, totalGFL uint64, r0 sdkmath.LegacyDec, era uint32) sdkmath.Int {
	if r0.IsNil() || !r0.IsPositive() {
		return sdkmath.ZeroInt()
	}
	num := new(big.Int).Mul(big.NewInt(int64(sharePPM)), new(big.Int).SetUint64(totalGFL))
	num.Mul(num, r0.BigInt())
	num.Quo(num, new(big.Int).Mul(ppm, decPrecision))
	// floor(floor(x / d) / 2^h) = floor(x / (d * 2^h)) for x, d >= 0.
	num.Rsh(num, uint(era))
	return sdkmath.NewIntFromBigInt(num)
}

// CapEmission caps an emission by the pool balance and by what max_supply leaves: the
// udps supply outside the pool (supply - pool) plus the emission never exceeds maxSupply.
// The result is never negative.
func CapEmission(uncapped, pool, supply, maxSupply sdkmath.Int) sdkmath.Int {
	e := sdkmath.MinInt(uncapped, pool)
	room := maxSupply.Sub(supply.Sub(pool))
	e = sdkmath.MinInt(e, room)
	if e.IsNegative() {
		return sdkmath.ZeroInt()
	}
	return e
}

// SplitEmission is E_avail = floor(E * availability_ppm / 10^6) and E_work = E - E_avail.
func SplitEmission(e sdkmath.Int, availabilityPPM uint32) (avail, work sdkmath.Int) {
	avail = e.MulRaw(int64(availabilityPPM)).QuoRaw(validate.PPMOne)
	return avail, e.Sub(avail)
}

// GFLCredit is floor(replenished / R) = floor(replenished * 2^h / R0) ugfl: the GFL that
// the replenished DPS buys back at the current rate. It is capped at limit (the
// cumulative counter it is taken from), which also keeps it inside sdkmath.Int.
func GFLCredit(replenished sdkmath.Int, r0 sdkmath.LegacyDec, era uint32, limit sdkmath.Int) sdkmath.Int {
	if !replenished.IsPositive() || r0.IsNil() || !r0.IsPositive() || !limit.IsPositive() {
		return sdkmath.ZeroInt()
	}
	num := new(big.Int).Lsh(replenished.BigInt(), uint(era))
	num.Mul(num, decPrecision)
	num.Quo(num, r0.BigInt())
	if num.Cmp(limit.BigInt()) >= 0 {
		return limit
	}
	return sdkmath.NewIntFromBigInt(num)
}

// EraStep is what one distribution's era update did.
type EraStep struct {
	// Replenished is max(pool - pool_baseline, 0), udps.
	Replenished sdkmath.Int
	// Credit is the ugfl that Replenished took off the cumulative counter.
	Credit sdkmath.Int
	// Cause is HALVING_CAUSE_UNSPECIFIED when no halving happened.
	Cause HalvingCause
	// CumulativeAtHalving is the counter that triggered the halving (before it restarted).
	CumulativeAtHalving sdkmath.Int
}

// AdvanceEra runs steps 1 to 3 and 6 of the order of operations above: this epoch's GFL,
// the replenishment credit, the halving test, and the new pool baseline.
func AdvanceEra(p Params, era EraState, now time.Time, totalGFL uint64, pool sdkmath.Int) (EraState, EraStep) {
	cum := era.CumulativeGfl
	if cum.IsNil() {
		cum = sdkmath.ZeroInt()
	}
	baseline := era.PoolBaseline
	if baseline.IsNil() {
		baseline = sdkmath.ZeroInt()
	}
	step := EraStep{Replenished: sdkmath.ZeroInt(), Credit: sdkmath.ZeroInt(), CumulativeAtHalving: sdkmath.ZeroInt()}
	if pool.GT(baseline) {
		step.Replenished = pool.Sub(baseline)
	}
	cum = cum.Add(sdkmath.NewIntFromUint64(totalGFL))
	step.Credit = GFLCredit(step.Replenished, p.DpsPerGfl, era.Era, cum)
	cum = cum.Sub(step.Credit)

	switch {
	case !now.Before(era.LastHalvingTime.Add(p.HalvingPeriod)):
		step.Cause = HALVING_CAUSE_TIME
	case cum.GTE(p.HalvingThreshold):
		step.Cause = HALVING_CAUSE_THRESHOLD
	}
	if step.Cause != HALVING_CAUSE_UNSPECIFIED {
		step.CumulativeAtHalving = cum
		era.Era++
		era.LastHalvingTime = now
		cum = sdkmath.ZeroInt()
	}
	era.CumulativeGfl = cum
	era.PoolBaseline = pool
	return era, step
}

// AfterPayouts is step 6's end: once a distribution has paid paid udps, the pool
// baseline drops by it (never below zero), so that the next distribution credits exactly
// what came into the pool since this one started.
func (e EraState) AfterPayouts(paid sdkmath.Int) EraState {
	e.PoolBaseline = sdkmath.MaxInt(e.PoolBaseline.Sub(paid), sdkmath.ZeroInt())
	return e
}

// DistributionInputs are the chain's numbers when a distribution starts.
type DistributionInputs struct {
	Epoch uint64
	Now   time.Time
	// TotalGFL is x/gfl's network power, ugfl.
	TotalGFL uint64
	// Pool is the reward pool's balance and Supply the udps supply, udps.
	Pool, Supply sdkmath.Int
}

// Plan is a distribution as it starts.
type Plan struct {
	// Era is the halving state after the distribution's era update.
	Era EraState
	// Step says what the era update did.
	Step EraStep
	// Distribution has the emission and its split filled in; nothing is paid yet.
	Distribution Distribution
}

// PlanDistribution applies the whole order of operations to one distribution.
func PlanDistribution(p Params, era EraState, in DistributionInputs) Plan {
	newEra, step := AdvanceEra(p, era, in.Now, in.TotalGFL, in.Pool)
	uncapped := UncappedEmission(p.EmissionSharePpm, in.TotalGFL, p.DpsPerGfl, newEra.Era)
	e := CapEmission(uncapped, in.Pool, in.Supply, p.MaxSupply)
	avail, work := SplitEmission(e, p.AvailabilitySharePpm)
	zero := sdkmath.ZeroInt()
	return Plan{
		Era:  newEra,
		Step: step,
		Distribution: Distribution{
			Epoch: in.Epoch, Era: newEra.Era, Halving: step.Cause, TotalGfl: in.TotalGFL,
			Replenished: step.Replenished, GflCredit: step.Credit,
			Uncapped: uncapped, Emission: e, Availability: avail, Work: work,
			PaidAvailability: zero, PaidWork: zero, Remainder: zero,
			DeferredAvailability: zero, DeferredWork: zero,
			StartTime: in.Now,
		},
	}
}

// ReputationFactor is the reward multiplier of a reputation: the score clamped to
// [0, 1] when the node or provider is eligible (its score is at least x/reputation's
// min_score), else 0.
func ReputationFactor(score sdkmath.LegacyDec, eligible bool) sdkmath.LegacyDec {
	switch {
	case !eligible || score.IsNil() || !score.IsPositive():
		return sdkmath.LegacyZeroDec()
	case score.GT(sdkmath.LegacyOneDec()):
		return sdkmath.LegacyOneDec()
	default:
		return score
	}
}

// applyFactor is floor(amount * factor) for a factor in [0, 1].
func applyFactor(amount sdkmath.Int, factor sdkmath.LegacyDec) sdkmath.Int {
	if !amount.IsPositive() || factor.IsNil() || !factor.IsPositive() {
		return sdkmath.ZeroInt()
	}
	if factor.GTE(sdkmath.LegacyOneDec()) {
		return amount
	}
	return factor.MulInt(amount).TruncateInt()
}

// AvailabilityReward is a node's share of E_avail: floor(floor(E_avail * power / total)
// * factor).
func AvailabilityReward(eAvail sdkmath.Int, power, total uint64, factor sdkmath.LegacyDec) sdkmath.Int {
	if total == 0 || power == 0 || !eAvail.IsPositive() {
		return sdkmath.ZeroInt()
	}
	base := eAvail.Mul(sdkmath.NewIntFromUint64(power)).Quo(sdkmath.NewIntFromUint64(total))
	return applyFactor(base, factor)
}

// WorkWeight is the weight of verified work: gflop_seconds * W(class) in ppm.
func WorkWeight(gflopSeconds sdkmath.Int, weightPPM uint32) sdkmath.Int {
	if gflopSeconds.IsNil() || !gflopSeconds.IsPositive() {
		return sdkmath.ZeroInt()
	}
	return gflopSeconds.MulRaw(int64(weightPPM))
}

// WeightOf returns W(class) in ppm from a weights table; a class missing from it weighs
// nothing.
func WeightOf(weights []WorkloadWeight, workload int32) uint32 {
	for _, w := range weights {
		if int32(w.Workload) == workload {
			return w.WeightPpm
		}
	}
	return 0
}

// WorkCap is the most a provider's work can earn: floor(fees * work_reward_cap_ppm / 10^6).
func WorkCap(fees sdkmath.Int, capPPM uint64) sdkmath.Int {
	if fees.IsNil() || !fees.IsPositive() {
		return sdkmath.ZeroInt()
	}
	return sdkmath.NewIntFromBigInt(new(big.Int).Quo(
		new(big.Int).Mul(fees.BigInt(), new(big.Int).SetUint64(capPPM)), ppm))
}

// WorkReward is a provider's share of E_work: floor(min(floor(E_work * weight /
// total_weight), WorkCap(fees)) * factor).
func WorkReward(eWork, weight, totalWeight, fees sdkmath.Int, capPPM uint64, factor sdkmath.LegacyDec) sdkmath.Int {
	if !eWork.IsPositive() || totalWeight.IsNil() || !totalWeight.IsPositive() || weight.IsNil() || !weight.IsPositive() {
		return sdkmath.ZeroInt()
	}
	share := new(big.Int).Quo(new(big.Int).Mul(eWork.BigInt(), weight.BigInt()), totalWeight.BigInt())
	if share.Cmp(eWork.BigInt()) > 0 { // weight > total_weight: inputs moved; never above E_work
		share = eWork.BigInt()
	}
	return applyFactor(sdkmath.MinInt(sdkmath.NewIntFromBigInt(share), WorkCap(fees, capPPM)), factor)
}

// Clip bounds a payout by what is left of its budget (never negative): the guard that
// keeps a distribution from paying more than E_avail or E_work when the inputs moved
// while it ran.
func Clip(amount, budget, paid sdkmath.Int) sdkmath.Int {
	left := budget.Sub(paid)
	if !left.IsPositive() || !amount.IsPositive() {
		return sdkmath.ZeroInt()
	}
	return sdkmath.MinInt(amount, left)
}

// Owed is what a distribution may still pay: E - paid_availability - paid_work.
func (d Distribution) Owed() sdkmath.Int {
	if d.Phase == DISTRIBUTION_PHASE_DONE {
		return sdkmath.ZeroInt()
	}
	return d.Emission.Sub(d.PaidAvailability).Sub(d.PaidWork)
}
