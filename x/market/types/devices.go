package types

import (
	"fmt"
	"time"

	sdkmath "cosmossdk.io/math"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// The devices of a node with GPUs in MIG mode (NodeSlot.devices): a task is given exact
// devices, whole GPUs or MIG instances, by FitDevices, and pays for their share of a GPU.
// A node without MIG keeps no device list: its GPUs are alike and counted (gpus,
// gpus_used), and its worker pins any free ones.

// DeviceUsed reports whether a task holds device i.
func (s NodeSlot) DeviceUsed(i int) bool {
	return i/8 < len(s.DevicesUsed) && s.DevicesUsed[i/8]&(1<<(i%8)) != 0
}

// MarkDevices sets (use) or clears the bits of the given devices in a copy of the slot's
// bitmap; ok is false when a device is out of range, or already in the state asked for (a
// device held twice, or released while free): the caller's bookkeeping is out of step.
func (s NodeSlot) MarkDevices(devices []uint32, use bool) ([]byte, bool) {
	bits := make([]byte, (len(s.Devices)+7)/8)
	copy(bits, s.DevicesUsed)
	for _, d := range devices {
		if int(d) >= len(s.Devices) {
			return nil, false
		}
		mask := byte(1 << (d % 8))
		if (bits[d/8]&mask != 0) == use {
			return nil, false
		}
		bits[d/8] ^= mask
	}
	return bits, true
}

// FitDevices chooses the devices of a task of these requirements on the slot: need devices
// with the memory asked for, each a whole GPU, or a MIG instance when the requirements
// allow shared GPUs, and on different cards unless they allow several slices of one.
// free: only devices no task holds (an assignment); otherwise the node's capacity (a bid,
// a pool membership). A task that may share takes MIG instances first, keeping whole GPUs
// for the tasks that may not. Deterministic: devices in the node's order.
func FitDevices(s NodeSlot, r Requirements, free bool) ([]uint32, bool) {
	need := int(r.GPUs())
	if len(s.Devices) < need {
		return nil, false
	}
	out := make([]uint32, 0, need)
	cards := map[uint32]bool{}
	for _, slices := range []bool{true, false} {
		if slices && !r.SharedGpuOk {
			continue
		}
		for i, d := range s.Devices {
			switch {
			case len(out) == need:
				return out, true
			case (d.Slices != 0) != slices, d.MemoryMib < r.MinMemoryMib, free && s.DeviceUsed(i):
				continue
			case cards[d.Card] && !r.MultiSliceOk:
				continue
			}
			cards[d.Card] = true
			out = append(out, uint32(i))
		}
	}
	return out, len(out) == need
}

// Serves reports whether the slot's node can take tasks of the spec, free or not: its
// hardware (GPUs enough for a task), region, runtime and workload, and on a node with MIG
// devices that fit (what a bid or a pool membership needs).
func Serves(s NodeSlot, spec JobSpec) bool {
	if spec.Requirements.GPUs() > s.Gpus || !MeetsRequirements(s, spec) {
		return false
	}
	if len(s.Devices) == 0 {
		return true
	}
	_, ok := FitDevices(s, spec.Requirements, false)
	return ok
}

// QuoteDevices is the price of the given devices of the slot for d: the ask per GPU-hour
// times each device's share of a GPU (a whole GPU 1, a MIG instance its slices over its
// card's), rounded up to the udps.
func QuoteDevices(s NodeSlot, devices []uint32, d time.Duration) sdkmath.Int {
	num, den := DevicesShare(s, devices)
	return quoteShare(s.AskPerGpuHour, num, den, d)
}

// DeviceShareDen is the denominator of a share of a GPU (DevicesShare, Task.device_share):
// 840, the lcm of every slice count a card may have (1 to 8), so every share is exact.
const DeviceShareDen = 840

// DevicesShare is how many GPUs the given devices of the slot are, num/den: a whole GPU
// 1, a MIG instance its slices over its card's; den is DeviceShareDen. An index out of
// range counts nothing.
func DevicesShare(s NodeSlot, devices []uint32) (num, den uint64) {
	for _, i := range devices {
		if int(i) >= len(s.Devices) {
			continue
		}
		dev := s.Devices[i]
		if dev.Slices == 0 || dev.CardSlices == 0 || dev.CardSlices > 8 {
			num += DeviceShareDen
			continue
		}
		num += DeviceShareDen * uint64(dev.Slices) / uint64(dev.CardSlices)
	}
	return num, DeviceShareDen
}

// DeviceUUIDs are the UUIDs of a node's devices in the order of NodeSlot.devices (each GPU
// offered whole, or its MIG instances), and of indices the UUIDs of those devices: what a
// worker pins a task's Task.devices to.
func DeviceUUIDs(n gfltypes.Node, indices []uint32) ([]string, error) {
	all := gfltypes.SchedulableUUIDs(n.Gpus)
	out := make([]string, 0, len(indices))
	for _, i := range indices {
		if int(i) >= len(all) {
			return nil, fmt.Errorf("device %d of node %d: it has %d", i, n.Id, len(all))
		}
		out = append(out, all[i])
	}
	return out, nil
}

// DeviceRenumbering maps the devices of a node with MIG (NodeSlot.devices) before a change
// of its inventory to its devices after, or to its cards when it has no MIG after (each
// card a device, as a node with MIG lists a whole card): to[i] is the index after of
// device i, or -1 where the device is gone or not alike. Alike: the same UUID on the same
// card (by the card's UUID), with the same memory, slices and card slices, so that a task
// holding it keeps what it was given, priced and placed for (its cards apart or shared).
func DeviceRenumbering(before, after gfltypes.Node) []int {
	type device struct {
		SlotDevice
		uuid, card string
	}
	devices := func(n gfltypes.Node) []device {
		list := SlotFromNode(n).Devices
		if len(list) == 0 {
			for card, g := range n.Gpus {
				list = append(list, SlotDevice{Card: uint32(card), MemoryMib: g.MemoryMib})
			}
		}
		uuids := gfltypes.SchedulableUUIDs(n.Gpus)
		out := make([]device, len(list))
		for i, d := range list {
			out[i] = device{SlotDevice: d, uuid: uuids[i], card: n.Gpus[d.Card].Uuid}
			out[i].Card = 0 // its place among the cards may move; its card's UUID may not
		}
		return out
	}
	was, is := devices(before), devices(after)
	at := make(map[string]int, len(is))
	for j, d := range is {
		at[d.uuid] = j
	}
	to := make([]int, len(was))
	for i, d := range was {
		to[i] = -1
		if j, ok := at[d.uuid]; ok && is[j] == d {
			to[i] = j
		}
	}
	return to
}

// FitsJob: the node can take the job's tasks, its load aside: enough GPUs, the disk the
// job names, its requirements and workload, and on a node with MIG devices of the
// task's shape. An auction's winner whose node no longer fits at the close forfeits its
// deposit; flops-worker withdraws its bids that its node no longer fits.
func FitsJob(s NodeSlot, spec JobSpec) bool {
	if spec.Requirements.GPUs() > s.Gpus || spec.Requirements.DiskMibPerGpu > s.DiskMibPerGpu || !MeetsRequirements(s, spec) {
		return false
	}
	_, ok := FitDevices(s, spec.Requirements, false)
	return len(s.Devices) == 0 || ok
}
