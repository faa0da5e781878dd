package types

import (
	"slices"

	"github.com/flopsnet/flops/internal/validate"
)

// The GFL index of a node for an epoch (DESIGN.md section 4, x/gfl):
//
//	power = median(verified samples) * availability,  availability = passed / concluded
//
// in GFLOP/s (= ugfl), integer, truncated. Failed and missed challenges are the zero
// samples of the design: they count in availability, not in the median, so a node that
// answers 60% of its challenges keeps 60% of its measured power instead of falling off a
// cliff at 50%, and a node that stops answering goes to zero.

// Median returns the median of samples (the mean of the two middle ones, truncated, for
// an even count), or 0 for none. It does not modify samples.
func Median(samples []uint64) uint64 {
	n := len(samples)
	if n == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	if n%2 == 1 {
		return s[n/2]
	}
	a, b := s[n/2-1], s[n/2]
	return a/2 + b/2 + (a%2+b%2)/2
}

// AvailabilityPPM is passed / concluded in parts per million (0 when nothing concluded).
func AvailabilityPPM(passed, concluded uint32) uint32 {
	if concluded == 0 {
		return 0
	}
	if passed > concluded {
		passed = concluded
	}
	return uint32(uint64(passed) * validate.PPMOne / uint64(concluded))
}

// IndexPower is median * availability, truncated.
func IndexPower(median uint64, availabilityPPM uint32) uint64 {
	// median <= max_claimed-scale values (< 2^44), availability <= 2^20: no overflow.
	hi := median / validate.PPMOne
	lo := median % validate.PPMOne
	return hi*uint64(availabilityPPM) + lo*uint64(availabilityPPM)/validate.PPMOne
}

// Corrected is FLOPS_corrected = power * W_class for one workload class and GPU class.
func Corrected(power uint64, weights WorkloadWeights, class PerformanceFactors) uint64 {
	w := weights.Weight(class)
	return power/validate.PPMOne*w + power%validate.PPMOne*w/validate.PPMOne
}
