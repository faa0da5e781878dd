//go:build cgo

package gpu

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

func openMock(t *testing.T, lib nvml.Interface) *NVML {
	t.Helper()
	inv, err := OpenLibrary(lib, nil)
	if err != nil {
		t.Fatalf("OpenLibrary: %v", err)
	}
	n, isNVML := inv.(*NVML)
	if !isNVML {
		t.Fatalf("OpenLibrary gave %T (%s), want *NVML", inv, FallbackReason(inv))
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// The DGX A100 mock lists as 8 A100-40GB with tensor cores, MIG capable and
// off, 400 W, in index order, with the mock's own UUIDs.
func TestDevicesDGXA100(t *testing.T) {
	s := newDGX(t)
	inv := openMock(t, s)
	if inv.Backend() != BackendNVML {
		t.Fatalf("backend %q", inv.Backend())
	}
	devs, err := inv.Devices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 8 {
		t.Fatalf("got %d devices, want 8", len(devs))
	}
	seen := map[string]bool{}
	for i, d := range devs {
		want := Device{
			Index:             i,
			UUID:              s.dev(i).UUID,
			Minor:             i,
			Model:             "Mock NVIDIA A100-SXM4-40GB",
			MemoryMiB:         40960,
			ComputeCapability: "8.0",
			TensorCores:       true,
			MIGCapable:        true,
			PowerLimitWatts:   400,
		}
		if !reflect.DeepEqual(d, want) {
			t.Errorf("device %d = %+v, want %+v", i, d, want)
		}
		if !strings.HasPrefix(d.UUID, "GPU-") || seen[d.UUID] {
			t.Errorf("device %d UUID %q not a fresh GPU UUID", i, d.UUID)
		}
		seen[d.UUID] = true
	}
}

// A GPU in MIG mode lists its MIG devices (skipping empty slots) with parent,
// profile name and memory; the others stay whole. Jobs are pinned to the MIG
// UUIDs instead of the parent's.
func TestDevicesMIG(t *testing.T) {
	s := newDGX(t)
	migs2 := s.enableMIG(t, 2,
		migSlice{giProfile: nvml.GPU_INSTANCE_PROFILE_3_SLICE},
		migSlice{giProfile: nvml.GPU_INSTANCE_PROFILE_2_SLICE},
		migSlice{giProfile: nvml.GPU_INSTANCE_PROFILE_1_SLICE},
		migSlice{giProfile: nvml.GPU_INSTANCE_PROFILE_1_SLICE})
	migs5 := s.enableMIG(t, 5,
		migSlice{giProfile: nvml.GPU_INSTANCE_PROFILE_4_SLICE, ciSlices: 2})
	inv := openMock(t, s)

	devs, err := inv.Devices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wantProfiles := map[int][]string{
		2: {"3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"},
		5: {"2c.4g.20gb"},
	}
	wantMiB := map[int][]uint64{2: {19968, 9856, 4864, 4864}, 5: {19968}}
	wantSlices := map[int][]uint32{2: {3, 2, 1, 1}, 5: {2}} // the compute instance's
	mocks := map[int][]*mock.Device{2: migs2, 5: migs5}
	for i, d := range devs {
		profiles, on := wantProfiles[i]
		if d.MIGEnabled != on || !d.MIGCapable {
			t.Errorf("device %d: MIGEnabled %v MIGCapable %v, want %v true", i, d.MIGEnabled, d.MIGCapable, on)
		}
		if want := map[bool]uint32{true: 7}[on]; d.MIGSlices != want {
			t.Errorf("device %d: MIGSlices %d, want %d", i, d.MIGSlices, want)
		}
		if len(d.MIG) != len(profiles) {
			t.Fatalf("device %d: %d MIG devices, want %d", i, len(d.MIG), len(profiles))
		}
		for k, m := range d.MIG {
			wantUUID, _ := mocks[i][k].GetUUID()
			want := MIGInstance{UUID: wantUUID, ParentUUID: d.UUID, Profile: profiles[k], MemoryMiB: wantMiB[i][k], Slices: wantSlices[i][k]}
			if m != want {
				t.Errorf("device %d MIG %d = %+v, want %+v", i, k, m, want)
			}
		}
	}

	sched := SchedulableUUIDs(devs)
	if len(sched) != 6+5 {
		t.Fatalf("schedulable %d UUIDs, want 11: %v", len(sched), sched)
	}
	for _, u := range sched {
		if u == devs[2].UUID || u == devs[5].UUID {
			t.Errorf("GPU %s is in MIG mode but schedulable whole", u)
		}
	}
	if out := Describe(devs); !strings.Contains(out, "on (4)") || !strings.Contains(out, "2c.4g.20gb") {
		t.Errorf("Describe misses MIG rows:\n%s", out)
	}
}

// A GPU without MIG or a power limit (a consumer card) reports both as absent
// rather than failing the listing.
func TestDevicesOptionalFactsUnsupported(t *testing.T) {
	s := newDGX(t)
	d := s.dev(0)
	d.GetMigModeFunc = func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.CudaComputeCapability.Major, d.CudaComputeCapability.Minor = 6, 1
	inv := openMock(t, s)

	devs, err := inv.Devices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := devs[0]
	if got.MIGCapable || got.MIGEnabled || got.PowerLimitWatts != 0 || got.TensorCores || got.ComputeCapability != "6.1" {
		t.Errorf("device 0 = %+v", got)
	}
}

// A GPU that NVML reports lost (at its handle or at any required query) is left out of
// the listing and the machine's other GPUs are listed; a GPU that fails a required query
// any other way fails the listing, naming the GPU and the NVML error.
func TestDevicesLostGPU(t *testing.T) {
	s := newDGX(t)
	s.dev(4).GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_GPU_IS_LOST }
	byIndex := s.DeviceGetHandleByIndexFunc
	s.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i == 6 {
			return nil, nvml.ERROR_GPU_IS_LOST
		}
		return byIndex(i)
	}
	var logs strings.Builder
	inv, err := OpenLibrary(s, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatalf("OpenLibrary: %v", err)
	}
	t.Cleanup(func() { _ = inv.Close() })

	devs, err := inv.Devices(context.Background())
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	if _, err := inv.Devices(context.Background()); err != nil {
		t.Fatalf("Devices: %v", err)
	}
	if n := strings.Count(logs.String(), "GPU lost"); n != 2 {
		t.Fatalf("%d lines of a lost GPU over two listings, want one for each of the 2 GPUs:\n%s", n, logs.String())
	}
	var got []int
	for _, d := range devs {
		got = append(got, d.Index)
		if d.UUID == s.dev(4).UUID || d.UUID == s.dev(6).UUID {
			t.Fatalf("a lost GPU listed: %+v", d)
		}
	}
	if want := []int{0, 1, 2, 3, 5, 7}; !reflect.DeepEqual(got, want) {
		t.Fatalf("indexes %v, want %v", got, want)
	}

	s.dev(2).GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_UNKNOWN }
	_, err = inv.Devices(context.Background())
	if !errors.Is(err, nvml.ERROR_UNKNOWN) || !strings.Contains(err.Error(), s.dev(2).UUID) {
		t.Fatalf("err = %v, want ERROR_UNKNOWN naming GPU 2", err)
	}
}

// Sample reads a GPU's counters in the package's units.
func TestSample(t *testing.T) {
	s := newDGX(t)
	inv := openMock(t, s)
	uuid := s.dev(3).UUID

	got, err := inv.Sample(context.Background(), uuid)
	if err != nil {
		t.Fatal(err)
	}
	want := Sample{
		UUID: uuid, UtilizationGPU: 30, UtilizationMemory: 15, MemoryUsedMiB: 3072,
		PowerMilliwatts: 103_000, EnergyMillijoules: 4_000_000, TemperatureC: 43,
	}
	if got != want {
		t.Errorf("Sample = %+v, want %+v", got, want)
	}
}

// A MIG device samples its memory; the counters it does not have read 0.
// A MIG UUID never listed before is found by listing again.
func TestSampleMIG(t *testing.T) {
	s := newDGX(t)
	migs := s.enableMIG(t, 1, migSlice{giProfile: nvml.GPU_INSTANCE_PROFILE_7_SLICE})
	inv := openMock(t, s)
	uuid, _ := migs[0].GetUUID()

	got, err := inv.Sample(context.Background(), uuid)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Sample{UUID: uuid, MemoryUsedMiB: 512}); got != want {
		t.Errorf("Sample = %+v, want %+v", got, want)
	}
}

// Sample errors: an unknown UUID is ErrUnknownDevice, a GPU fault carries the
// NVML code, a cancelled context and a closed inventory stop before NVML.
func TestSampleErrors(t *testing.T) {
	s := newDGX(t)
	s.dev(6).GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) {
		return 0, nvml.ERROR_GPU_IS_LOST
	}
	inv := openMock(t, s)
	ctx := context.Background()

	if _, err := inv.Sample(ctx, "GPU-00000000-0000-0000-0000-000000000000"); !errors.Is(err, ErrUnknownDevice) {
		t.Errorf("unknown UUID: err = %v", err)
	}
	if _, err := inv.Sample(ctx, "MIG-unknown"); !errors.Is(err, ErrUnknownDevice) {
		t.Errorf("unknown MIG UUID: err = %v", err)
	}
	if _, err := inv.Sample(ctx, s.dev(6).UUID); !errors.Is(err, nvml.ERROR_GPU_IS_LOST) {
		t.Errorf("lost GPU: err = %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := inv.Sample(cancelled, s.dev(0).UUID); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
	if _, err := inv.Devices(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Devices: err = %v", err)
	}
	if err := inv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := inv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := inv.Sample(ctx, s.dev(0).UUID); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: err = %v", err)
	}
}

// OpenLibrary falls back to CPU only, without an error, when the machine has
// no usable NVIDIA driver, and fails only when NVML itself is broken.
func TestOpenLibraryFallback(t *testing.T) {
	cases := []struct {
		name       string
		init       nvml.Return
		count      int
		wantReason string // "" : NVML backend expected
		wantErr    error
		wantDown   bool // Shutdown called
	}{
		{name: "no library", init: nvml.ERROR_LIBRARY_NOT_FOUND, wantReason: "not found"},
		{name: "driver not loaded", init: nvml.ERROR_DRIVER_NOT_LOADED, wantReason: "not loaded"},
		{name: "no GPUs", init: nvml.SUCCESS, count: 0, wantReason: "no GPUs", wantDown: true},
		{name: "no permission", init: nvml.ERROR_NO_PERMISSION, wantErr: nvml.ERROR_NO_PERMISSION},
		{name: "version mismatch", init: nvml.ERROR_LIB_RM_VERSION_MISMATCH, wantErr: nvml.ERROR_LIB_RM_VERSION_MISMATCH},
		{name: "one GPU", init: nvml.SUCCESS, count: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			down := false
			lib := &mock.Interface{
				InitFunc:                   func() nvml.Return { return tc.init },
				DeviceGetCountFunc:         func() (int, nvml.Return) { return tc.count, nvml.SUCCESS },
				SystemGetDriverVersionFunc: func() (string, nvml.Return) { return "", nvml.ERROR_NOT_SUPPORTED },
				ShutdownFunc:               func() nvml.Return { down = true; return nvml.SUCCESS },
			}
			inv, err := OpenLibrary(lib, nil)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || inv != nil {
					t.Fatalf("got %v, %v; want error %v", inv, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if down != tc.wantDown {
				t.Errorf("Shutdown called %v, want %v", down, tc.wantDown)
			}
			if tc.wantReason == "" {
				if inv.Backend() != BackendNVML || FallbackReason(inv) != "" {
					t.Fatalf("backend %q reason %q, want nvml", inv.Backend(), FallbackReason(inv))
				}
				return
			}
			if inv.Backend() != BackendNone || !strings.Contains(FallbackReason(inv), tc.wantReason) {
				t.Fatalf("backend %q reason %q, want none with %q", inv.Backend(), FallbackReason(inv), tc.wantReason)
			}
			devs, err := inv.Devices(context.Background())
			if err != nil || len(devs) != 0 {
				t.Errorf("CPU-only Devices = %v, %v", devs, err)
			}
			if _, err := inv.Sample(context.Background(), "GPU-x"); !errors.Is(err, ErrUnknownDevice) {
				t.Errorf("CPU-only Sample err = %v", err)
			}
			if err := inv.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}

// The meter over NVML: 90 s on two GPUs is 180 GPU-seconds and the sum of
// both energy counters' increase; MIG slices count GPU-seconds each and no
// energy (they have no counter of their own).
func TestMeterNVML(t *testing.T) {
	s := newDGX(t)
	migs := s.enableMIG(t, 7,
		migSlice{giProfile: nvml.GPU_INSTANCE_PROFILE_1_SLICE},
		migSlice{giProfile: nvml.GPU_INSTANCE_PROFILE_1_SLICE})
	inv := openMock(t, s)
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}

	gpus := []string{s.dev(0).UUID, s.dev(1).UUID}
	m := StartMeter(inv, gpus, WithClock(clock.now))
	clock.advance(90 * time.Second)
	s.Energy[0].Add(45_000_500) // 45 000.5 J
	s.Energy[1].Add(30_000_000) // 30 000 J
	got := m.Stop()
	want := markettypes.Usage{GpuSeconds: 180, EnergyJoules: 75_000, GpuUuids: gpus}
	if !equalUsage(got, want) {
		t.Errorf("GPU usage = %+v, want %+v", got, want)
	}

	mig0, _ := migs[0].GetUUID()
	mig1, _ := migs[1].GetUUID()
	mm := StartMeter(inv, []string{mig0, mig1}, WithClock(clock.now))
	clock.advance(30 * time.Second)
	s.Energy[7].Add(9_000_000)
	got = mm.Stop()
	want = markettypes.Usage{GpuSeconds: 60, EnergyJoules: 0, GpuUuids: []string{mig0, mig1}}
	if !equalUsage(got, want) {
		t.Errorf("MIG usage = %+v, want %+v", got, want)
	}
}

// ToGpuInfo carries what MsgRegisterNode needs from an NVML listing.
func TestToGpuInfoNVML(t *testing.T) {
	s := newDGX(t)
	inv := openMock(t, s)
	devs, err := inv.Devices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	infos := ToGpuInfos(devs)
	if len(infos) != 8 {
		t.Fatalf("%d infos", len(infos))
	}
	want := gfltypes.GpuInfo{
		Model: "Mock NVIDIA A100-SXM4-40GB", Uuid: s.dev(0).UUID, MemoryMib: 40960,
		ComputeCapability: "8.0", TensorCores: true, MigCapable: true, PowerLimitWatts: 400,
	}
	if !reflect.DeepEqual(infos[0], want) {
		t.Errorf("GpuInfo = %+v, want %+v", infos[0], want)
	}
}
