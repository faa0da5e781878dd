package types_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/x/dps/types"
)

func i(n int64) sdkmath.Int { return sdkmath.NewInt(n) }

func dec(s string) sdkmath.LegacyDec { return sdkmath.LegacyMustNewDecFromStr(s) }

// seedRate is the seed's 1 DPS = 100 GFL: 0.01 DPS per GFL = 0.01 udps per ugfl.
var seedRate = dec("0.01")

const gfl = 1_000_000 // ugfl per GFL

// UncappedEmission against hand-computed values: E = floor(share * G * R0 / 2^h).
func TestUncappedEmission(t *testing.T) {
	for _, tc := range []struct {
		name  string
		share uint32
		g     uint64
		r0    sdkmath.LegacyDec
		era   uint32
		want  int64
	}{
		// The seed: 20% of 100 GFL paid at 1 DPS = 100 GFL is 0.2 DPS.
		{"seed: 100 GFL, 20%, 1 DPS = 100 GFL", 200_000, 100 * gfl, seedRate, 0, 200_000},
		{"one halving halves it", 200_000, 100 * gfl, seedRate, 1, 100_000},
		{"two halvings quarter it", 200_000, 100 * gfl, seedRate, 2, 50_000},
		{"1,000 GFL in era 3: 2 DPS / 8", 200_000, 1000 * gfl, seedRate, 3, 250_000},
		{"truncated: 0.2 * 1234 * 0.01 = 2.468", 200_000, 1234, seedRate, 0, 2},
		{"truncated: 1,999,999.998", 200_000, 999_999_999, seedRate, 0, 1_999_999},
		{"below one udps is nothing", 200_000, 1, seedRate, 0, 0},
		{"odd share and rate: 0.333333 * 3 * 7 = 6.999993", 333_333, 3, dec("7"), 0, 6},
		{"halving truncates the whole product: 0.2*10*0.75/2 = 0.75", 200_000, 10, dec("0.75"), 1, 0},
		{"share zero", 0, 100 * gfl, seedRate, 0, 0},
		{"era past every bit", 1_000_000, 100 * gfl, seedRate, 200, 0},
		{"full share, R0 1", 1_000_000, 5, dec("1"), 0, 5},
		{"max power and rate stay exact", 1_000_000, ^uint64(0), types.MaxDPSPerGFL, 0, 0}, // want set below
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := types.UncappedEmission(tc.share, tc.g, tc.r0, tc.era)
			want := i(tc.want)
			if tc.g == ^uint64(0) {
				want = sdkmath.NewIntFromUint64(tc.g).MulRaw(1_000_000)
			}
			require.Equal(t, want.String(), got.String())
		})
	}
}

// CapEmission: never more than the pool, never udps outside the pool above max_supply.
func TestCapEmission(t *testing.T) {
	for _, tc := range []struct {
		name                              string
		uncapped, pool, supply, maxSupply int64
		want                              int64
	}{
		{"no cap binds", 100, 1_000, 10_000, 21_000, 100},
		{"the pool caps", 100, 40, 10_000, 21_000, 40},
		{"max supply caps: 19,950 outside the pool leaves 50", 100, 1_000, 20_950, 20_000, 50},
		{"outside exactly at max supply: nothing", 100, 1_000, 21_000, 20_000, 0},
		{"outside already above max supply: nothing, never negative", 100, 1_000, 30_000, 20_000, 0},
		{"empty pool", 100, 0, 10_000, 21_000, 0},
		{"zero uncapped", 0, 1_000, 10_000, 21_000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := types.CapEmission(i(tc.uncapped), i(tc.pool), i(tc.supply), i(tc.maxSupply))
			require.Equal(t, i(tc.want).String(), got.String())
		})
	}
}

// SplitEmission: E_avail = floor(E * share), E_work = E - E_avail, so the split adds up.
func TestSplitEmission(t *testing.T) {
	for _, tc := range []struct {
		name        string
		e           int64
		ppm         uint32
		avail, work int64
	}{
		{"seed's 0.2 DPS half and half", 200_000, 500_000, 100_000, 100_000},
		{"odd E: the rounding goes to work", 1_000_001, 500_000, 500_000, 500_001},
		{"a third", 7, 333_333, 2, 5},
		{"all availability", 9, 1_000_000, 9, 0},
		{"all work", 9, 0, 0, 9},
		{"nothing", 0, 500_000, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, w := types.SplitEmission(i(tc.e), tc.ppm)
			require.Equal(t, i(tc.avail).String(), a.String())
			require.Equal(t, i(tc.work).String(), w.String())
		})
	}
}

// GFLCredit: replenished / R with R = R0 / 2^h, capped at the counter.
func TestGFLCredit(t *testing.T) {
	for _, tc := range []struct {
		name        string
		replenished int64
		r0          sdkmath.LegacyDec
		era         uint32
		limit       int64
		want        int64
	}{
		{"1 DPS buys back 100 GFL in era 0", 1_000_000, seedRate, 0, 1_000 * gfl, 100 * gfl},
		{"and 400 GFL in era 2 (R is a quarter)", 1_000_000, seedRate, 2, 1_000 * gfl, 400 * gfl},
		{"1 udps is 100 ugfl", 1, seedRate, 0, 1_000, 100},
		{"truncated: 1 udps at R0 = 3 is 0.33 ugfl", 1, dec("3"), 0, 1_000, 0},
		{"capped at the counter", 1_000_000, seedRate, 0, 5, 5},
		{"huge era stays exact and capped", 1, seedRate, 10_000, 7, 7},
		{"nothing replenished", 0, seedRate, 0, 1_000, 0},
		{"empty counter", 1_000_000, seedRate, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := types.GFLCredit(i(tc.replenished), tc.r0, tc.era, i(tc.limit))
			require.Equal(t, i(tc.want).String(), got.String())
		})
	}
}

// Rate is R0 / 2^h.
func TestRate(t *testing.T) {
	require.Equal(t, "0.010000000000000000", types.Rate(seedRate, 0).String())
	require.Equal(t, "0.005000000000000000", types.Rate(seedRate, 1).String())
	require.Equal(t, "0.001250000000000000", types.Rate(seedRate, 3).String())
	require.True(t, types.Rate(seedRate, 100).IsZero())
}

// eraParams: threshold 1,000 ugfl, a 10-day period, the seed's rate.
func eraParams() types.Params {
	p := types.DefaultParams()
	p.HalvingThreshold = i(1_000)
	p.HalvingPeriod = 10 * 24 * time.Hour
	p.DpsPerGfl = seedRate
	return p
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func era(h uint32, cum, baseline int64) types.EraState {
	return types.EraState{Era: h, LastHalvingTime: t0, CumulativeGfl: i(cum), PoolBaseline: i(baseline)}
}

// The halving triggers and the replenishment credit (AdvanceEra), one behaviour per case.
func TestAdvanceEra(t *testing.T) {
	p := eraParams()
	day := 24 * time.Hour
	for _, tc := range []struct {
		name     string
		era      types.EraState
		now      time.Time
		g        uint64
		pool     int64
		wantEra  uint32
		wantCum  int64
		cause    types.HalvingCause
		credit   int64
		halvedAt int64
	}{
		{"by time: the period has passed", era(0, 0, 0), t0.Add(10 * day), 10, 0, 1, 0, types.HALVING_CAUSE_TIME, 0, 10},
		{"by time, later than the period", era(2, 500, 0), t0.Add(30 * day), 10, 0, 3, 0, types.HALVING_CAUSE_TIME, 0, 510},
		{"not yet: one second before the period", era(0, 0, 0), t0.Add(10*day - time.Second), 10, 0, 0, 10, types.HALVING_CAUSE_UNSPECIFIED, 0, 0},
		{"by threshold: 990 + 10 reaches 1,000", era(0, 990, 0), t0.Add(day), 10, 0, 1, 0, types.HALVING_CAUSE_THRESHOLD, 0, 1_000},
		{"below threshold: 989 + 10", era(0, 989, 0), t0.Add(day), 10, 0, 0, 999, types.HALVING_CAUSE_UNSPECIFIED, 0, 0},
		{"replenishment delays the threshold halving: 1 udps buys back 100 ugfl", era(0, 990, 500), t0.Add(day), 10, 501, 0, 900, types.HALVING_CAUSE_UNSPECIFIED, 100, 0},
		{"credit doubles per era: 1 udps buys back 200 ugfl in era 1", era(1, 990, 500), t0.Add(day), 10, 501, 1, 800, types.HALVING_CAUSE_UNSPECIFIED, 200, 0},
		{"the counter never goes below zero: 50 + 10, 1,000 bought back", era(0, 50, 0), t0.Add(day), 10, 10, 0, 0, types.HALVING_CAUSE_UNSPECIFIED, 60, 0},
		{"a pool below its baseline replenished nothing", era(0, 50, 500), t0.Add(day), 10, 400, 0, 60, types.HALVING_CAUSE_UNSPECIFIED, 0, 0},
		{"both at once: time is the cause", era(0, 995, 0), t0.Add(11 * day), 10, 0, 1, 0, types.HALVING_CAUSE_TIME, 0, 1_005},
		{"one halving per distribution however late", era(0, 0, 0), t0.Add(100 * day), 5_000, 0, 1, 0, types.HALVING_CAUSE_TIME, 0, 5_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, step := types.AdvanceEra(p, tc.era, tc.now, tc.g, i(tc.pool))
			require.Equal(t, tc.wantEra, got.Era)
			require.Equal(t, i(tc.wantCum).String(), got.CumulativeGfl.String())
			require.Equal(t, tc.cause, step.Cause)
			require.Equal(t, i(tc.credit).String(), step.Credit.String())
			require.Equal(t, i(tc.halvedAt).String(), step.CumulativeAtHalving.String())
			require.Equal(t, i(tc.pool).String(), got.PoolBaseline.String(), "the baseline is the pool when the distribution starts")
			if tc.cause == types.HALVING_CAUSE_UNSPECIFIED {
				require.Equal(t, t0, got.LastHalvingTime)
			} else {
				require.Equal(t, tc.now, got.LastHalvingTime)
			}
		})
	}
}

// The order of operations: add this epoch's GFL, then the buyback credit, then the
// halving test, then the emission in the new era. Each case would come out differently
// in another order.
func TestOrderOfOperations(t *testing.T) {
	p := eraParams()
	day := 24 * time.Hour

	// Credit after adding: a buyback as large as the epoch's use cancels this epoch's GFL
	// (credited first, from an empty counter, it could cancel nothing and leave 100).
	got, _ := types.AdvanceEra(p, era(0, 0, 0), t0.Add(day), 100, i(1))
	require.Equal(t, "0", got.CumulativeGfl.String())

	// So a network above the threshold whose take refills the pool as fast as it is used
	// does not halve: 5,000 ugfl a distribution, 50 udps replenished.
	e := era(0, 0, 0)
	for d := 1; d <= 5; d++ {
		var step types.EraStep
		e, step = types.AdvanceEra(p, e, t0.Add(time.Duration(d)*time.Hour), 5_000, e.PoolBaseline.AddRaw(50))
		require.Equal(t, types.HALVING_CAUSE_UNSPECIFIED, step.Cause, "distribution %d", d)
	}
	require.Equal(t, uint32(0), e.Era)

	// Add before testing: 990 + 10 halves in this distribution, not the next one.
	got, step := types.AdvanceEra(p, era(0, 990, 0), t0.Add(day), 10, i(0))
	require.Equal(t, types.HALVING_CAUSE_THRESHOLD, step.Cause)
	require.Equal(t, uint32(1), got.Era)

	// Credit before testing: the same 990 + 10 with 1 udps replenished does not halve.
	_, step = types.AdvanceEra(p, era(0, 990, 0), t0.Add(day), 10, i(1))
	require.Equal(t, types.HALVING_CAUSE_UNSPECIFIED, step.Cause)

	// Emission after the test: the halving distribution already pays the new rate.
	p.EmissionSharePpm = 200_000
	plan := types.PlanDistribution(p, era(0, 990, 1_000_000_000), types.DistributionInputs{
		Epoch: 7, Now: t0.Add(day), TotalGFL: 100 * gfl, Pool: i(1_000_000_000), Supply: i(2_000_000_000),
	}) // nothing replenished since the baseline
	require.Equal(t, types.HALVING_CAUSE_THRESHOLD, plan.Distribution.Halving)
	require.Equal(t, uint32(1), plan.Distribution.Era)
	require.Equal(t, "100000", plan.Distribution.Emission.String(), "0.2 DPS halved")
}

// PlanDistribution fills the whole record: the seed's example with the default params.
func TestPlanDistribution(t *testing.T) {
	p := types.DefaultParams()
	start := types.EraState{LastHalvingTime: t0, CumulativeGfl: i(0), PoolBaseline: i(5_000_000)}
	plan := types.PlanDistribution(p, start, types.DistributionInputs{
		Epoch: 3, Now: t0.Add(24 * time.Hour), TotalGFL: 100 * gfl,
		Pool: i(7_000_000), Supply: i(1_000_000_000),
	})
	d := plan.Distribution
	require.Equal(t, uint64(3), d.Epoch)
	require.Equal(t, uint32(0), d.Era)
	require.Equal(t, "2000000", d.Replenished.String(), "7 DPS in the pool, 5 DPS baseline")
	require.Equal(t, "100000000", d.GflCredit.String(), "2 DPS buy back 200 GFL, capped by the 100 GFL counted")
	require.Equal(t, "200000", d.Uncapped.String())
	require.Equal(t, "200000", d.Emission.String())
	require.Equal(t, "100000", d.Availability.String())
	require.Equal(t, "100000", d.Work.String())
	require.Equal(t, "0", d.PaidAvailability.String())
	require.Equal(t, "0", plan.Era.CumulativeGfl.String())
	require.Equal(t, "7000000", plan.Era.PoolBaseline.String())

	// The pool caps: 0.05 DPS in the pool.
	plan = types.PlanDistribution(p, start, types.DistributionInputs{
		Epoch: 3, Now: t0, TotalGFL: 100 * gfl, Pool: i(50_000), Supply: i(1_000_000_000),
	})
	require.Equal(t, "200000", plan.Distribution.Uncapped.String())
	require.Equal(t, "50000", plan.Distribution.Emission.String())
	require.Equal(t, "25000", plan.Distribution.Availability.String())
}

// ReputationFactor: the score when eligible, clamped to [0, 1]; nothing otherwise.
func TestReputationFactor(t *testing.T) {
	for _, tc := range []struct {
		name     string
		score    sdkmath.LegacyDec
		eligible bool
		want     string
	}{
		{"eligible: the score", dec("0.8"), true, "0.800000000000000000"},
		{"below x/reputation's min score: nothing", dec("0.8"), false, "0.000000000000000000"},
		{"above one is clamped", dec("1.5"), true, "1.000000000000000000"},
		{"negative is nothing", dec("-0.1"), true, "0.000000000000000000"},
		{"unset is nothing", sdkmath.LegacyDec{}, true, "0.000000000000000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, types.ReputationFactor(tc.score, tc.eligible).String())
		})
	}
}

// AvailabilityReward = floor(floor(E_avail * power / total) * factor).
func TestAvailabilityReward(t *testing.T) {
	for _, tc := range []struct {
		name         string
		eAvail       int64
		power, total uint64
		factor       sdkmath.LegacyDec
		want         int64
	}{
		{"a third of 1,000", 1_000, 1, 3, dec("1"), 333},
		{"half a third: floor(166.5)", 1_000, 1, 3, dec("0.5"), 166},
		{"0.999 of 333: floor(332.667)", 1_000, 1, 3, dec("0.999"), 332},
		{"the whole network", 1_000, 7, 7, dec("1"), 1_000},
		{"no factor", 1_000, 1, 3, dec("0"), 0},
		{"no power", 1_000, 0, 3, dec("1"), 0},
		{"no network", 1_000, 1, 0, dec("1"), 0},
		{"seed: a 100 GFL node of a 1,000 GFL network gets a tenth", 100_000, 100 * gfl, 1_000 * gfl, dec("1"), 10_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := types.AvailabilityReward(i(tc.eAvail), tc.power, tc.total, tc.factor)
			require.Equal(t, i(tc.want).String(), got.String())
		})
	}
}

// WorkReward = floor(min(floor(E_work * weight / total), fees * cap) * factor).
func TestWorkReward(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		eWork, weight, total, fees int64
		capPPM                     uint64
		factor                     sdkmath.LegacyDec
		want                       int64
	}{
		{"a quarter of the work, the cap does not bind", 1_000, 1, 4, 10_000, 40_000, dec("1"), 250},
		{"the cap binds: 4% of 5,000 fees", 1_000, 1, 4, 5_000, 40_000, dec("1"), 200},
		{"the cap, then the factor", 1_000, 1, 4, 5_000, 40_000, dec("0.5"), 100},
		{"floor of the share: 1,000 / 3", 1_000, 1, 3, 1_000_000, 40_000, dec("1"), 333},
		{"no fees, no reward", 1_000, 1, 4, 0, 40_000, dec("1"), 0},
		{"ineligible", 1_000, 1, 4, 10_000, 40_000, dec("0"), 0},
		{"no work in the epoch", 1_000, 0, 0, 10_000, 40_000, dec("1"), 0},
		{"a weight above the total never pays more than E_work", 1_000, 8, 4, 1_000_000_000, 1_000_000, dec("1"), 1_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := types.WorkReward(i(tc.eWork), i(tc.weight), i(tc.total), i(tc.fees), tc.capPPM, tc.factor)
			require.Equal(t, i(tc.want).String(), got.String())
		})
	}
}

// WorkWeight, WeightOf and WorkCap.
func TestWorkWeightAndCap(t *testing.T) {
	p := types.DefaultParams()
	p.WorkloadWeights[1].WeightPpm = 2_500_000
	require.Equal(t, uint32(1_000_000), types.WeightOf(p.WorkloadWeights, int32(p.WorkloadWeights[0].Workload)))
	require.Equal(t, uint32(2_500_000), types.WeightOf(p.WorkloadWeights, int32(p.WorkloadWeights[1].Workload)))
	require.Equal(t, uint32(0), types.WeightOf(p.WorkloadWeights, 99), "an unknown class weighs nothing")
	require.Equal(t, "7500000", types.WorkWeight(i(3), 2_500_000).String())
	require.Equal(t, "0", types.WorkWeight(sdkmath.Int{}, 2_500_000).String())
	require.Equal(t, "40000", types.WorkCap(i(1_000_000), 40_000).String())
	require.Equal(t, "3", types.WorkCap(i(99), 40_000).String(), "floor(3.96)")
}

// Clip keeps a payout within what is left of its part of E.
func TestClip(t *testing.T) {
	require.Equal(t, "5", types.Clip(i(10), i(100), i(95)).String())
	require.Equal(t, "0", types.Clip(i(10), i(100), i(100)).String())
	require.Equal(t, "0", types.Clip(i(10), i(100), i(120)).String())
	require.Equal(t, "3", types.Clip(i(3), i(100), i(0)).String())
}

// AfterPayouts lowers the baseline by what was paid, never below zero.
func TestAfterPayouts(t *testing.T) {
	require.Equal(t, "70", era(0, 0, 100).AfterPayouts(i(30)).PoolBaseline.String())
	require.Equal(t, "0", era(0, 0, 100).AfterPayouts(i(130)).PoolBaseline.String())
}
