package gpu

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

func TestHasTensorCores(t *testing.T) {
	cases := map[string]bool{
		"6.1":  false, // Pascal
		"7.0":  true,  // Volta
		"7.5":  true,  // Turing
		"8.0":  true,  // Ampere
		"9.0":  true,  // Hopper
		"10.0": true,  // Blackwell
		"":     false,
		"x.y":  false,
	}
	for cc, want := range cases {
		if got := HasTensorCores(cc); got != want {
			t.Errorf("HasTensorCores(%q) = %v, want %v", cc, got, want)
		}
	}
}

// MIG profile names match nvidia-smi's for A100-40GB, A100-80GB and H100-80GB.
func TestMIGProfileName(t *testing.T) {
	cases := []struct {
		gi, ci     uint32
		slice, gpu uint64 // MiB
		want       string
	}{
		{1, 1, 4864, 40960, "1g.5gb"},
		{2, 2, 9856, 40960, "2g.10gb"},
		{3, 3, 19968, 40960, "3g.20gb"},
		{4, 4, 19968, 40960, "4g.20gb"},
		{7, 7, 40192, 40960, "7g.40gb"},
		{3, 1, 19968, 40960, "1c.3g.20gb"},
		{1, 1, 9728, 81920, "1g.10gb"},  // A100-80GB
		{3, 3, 40192, 81920, "3g.40gb"}, // A100-80GB
		{1, 1, 9856, 81559, "1g.10gb"},  // H100-80GB HBM3
		{1, 1, 19968, 81559, "1g.20gb"}, // H100-80GB 1g.20gb
		{7, 7, 80384, 81559, "7g.80gb"},
		{0, 0, 4864, 40960, ""},
		{1, 1, 0, 40960, ""},
		{1, 1, 4864, 0, ""},
	}
	for _, tc := range cases {
		if got := MIGProfileName(tc.gi, tc.ci, tc.slice, tc.gpu); got != tc.want {
			t.Errorf("MIGProfileName(%d, %d, %d, %d) = %q, want %q", tc.gi, tc.ci, tc.slice, tc.gpu, got, tc.want)
		}
	}
}

func TestToGpuInfo(t *testing.T) {
	whole := Device{
		Index: 2, UUID: "GPU-0", Model: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559,
		ComputeCapability: "9.0", TensorCores: true, MIGCapable: true, PowerLimitWatts: 700,
	}
	if got, want := ToGpuInfo(whole), (gfltypes.GpuInfo{
		Model: "NVIDIA H100 80GB HBM3", Uuid: "GPU-0", MemoryMib: 81559,
		ComputeCapability: "9.0", TensorCores: true, MigCapable: true, PowerLimitWatts: 700,
	}); !reflect.DeepEqual(got, want) {
		t.Errorf("ToGpuInfo(whole) = %+v, want %+v", got, want)
	}
	// in MIG mode: its instances, each counted at least one slice, and its slice count
	mig := whole
	mig.UUID, mig.MIGEnabled, mig.MIGSlices = "GPU-1", true, 7
	mig.MIG = []MIGInstance{
		{UUID: "MIG-1", ParentUUID: "GPU-1", Profile: "3g.40gb", MemoryMiB: 40192, Slices: 3},
		{UUID: "MIG-2", ParentUUID: "GPU-1", MemoryMiB: 9856}, // no attributes from NVML
	}
	want := gfltypes.GpuInfo{
		Model: "NVIDIA H100 80GB HBM3", Uuid: "GPU-1", MemoryMib: 81559,
		ComputeCapability: "9.0", TensorCores: true, MigCapable: true, PowerLimitWatts: 700,
		MigSlices: 7, MigInstances: []gfltypes.MigInstance{
			{Uuid: "MIG-1", Profile: "3g.40gb", MemoryMib: 40192, Slices: 3},
			{Uuid: "MIG-2", MemoryMib: 9856, Slices: 1},
		},
	}
	if got := ToGpuInfo(mig); !reflect.DeepEqual(got, want) {
		t.Errorf("ToGpuInfo(mig) = %+v, want %+v", got, want)
	}
	if got := ToGpuInfos(nil); len(got) != 0 {
		t.Errorf("ToGpuInfos(nil) = %v", got)
	}
	// a GPU in MIG mode without an instance is not offered
	empty := whole
	empty.UUID, empty.MIGEnabled = "GPU-2", true
	offer, dropped := Offerable([]Device{whole, empty, mig})
	if len(offer) != 2 || offer[0].UUID != "GPU-0" || offer[1].UUID != "GPU-1" || !reflect.DeepEqual(dropped, []string{"GPU-2"}) {
		t.Errorf("Offerable = %v, dropped %v", offer, dropped)
	}
}

func TestSchedulableUUIDs(t *testing.T) {
	devs := []Device{
		{UUID: "GPU-0"},
		{UUID: "GPU-1", MIGCapable: true, MIGEnabled: true, MIG: []MIGInstance{{UUID: "MIG-a"}, {UUID: "MIG-b"}}},
		{UUID: "GPU-2", MIGCapable: true, MIGEnabled: true}, // MIG on, no instances: nothing to run on
		{UUID: "GPU-3", MIGCapable: true},
	}
	want := []string{"GPU-0", "MIG-a", "MIG-b", "GPU-3"}
	if got := SchedulableUUIDs(devs); !slices.Equal(got, want) {
		t.Errorf("SchedulableUUIDs = %v, want %v", got, want)
	}
}

func TestDescribe(t *testing.T) {
	if got := Describe(nil); !strings.Contains(got, "CPU only") {
		t.Errorf("Describe(nil) = %q", got)
	}
	out := Describe([]Device{
		{Index: 0, UUID: "GPU-aaa", Model: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, ComputeCapability: "8.0",
			TensorCores: true, MIGCapable: true, MIGEnabled: true, PowerLimitWatts: 400,
			MIG: []MIGInstance{{UUID: "MIG-bbb", ParentUUID: "GPU-aaa", Profile: "3g.20gb", MemoryMiB: 19968}}},
		{Index: 1, UUID: "GPU-ccc", Model: "NVIDIA GeForce GTX 1080", MemoryMiB: 8192, ComputeCapability: "6.1"},
	})
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("want header + 2 GPUs + 1 MIG row, got:\n%s", out)
	}
	for i, want := range [][]string{
		{"INDEX", "UUID", "MODEL", "MEMORY", "CC", "TENSOR", "MIG", "POWER"},
		{"0", "GPU-aaa", "40960 MiB", "8.0", "yes", "on (1)", "400 W"},
		{"MIG-bbb", "3g.20gb", "19968 MiB"},
		{"1", "GPU-ccc", "6.1", "no", "-"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i, lines[i], w)
			}
		}
	}
}

func TestCPUOnly(t *testing.T) {
	inv := NewCPUOnly("because")
	if inv.Backend() != BackendNone || inv.Reason() != "because" || FallbackReason(inv) != "because" {
		t.Fatalf("CPUOnly = %+v", inv)
	}
	devs, err := inv.Devices(context.Background())
	if err != nil || len(devs) != 0 {
		t.Errorf("Devices = %v, %v", devs, err)
	}
	if _, err := inv.Sample(context.Background(), "GPU-x"); !errors.Is(err, ErrUnknownDevice) {
		t.Errorf("Sample err = %v", err)
	}
	if FallbackReason(&fakeInventory{}) != "" {
		t.Error("FallbackReason of a GPU inventory is not empty")
	}
}

// A task sees its own GPUs' device nodes: the GPU's minor, a MIG device's parent with the
// MIG capabilities, the control nodes with any; a mock GPU has none; a GPU that is not on
// the machine is an error.
func TestDeviceNodes(t *testing.T) {
	devs := []Device{
		{UUID: "GPU-a", Minor: 0}, {UUID: "GPU-b", Minor: 3, MIG: []MIGInstance{{UUID: "MIG-b1", ParentUUID: "GPU-b"}}},
		{UUID: "GPU-mock", Minor: -1},
	}
	nodes, err := DeviceNodes(devs, []string{"GPU-a"})
	require.NoError(t, err)
	require.Equal(t, append([]string{"/dev/nvidia0"}, SharedDeviceNodes...), nodes)
	nodes, err = DeviceNodes(devs, []string{"MIG-b1"})
	require.NoError(t, err)
	require.Equal(t, append([]string{"/dev/nvidia3", "/dev/nvidia-caps"}, SharedDeviceNodes...), nodes)
	nodes, err = DeviceNodes(devs, []string{"GPU-mock"})
	require.NoError(t, err)
	require.Empty(t, nodes)
	_, err = DeviceNodes(devs, []string{"GPU-elsewhere"})
	require.Error(t, err)
}
