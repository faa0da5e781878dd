package gpu

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// Backend names reported by Inventory.Backend.
const (
	// BackendNVML: devices come from the NVIDIA driver through NVML.
	BackendNVML = "nvml"
	// BackendNone: no GPU backend; the worker offers CPU only.
	BackendNone = "none"
)

// ErrUnknownDevice is returned by Inventory.Sample for a UUID that is neither a
// GPU nor a MIG instance of this machine.
var ErrUnknownDevice = errors.New("unknown GPU UUID")

// Device is one physical GPU.
type Device struct {
	// Index is NVML's enumeration index (what CUDA_VISIBLE_DEVICES counts, with
	// CUDA_DEVICE_ORDER=PCI_BUS_ID).
	Index int
	// UUID is NVML's GPU UUID, "GPU-...".
	UUID string
	// Minor is the GPU's device minor number: its device node is /dev/nvidia<Minor>;
	// -1 when NVML does not know it (then a sandboxed task cannot be given the GPU).
	Minor int
	// Model is NVML's product name, e.g. "NVIDIA A100-SXM4-40GB".
	Model string
	// MemoryMiB is the total framebuffer memory in MiB.
	MemoryMiB uint64
	// ComputeCapability is CUDA's "major.minor", e.g. "8.0".
	ComputeCapability string
	// TensorCores is true from compute capability 7.0 (Volta) on.
	TensorCores bool
	// MIGCapable: the GPU supports Multi-Instance GPU.
	MIGCapable bool
	// MIGEnabled: MIG mode is currently on; jobs then run on the slices in MIG,
	// never on the whole GPU.
	MIGEnabled bool
	// PowerLimitWatts is the enforced power limit; 0 when NVML does not report it.
	PowerLimitWatts uint32
	// MIG lists the MIG devices (GPU instances) while MIGEnabled.
	MIG []MIGInstance
	// MIGSlices is the GPU's compute slices in MIG mode (NVML's maximum MIG device count:
	// 7 on an A100 or H100, 4 on an A30) while MIGEnabled; 0 otherwise.
	MIGSlices uint32
}

// MIGInstance is one MIG device. A job pinned to it gets its UUID in
// CUDA_VISIBLE_DEVICES.
type MIGInstance struct {
	// UUID is the MIG device UUID, "MIG-...".
	UUID string
	// ParentUUID is the UUID of the physical GPU it is carved from.
	ParentUUID string
	// Profile is NVIDIA's profile name, e.g. "1g.5gb" or "1c.3g.20gb"; empty
	// when NVML does not say.
	Profile string
	// MemoryMiB is the slice's memory in MiB.
	MemoryMiB uint64
	// Slices is its compute slices (its compute instance's, e.g. 2 for "2c.4g.20gb"); 0
	// when NVML does not say.
	Slices uint32
}

// Sample is one reading of a device's counters. Fields NVML does not support
// on the device read 0; a MIG slice reports memory only (its power, energy and
// temperature would be the whole GPU's).
type Sample struct {
	UUID string
	// UtilizationGPU is the percent of NVML's last sample period (1/6 s to 1 s,
	// by product) during which a kernel ran.
	UtilizationGPU uint32
	// UtilizationMemory is the percent of that period the memory was read or written.
	UtilizationMemory uint32
	MemoryUsedMiB     uint64
	PowerMilliwatts   uint32
	// EnergyMillijoules is the cumulative energy counter since the driver was
	// loaded (Volta and later); 0 if unsupported.
	EnergyMillijoules uint64
	TemperatureC      uint32
}

// Inventory lists the machine's GPUs and reads their counters. Implementations
// are safe for concurrent use.
type Inventory interface {
	// Devices lists the physical GPUs in index order, with their MIG devices.
	Devices(ctx context.Context) ([]Device, error)
	// Sample reads the counters of a GPU or MIG device by UUID; ErrUnknownDevice
	// if the machine has no such device.
	Sample(ctx context.Context, uuid string) (Sample, error)
	// Close releases the backend (NVML shutdown). Safe to call twice.
	Close() error
	// Backend is BackendNVML or BackendNone.
	Backend() string
}

// ComputeCapability formats CUDA's compute capability as "major.minor".
func ComputeCapability(major, minor int) string {
	return strconv.Itoa(major) + "." + strconv.Itoa(minor)
}

// HasTensorCores reports whether a GPU of compute capability cc ("major.minor")
// has tensor cores: every NVIDIA GPU from Volta (7.0) on.
func HasTensorCores(cc string) bool {
	major, _, ok := strings.Cut(cc, ".")
	if !ok {
		return false
	}
	m, err := strconv.Atoi(major)
	return err == nil && m >= 7
}

// ToGpuInfo is the GPU as MsgRegisterNode declares it: a GPU in MIG mode with its MIG
// instances, each of which the chain schedules as a device of its own.
func ToGpuInfo(d Device) gfltypes.GpuInfo {
	g := gfltypes.GpuInfo{
		Model:             d.Model,
		Uuid:              d.UUID,
		MemoryMib:         d.MemoryMiB,
		ComputeCapability: d.ComputeCapability,
		TensorCores:       d.TensorCores,
		MigCapable:        d.MIGCapable,
		PowerLimitWatts:   d.PowerLimitWatts,
	}
	if d.MIGEnabled && len(d.MIG) > 0 {
		g.MigSlices = d.MIGSlices
		for _, m := range d.MIG {
			// an instance NVML gave no attributes counts one slice (the least it can be)
			g.MigInstances = append(g.MigInstances, gfltypes.MigInstance{Uuid: m.UUID, Profile: m.Profile, MemoryMib: m.MemoryMiB, Slices: max(m.Slices, 1)})
		}
		if g.MigSlices == 0 {
			g.MigSlices = gfltypes.MaxMIGSlices - 1 // NVIDIA's 7, when NVML did not say
		}
	}
	return g
}

// Offerable are the devices a node can offer: every GPU, except one in MIG mode with no
// MIG instance (CUDA cannot use it whole, and it has no slice to give); dropped lists
// those left out.
func Offerable(devs []Device) (offer []Device, dropped []string) {
	for _, d := range devs {
		if d.MIGEnabled && len(d.MIG) == 0 {
			dropped = append(dropped, d.UUID)
			continue
		}
		offer = append(offer, d)
	}
	return offer, dropped
}

// ToGpuInfos converts every device, in order.
func ToGpuInfos(devs []Device) []gfltypes.GpuInfo {
	out := make([]gfltypes.GpuInfo, 0, len(devs))
	for _, d := range devs {
		out = append(out, ToGpuInfo(d))
	}
	return out
}

// SchedulableUUIDs are the UUIDs a job can be pinned to: each GPU's UUID, or,
// for a GPU in MIG mode, the UUIDs of its MIG devices instead.
func SchedulableUUIDs(devs []Device) []string {
	var out []string
	for _, d := range devs {
		if !d.MIGEnabled {
			out = append(out, d.UUID)
			continue
		}
		for _, m := range d.MIG {
			out = append(out, m.UUID)
		}
	}
	return out
}

// SharedDeviceNodes are the NVIDIA control device nodes a process using any GPU needs;
// those that exist are given to a sandboxed task that is pinned to a GPU.
var SharedDeviceNodes = []string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"}

// DeviceNodes are the device nodes of the GPUs (or MIG devices) named by uuids among
// devs: /dev/nvidia<minor> of each GPU, of a MIG device's parent GPU and then the
// /dev/nvidia-caps directory (whose capabilities CUDA checks to open a MIG device), and,
// when there is any, SharedDeviceNodes.
// A UUID that is not among devs is an error; a GPU whose minor number NVML did not give
// (a mock GPU) has no node.
func DeviceNodes(devs []Device, uuids []string) ([]string, error) {
	var out []string
	add := func(p string) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	node := func(d Device) {
		if d.Minor >= 0 {
			add(fmt.Sprintf("/dev/nvidia%d", d.Minor))
		}
	}
next:
	for _, u := range uuids {
		for _, d := range devs {
			if d.UUID == u {
				node(d)
				continue next
			}
			for _, m := range d.MIG {
				if m.UUID == u {
					node(d)
					add("/dev/nvidia-caps")
					continue next
				}
			}
		}
		return nil, fmt.Errorf("GPU %s is not on this machine", u)
	}
	if len(out) > 0 {
		out = append(out, SharedDeviceNodes...)
	}
	return out, nil
}
