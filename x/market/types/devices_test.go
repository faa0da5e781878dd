package types_test

import (
	"testing"
	"time"

	sdkmath "cosmossdk.io/math"
	"github.com/stretchr/testify/require"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/types"
)

// migNode: card 0 in MIG mode (instances of 3, 2 and 1 slices of 7), card 1 whole.
func migNode() gfltypes.Node {
	return gfltypes.Node{Id: 4, GpuClass: "A100-40GB", AskPerGpuHour: udpsCoin(7_000_000), Gpus: []gfltypes.GpuInfo{
		{Uuid: "GPU-a", MemoryMib: 40960, MigCapable: true, MigSlices: 7, MigInstances: []gfltypes.MigInstance{
			{Uuid: "MIG-a0", MemoryMib: 19968, Slices: 3}, {Uuid: "MIG-a1", MemoryMib: 9856, Slices: 2}, {Uuid: "MIG-a2", MemoryMib: 4864, Slices: 1},
		}},
		{Uuid: "GPU-b", MemoryMib: 40960, MigCapable: true},
	}}
}

func TestSlotDevices(t *testing.T) {
	n := migNode()
	s := types.SlotFromNode(n)
	require.Equal(t, []types.SlotDevice{
		{Card: 0, MemoryMib: 19968, Slices: 3, CardSlices: 7}, {Card: 0, MemoryMib: 9856, Slices: 2, CardSlices: 7},
		{Card: 0, MemoryMib: 4864, Slices: 1, CardSlices: 7}, {Card: 1, MemoryMib: 40960},
	}, s.Devices)
	require.Equal(t, uint32(4), s.Gpus)
	uuids, err := types.DeviceUUIDs(n, []uint32{3, 0})
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-b", "MIG-a0"}, uuids)
	_, err = types.DeviceUUIDs(n, []uint32{4})
	require.ErrorContains(t, err, "device 4 of node 4")
	require.Equal(t, []string{"MIG-a0", "MIG-a1", "MIG-a2", "GPU-b"}, gfltypes.SchedulableUUIDs(n.Gpus))

	// a node without MIG keeps no device list
	plain := n
	plain.Gpus = []gfltypes.GpuInfo{n.Gpus[1], {Uuid: "GPU-c", MemoryMib: 40960}}
	require.Empty(t, types.SlotFromNode(plain).Devices)
	require.Equal(t, uint32(2), types.SlotFromNode(plain).Gpus)

	bits, ok := s.MarkDevices([]uint32{1, 3}, true)
	require.True(t, ok)
	s.DevicesUsed = bits
	require.True(t, s.DeviceUsed(1) && s.DeviceUsed(3) && !s.DeviceUsed(0) && !s.DeviceUsed(2))
	_, ok = s.MarkDevices([]uint32{3}, true)
	require.False(t, ok, "taken twice")
	_, ok = s.MarkDevices([]uint32{0}, false)
	require.False(t, ok, "released while free")
	_, ok = s.MarkDevices([]uint32{9}, true)
	require.False(t, ok, "out of range")

	cases := []struct {
		name string
		req  types.Requirements
		free bool
		want []uint32
	}{
		{"whole only", types.Requirements{}, true, nil},
		{"whole only, capacity", types.Requirements{}, false, []uint32{3}},
		{"shared: an instance first", types.Requirements{SharedGpuOk: true}, true, []uint32{0}},
		{"shared, 10 GB", types.Requirements{SharedGpuOk: true, MinMemoryMib: 10000}, true, []uint32{0}},
		{"shared, 20 GB: the whole GPU (taken)", types.Requirements{SharedGpuOk: true, MinMemoryMib: 20000}, true, nil},
		{"two on two cards", types.Requirements{GpuCount: 2, SharedGpuOk: true}, false, []uint32{0, 3}},
		{"two of one card", types.Requirements{GpuCount: 2, SharedGpuOk: true, MultiSliceOk: true}, true, []uint32{0, 2}},
		{"three on two cards", types.Requirements{GpuCount: 3, SharedGpuOk: true}, false, nil},
		{"five: more than the node", types.Requirements{GpuCount: 5, SharedGpuOk: true, MultiSliceOk: true}, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := types.FitDevices(s, tc.req, tc.free)
			require.Equal(t, tc.want != nil, ok)
			if ok {
				require.Equal(t, tc.want, got)
			}
		})
	}

	num, den := types.DevicesShare(s, []uint32{0, 2, 3})
	require.Equal(t, uint64(840*3/7+840/7+840), num)
	require.Equal(t, uint64(840), den)
	// 7 DPS/GPU-h x (3/7 + 1/7 + 1) x 1 h
	require.Equal(t, sdkmath.NewInt(11_000_000), types.QuoteDevices(s, []uint32{0, 2, 3}, time.Hour))
	require.Equal(t, sdkmath.NewInt(1_000_000), types.QuoteDevices(s, []uint32{2}, time.Hour))
}

// A genesis slot whose device count or bitmap does not fit its devices is refused.
func TestGenesisSlotDevices(t *testing.T) {
	s := types.SlotFromNode(migNode())
	s.DevicesUsed = []byte{0b1001}
	ok := types.GenesisState{Params: types.DefaultParams(), Slots: []types.NodeSlot{s}}
	require.NoError(t, ok.Validate())
	bad := s
	bad.Gpus = 2
	require.ErrorContains(t, types.GenesisState{Params: types.DefaultParams(), Slots: []types.NodeSlot{bad}}.Validate(), "gpus 2, but 4 devices")
	bad = s
	bad.DevicesUsed = []byte{1, 0}
	require.ErrorContains(t, types.GenesisState{Params: types.DefaultParams(), Slots: []types.NodeSlot{bad}}.Validate(), "2 bytes for 4 devices")
}

// A job that names its disk (requirements.disk_mib_per_gpu) is served only by nodes that
// offer at least that much per GPU; a job that names none, by every node, held to the
// market's task_disk_mib_per_gpu. The offer is the node's spec's, copied to its slot.
func TestDiskRequirement(t *testing.T) {
	n := migNode()
	n.DiskMibPerGpu = 500 << 10
	n.Runtimes = []gfltypes.Runtime{gfltypes.RUNTIME_BUILTIN}
	n.Workloads = []gfltypes.WorkloadClass{gfltypes.WORKLOAD_CLASS_BATCH}
	n.Gpus[0].MigInstances = nil
	offers := types.SlotFromNode(n)
	require.Equal(t, uint64(500<<10), offers.DiskMibPerGpu)
	n.DiskMibPerGpu = 0
	none := types.SlotFromNode(n)
	spec := types.JobSpec{Runtime: gfltypes.RUNTIME_BUILTIN, Workload: gfltypes.WORKLOAD_CLASS_BATCH, Requirements: types.Requirements{GpuCount: 2}}
	for _, c := range []struct {
		disk        uint64
		offers, non bool
	}{
		{0, true, true}, // none named: any node
		{types.MinTaskDiskMiBPerGPU, true, false}, // named: only a node that offers
		{500 << 10, true, false},                  // exactly the offer
		{500<<10 + 1, false, false},               // more than it offers
	} {
		spec.Requirements.DiskMibPerGpu = c.disk
		require.Equal(t, c.offers, types.MeetsRequirements(offers, spec), "%d MiB, node offers 500 GiB", c.disk)
		require.Equal(t, c.offers, types.Serves(offers, spec), "%d MiB, node offers 500 GiB", c.disk)
		require.Equal(t, c.non, types.MeetsRequirements(none, spec), "%d MiB, node offers none", c.disk)
		require.Equal(t, c.non, types.Serves(none, spec), "%d MiB, node offers none", c.disk)
	}
}

// A node with MIG serves (bids for, joins pools of) what its devices fit, free or not.
func TestServes(t *testing.T) {
	s := types.SlotFromNode(migNode())
	s.Runtimes = []gfltypes.Runtime{gfltypes.RUNTIME_BUILTIN}
	s.Workloads = []gfltypes.WorkloadClass{gfltypes.WORKLOAD_CLASS_BATCH}
	spec := types.JobSpec{Runtime: gfltypes.RUNTIME_BUILTIN, Workload: gfltypes.WORKLOAD_CLASS_BATCH, Requirements: types.Requirements{GpuCount: 2}}
	require.False(t, types.Serves(s, spec), "one whole GPU")
	spec.Requirements.SharedGpuOk = true
	require.True(t, types.Serves(s, spec), "an instance and the whole GPU")
	s.DevicesUsed = []byte{0b1111}
	require.True(t, types.Serves(s, spec), "busy, but a bid is for later")
	spec.Requirements.MinMemoryMib = 30000
	require.False(t, types.Serves(s, spec), "one device of 30 GB")

	// a node without MIG serves tasks of as many GPUs as it has, no more: the chain refuses
	// its bids and joins for more, and a worker that sent them paid for each refusal
	whole := s
	whole.Devices, whole.DevicesUsed, whole.Gpus, whole.MinMemoryMib = nil, nil, 2, 40960
	spec = types.JobSpec{Runtime: gfltypes.RUNTIME_BUILTIN, Workload: gfltypes.WORKLOAD_CLASS_BATCH, Requirements: types.Requirements{GpuCount: 2}}
	require.True(t, types.Serves(whole, spec), "two GPUs, a task of two")
	spec.Requirements.GpuCount = 3
	require.False(t, types.Serves(whole, spec), "two GPUs, a task of three")
}

// A device keeps its place in a new inventory only as itself: the same UUID on the same
// card with the same memory and slices; cards moving (one lost before it) renumber it.
func TestDeviceRenumbering(t *testing.T) {
	edit := func(e func(n *gfltypes.Node)) gfltypes.Node {
		n := migNode()
		e(&n)
		return n
	}
	added := gfltypes.GpuInfo{Uuid: "GPU-c", MemoryMib: 40960}
	for _, c := range []struct {
		name  string
		after gfltypes.Node
		want  []int
	}{
		{"unchanged", migNode(), []int{0, 1, 2, 3}},
		{"a card added first", edit(func(n *gfltypes.Node) { n.Gpus = append([]gfltypes.GpuInfo{added}, n.Gpus...) }), []int{1, 2, 3, 4}},
		{"card 1 lost", edit(func(n *gfltypes.Node) { n.Gpus = n.Gpus[:1] }), []int{0, 1, 2, -1}},
		{"card 0 lost, another in MIG mode", edit(func(n *gfltypes.Node) {
			c := added
			c.MigSlices, c.MigInstances = 7, []gfltypes.MigInstance{{Uuid: "MIG-c0", MemoryMib: 40192, Slices: 7}}
			n.Gpus = []gfltypes.GpuInfo{n.Gpus[1], c}
		}), []int{-1, -1, -1, 0}},
		{"out of MIG mode: its cards", edit(func(n *gfltypes.Node) { n.Gpus[0].MigInstances, n.Gpus[0].MigSlices = nil, 0 }), []int{-1, -1, -1, 1}},
		{"out of MIG mode with card 0 lost", edit(func(n *gfltypes.Node) { n.Gpus = n.Gpus[1:] }), []int{-1, -1, -1, 0}},
		{"an instance gone", edit(func(n *gfltypes.Node) { n.Gpus[0].MigInstances = n.Gpus[0].MigInstances[1:] }), []int{-1, 0, 1, 2}},
		{"an instance resized", edit(func(n *gfltypes.Node) { n.Gpus[0].MigInstances[2].Slices = 2 }), []int{0, 1, -1, 3}},
		{"an instance with less memory", edit(func(n *gfltypes.Node) { n.Gpus[0].MigInstances[1].MemoryMib-- }), []int{0, -1, 2, 3}},
		{"card 1 into MIG mode", edit(func(n *gfltypes.Node) {
			n.Gpus[1].MigSlices, n.Gpus[1].MigInstances = 7, []gfltypes.MigInstance{{Uuid: "MIG-b0", MemoryMib: 40192, Slices: 7}}
		}), []int{0, 1, 2, -1}},
		{"an instance's UUID under the other card", edit(func(n *gfltypes.Node) {
			n.Gpus[0].MigInstances = n.Gpus[0].MigInstances[:2]
			n.Gpus[1].MigSlices, n.Gpus[1].MigInstances = 7, []gfltypes.MigInstance{{Uuid: "MIG-a2", MemoryMib: 4864, Slices: 1}}
		}), []int{0, 1, -1, -1}},
	} {
		require.Equal(t, c.want, types.DeviceRenumbering(migNode(), c.after), c.name)
	}
}
