package types

import (
	"slices"
	"strconv"
	"strings"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// MeetsRequirements checks the hardware, region, runtime and workload a job asks for.
func MeetsRequirements(s NodeSlot, spec JobSpec) bool {
	r, w := spec.Requirements, spec.Workload
	if !slices.Contains(s.Runtimes, spec.Runtime) {
		return false
	}
	// a node with MIG: each device's memory is checked by FitDevices
	if (len(s.Devices) == 0 && r.MinMemoryMib > s.MinMemoryMib) || (r.TensorCores && !s.TensorCores) || (r.Region != "" && r.Region != s.Region) {
		return false
	}
	// a job that names its disk needs a node that offers that much (one that offers none
	// takes only the jobs that name none, held to task_disk_mib_per_gpu)
	if r.DiskMibPerGpu > s.DiskMibPerGpu {
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

// Runtime is x/gfl's: a node declares the runtimes its provider accepts, a job names the
// one its tasks need.
type Runtime = gfltypes.Runtime

// The runtimes, as x/gfl defines them.
const (
	RUNTIME_UNSPECIFIED = gfltypes.RUNTIME_UNSPECIFIED
	RUNTIME_BUILTIN     = gfltypes.RUNTIME_BUILTIN
	RUNTIME_PROCESS     = gfltypes.RUNTIME_PROCESS
	RUNTIME_CONTAINER   = gfltypes.RUNTIME_CONTAINER
)
