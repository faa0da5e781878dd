//go:build cgo

package gpu

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
)

// dgx is go-nvml's 8 × A100-40GB mock with the counters it leaves unset
// filled in: GPU i reads utilisation 10·i %, memory utilisation 5·i %, i GiB
// used, 100+i W, 40+i °C, a 400 W limit, and an energy counter in energy[i].
type dgx struct {
	*dgxa100.Server
	energy [8]atomic.Uint64 // mJ
}

func newDGX(t *testing.T) *dgx {
	t.Helper()
	s := &dgx{Server: dgxa100.New()}
	for i := range s.Devices {
		d := s.dev(i)
		d.MemoryInfo.Used = uint64(i) * 1024 * mib
		d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 400_000, nvml.SUCCESS }
		d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: uint32(10 * i), Memory: uint32(5 * i)}, nvml.SUCCESS
		}
		d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return uint32(100_000 + 1000*i), nvml.SUCCESS }
		d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return uint32(40 + i), nvml.SUCCESS }
		s.energy[i].Store(1_000_000 * uint64(i+1))
		d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return s.energy[i].Load(), nvml.SUCCESS }
	}
	return s
}

func (s *dgx) dev(i int) *dgxa100.Device { return s.Devices[i].(*dgxa100.Device) }

// migSlice describes one MIG device the test carves: its GPU-instance profile
// (from the mock's A100-40GB table) and compute-instance slices (0: all).
type migSlice struct {
	giProfile int
	ciSlices  uint32
}

// enableMIG turns MIG mode on for GPU i and gives it one MIG device per slice,
// behind NVML's 7 MIG slots; slot 1 is left empty, as after a destroyed
// instance. The MIG devices answer UUID, memory and attributes only: any other
// call panics (go-nvml's mock), which proves Sample never asks a slice for the
// whole GPU's power, energy or temperature.
// It returns the MIG mock devices in slot order.
func (s *dgx) enableMIG(t *testing.T, i int, slices ...migSlice) []*mock.Device {
	t.Helper()
	d := s.dev(i)
	if _, ret := d.SetMigMode(nvml.DEVICE_MIG_ENABLE); ret != nvml.SUCCESS {
		t.Fatalf("SetMigMode: %v", ret)
	}
	slots := make([]nvml.Device, 7)
	var migs []*mock.Device
	slot := 0
	for k, sl := range slices {
		if slot == 1 {
			slot++
		}
		info, found := dgxa100.MIGProfiles.GpuInstanceProfiles[sl.giProfile]
		if !found {
			t.Fatalf("no MIG profile %d", sl.giProfile)
		}
		ci := sl.ciSlices
		if ci == 0 {
			ci = info.SliceCount
		}
		uuid := fmt.Sprintf("MIG-%d-%d-%s", i, k, d.UUID[4:12])
		m := &mock.Device{
			GetUUIDFunc: func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
			GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
				return nvml.Memory{Total: info.MemorySizeMB * mib, Used: 512 * mib}, nvml.SUCCESS
			},
			GetAttributesFunc: func() (nvml.DeviceAttributes, nvml.Return) {
				return nvml.DeviceAttributes{
					GpuInstanceSliceCount:     info.SliceCount,
					ComputeInstanceSliceCount: ci,
					MemorySizeMB:              info.MemorySizeMB,
				}, nvml.SUCCESS
			},
		}
		slots[slot] = m
		migs = append(migs, m)
		slot++
	}
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return len(slots), nvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(n int) (nvml.Device, nvml.Return) {
		if n < 0 || n >= len(slots) {
			return nil, nvml.ERROR_INVALID_ARGUMENT
		}
		if slots[n] == nil {
			return nil, nvml.ERROR_NOT_FOUND
		}
		return slots[n], nvml.SUCCESS
	}
	return migs
}
