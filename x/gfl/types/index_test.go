package types_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/x/gfl/types"
)

// The index maths against hand-computed values.
func TestIndexMaths(t *testing.T) {
	medians := []struct {
		in   []uint64
		want uint64
	}{
		{nil, 0},                                    // no samples
		{[]uint64{7}, 7},                            // one
		{[]uint64{300, 100, 200}, 200},              // odd count, unsorted
		{[]uint64{1, 2, 3, 4}, 2},                   // even: (2+3)/2 truncated
		{[]uint64{5, 5, 6, 6}, 5},                   // (5+6)/2 = 5.5 -> 5
		{[]uint64{1<<63 + 1, 1<<63 + 3}, 1<<63 + 2}, // no overflow in the mean
	}
	for _, tc := range medians {
		in := append([]uint64(nil), tc.in...)
		require.Equal(t, tc.want, types.Median(tc.in))
		require.Equal(t, in, tc.in, "Median must not reorder its input")
	}

	require.Equal(t, uint32(0), types.AvailabilityPPM(0, 0))
	require.Equal(t, uint32(1_000_000), types.AvailabilityPPM(3, 3))
	require.Equal(t, uint32(666_666), types.AvailabilityPPM(2, 3))
	require.Equal(t, uint32(1_000_000), types.AvailabilityPPM(5, 3), "capped at 1")

	require.Equal(t, uint64(0), types.IndexPower(1000, 0))
	require.Equal(t, uint64(666), types.IndexPower(1000, 666_666))
	require.Equal(t, uint64(35_465_847), types.IndexPower(35_465_847, 1_000_000))
	require.Equal(t, uint64(1<<43)/2, types.IndexPower(1<<43, 500_000))

	w := types.DefaultWorkloadWeights()[0] // training
	a100 := types.DefaultGpuClasses()[3].Factors
	require.Equal(t, uint64(381_900), types.Corrected(1_000_000, w, a100))
	require.Equal(t, uint64(3), types.Corrected(10, w, a100), "3.819 truncated")
}

// GPUs are classified by model substring and memory range, first match in table order.
func TestClassifyGPU(t *testing.T) {
	classes := types.DefaultGpuClasses()
	cases := []struct {
		model string
		mib   uint64
		want  string
	}{
		{"NVIDIA H100 80GB HBM3", 81559, "H100-80GB"},
		{"NVIDIA H100 NVL", 95830, "H100-80GB"},
		{"NVIDIA H200", 143771, "H200-141GB"},
		{"NVIDIA A100-SXM4-80GB", 81920, "A100-80GB"},
		{"NVIDIA A100-SXM4-40GB", 40960, "A100-40GB"},
		{"nvidia a100-pcie-40gb", 40536, "A100-40GB"},
		{"NVIDIA L40S", 46068, "L40S-48GB"},
		{"NVIDIA GeForce RTX 4090", 24564, "RTX4090-24GB"},
		{"NVIDIA GeForce RTX 3090", 24576, ""},
		{"NVIDIA A100-SXM4-40GB", 20000, ""}, // a 40 GB name with 20 GB: no class
	}
	for _, tc := range cases {
		got, ok := types.ClassifyGPU(classes, types.GpuInfo{Model: tc.model, MemoryMib: tc.mib})
		require.Equal(t, tc.want != "", ok, tc.model)
		require.Equal(t, tc.want, got, tc.model)
	}
}
