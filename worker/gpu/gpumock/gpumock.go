//go:build cgo

// Package gpumock is go-nvml's DGX A100 mock made whole for tests: the counters the mock
// leaves unset filled in, and MIG instances carved on demand. The worker's NVML tests and
// the tests that run a worker over MIG devices on the app share it.
package gpumock

import (
	"fmt"
	"sync/atomic"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
)

const mib = 1024 * 1024

// DGX is go-nvml's 8 × A100-40GB mock with the counters it leaves unset filled in: GPU i
// reads utilisation 10·i %, memory utilisation 5·i %, i GiB used, 100+i W, 40+i °C, a
// 400 W limit, and an energy counter in Energy[i] (mJ).
type DGX struct {
	*dgxa100.Server
	Energy [8]atomic.Uint64
}

// NewDGX is the mock with its counters set.
func NewDGX() *DGX {
	s := &DGX{Server: dgxa100.New()}
	for i := range s.Devices {
		d := s.Dev(i)
		d.MemoryInfo.Used = uint64(i) * 1024 * mib
		d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 400_000, nvml.SUCCESS }
		d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: uint32(10 * i), Memory: uint32(5 * i)}, nvml.SUCCESS
		}
		d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return uint32(100_000 + 1000*i), nvml.SUCCESS }
		d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return uint32(40 + i), nvml.SUCCESS }
		s.Energy[i].Store(1_000_000 * uint64(i+1))
		d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return s.Energy[i].Load(), nvml.SUCCESS }
	}
	return s
}

// Dev is GPU i's mock.
func (s *DGX) Dev(i int) *dgxa100.Device { return s.Devices[i].(*dgxa100.Device) }

// MIGSlice describes one MIG device to carve: its GPU-instance profile (from the mock's
// A100-40GB table, e.g. nvml.GPU_INSTANCE_PROFILE_1_SLICE) and compute-instance slices
// (0: all of the GPU instance's).
type MIGSlice struct {
	GIProfile int
	CISlices  uint32
}

// EnableMIG turns MIG mode on for GPU i and gives it one MIG device per slice, behind
// NVML's 7 MIG slots; slot 1 is left empty, as after a destroyed instance (so at most 6
// devices). The MIG devices answer UUID, memory and attributes only: any other call
// panics (go-nvml's mock), which proves a caller never asks a slice for the whole GPU's
// power, energy or temperature. It returns the MIG mock devices in slot order.
func (s *DGX) EnableMIG(i int, slices ...MIGSlice) ([]*mock.Device, error) {
	return s.enableMIG(i, true, slices...)
}

// EnableMIGPacked is EnableMIG without the empty slot: up to 7 devices.
func (s *DGX) EnableMIGPacked(i int, slices ...MIGSlice) ([]*mock.Device, error) {
	return s.enableMIG(i, false, slices...)
}

func (s *DGX) enableMIG(i int, gap bool, slices ...MIGSlice) ([]*mock.Device, error) {
	d := s.Dev(i)
	if _, ret := d.SetMigMode(nvml.DEVICE_MIG_ENABLE); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("SetMigMode: %w", ret)
	}
	slots := make([]nvml.Device, 7)
	var migs []*mock.Device
	slot := 0
	for k, sl := range slices {
		if gap && slot == 1 {
			slot++
		}
		if slot >= len(slots) {
			return nil, fmt.Errorf("%d MIG devices: more than the GPU's %d slots", len(slices), len(slots))
		}
		info, found := dgxa100.MIGProfiles.GpuInstanceProfiles[sl.GIProfile]
		if !found {
			return nil, fmt.Errorf("no MIG profile %d", sl.GIProfile)
		}
		ci := sl.CISlices
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
	return migs, nil
}
