package gpu

import "fmt"

// MIGProfileName is NVIDIA's name for a MIG device: "<g>g.<m>gb", prefixed by
// "<c>c." when its compute instance has fewer slices than its GPU instance.
//
// The memory figure follows nvidia-smi and go-nvlib: the slice's share of the
// GPU's memory, rounded up to the next eighth, times the GPU's memory in whole
// GiB (rounded up), rounded to the nearest GB:
//
//	eighths = ceil(8 * sliceMiB / parentMiB)
//	gb      = round(eighths * ceil(parentMiB / 1024) / 8)
//
// so an A100-40GB's 4864 MiB slice is "1g.5gb" and an H100-80GB's 9856 MiB
// slice is "1g.10gb". Returns "" when an input is zero.
func MIGProfileName(giSlices, ciSlices uint32, sliceMiB, parentMiB uint64) string {
	if giSlices == 0 || sliceMiB == 0 || parentMiB == 0 {
		return ""
	}
	eighths := (8*sliceMiB + parentMiB - 1) / parentMiB
	parentGiB := (parentMiB + 1023) / 1024
	gb := (eighths*parentGiB + 4) / 8
	name := fmt.Sprintf("%dg.%dgb", giSlices, gb)
	if ciSlices != 0 && ciSlices < giSlices {
		name = fmt.Sprintf("%dc.%s", ciSlices, name)
	}
	return name
}
