package types

import (
	"strconv"
	"strings"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// MeetsRequirements checks the hardware, region and workload a job asks for.
func MeetsRequirements(s NodeSlot, r Requirements, w gfltypes.WorkloadClass) bool {
	if r.MinMemoryMib > s.MinMemoryMib || (r.TensorCores && !s.TensorCores) || (r.Region != "" && r.Region != s.Region) {
		return false
	}
	if r.MinComputeCapability != "" && CompareComputeCapability(s.ComputeCapability, r.MinComputeCapability) < 0 {
		return false
	}
	if len(r.AllowedClasses) > 0 {
		ok := false
		for _, c := range r.AllowedClasses {
			ok = ok || c == s.GpuClass
		}
		if !ok {
			return false
		}
	}
	for _, x := range s.Workloads {
		if x == w {
			return true
		}
	}
	return false
}

// CompareComputeCapability compares "major.minor" compute capabilities.
func CompareComputeCapability(a, b string) int {
	pa, pb := parseCC(a), parseCC(b)
	switch {
	case pa[0] != pb[0]:
		return pa[0] - pb[0]
	default:
		return pa[1] - pb[1]
	}
}

func parseCC(s string) [2]int {
	maj, min, _ := strings.Cut(s, ".")
	a, _ := strconv.Atoi(maj)
	b, _ := strconv.Atoi(min)
	return [2]int{a, b}
}
