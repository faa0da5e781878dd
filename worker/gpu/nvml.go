//go:build cgo

package gpu

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

const mib = 1024 * 1024

// Open is the machine's GPU inventory: NVML when the NVIDIA driver is there,
// else the CPU-only inventory with the reason. An error means NVML is present
// but failed (permissions, a driver/library mismatch, a lost GPU).
func Open(log *slog.Logger) (Inventory, error) {
	return OpenLibrary(nvml.New(), log)
}

// OpenLibrary initialises lib and returns the inventory over it. Tests pass
// go-nvml's mock. A missing library, a driver that is not loaded, or a driver
// with no GPUs gives the CPU-only inventory; Close shuts lib down.
func OpenLibrary(lib nvml.Interface, log *slog.Logger) (Inventory, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "gpu")
	switch ret := lib.Init(); {
	case errors.Is(ret, nvml.ERROR_LIBRARY_NOT_FOUND):
		return cpuOnly(log, "NVML library (libnvidia-ml.so.1) not found: no NVIDIA driver installed"), nil
	case errors.Is(ret, nvml.ERROR_DRIVER_NOT_LOADED):
		return cpuOnly(log, "NVIDIA driver not loaded"), nil
	case !errors.Is(ret, nvml.SUCCESS):
		return nil, fmt.Errorf("nvml init: %w", ret)
	}
	n, ret := lib.DeviceGetCount()
	if !errors.Is(ret, nvml.SUCCESS) {
		_ = lib.Shutdown()
		return nil, fmt.Errorf("nvml device count: %w", ret)
	}
	if n == 0 {
		_ = lib.Shutdown()
		return cpuOnly(log, "NVML reports no GPUs"), nil
	}
	inv := &NVML{lib: lib, log: log, mig: map[string]nvml.Device{}}
	if v, ret := lib.SystemGetDriverVersion(); errors.Is(ret, nvml.SUCCESS) {
		log.Info("NVML ready", "gpus", n, "driver", v)
	} else {
		log.Info("NVML ready", "gpus", n)
	}
	return inv, nil
}

func cpuOnly(log *slog.Logger, reason string) *CPUOnly {
	log.Warn("no GPU backend, offering CPU only", "reason", reason)
	return NewCPUOnly(reason)
}

// NVML is the inventory over the NVIDIA driver.
type NVML struct {
	lib nvml.Interface
	log *slog.Logger

	mu     sync.Mutex
	closed bool
	// mig maps each MIG device UUID seen by the last Devices call to its
	// handle: NVML's by-UUID lookup does not find MIG devices on every driver.
	mig map[string]nvml.Device
	// lost holds the indexes of the GPUs NVML reported lost, each logged once
	lost map[int]bool
}

var _ Inventory = (*NVML)(nil)

// Backend is BackendNVML.
func (n *NVML) Backend() string { return BackendNVML }

// Close shuts NVML down; later calls fail with ErrClosed.
func (n *NVML) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	if ret := n.lib.Shutdown(); !errors.Is(ret, nvml.SUCCESS) {
		return fmt.Errorf("nvml shutdown: %w", ret)
	}
	return nil
}

// ErrClosed is returned by an NVML inventory used after Close.
var ErrClosed = errors.New("gpu inventory closed")

func (n *NVML) checkOpen(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return ErrClosed
	}
	return nil
}

// Devices lists every GPU with its MIG devices. A GPU that NVML reports lost (fallen off
// the bus, a fatal Xid: NVML_ERROR_GPU_IS_LOST) is left out and logged, so that one failed
// card does not take the machine's other GPUs off the market; any other GPU that fails a
// required query (UUID, name, memory, compute capability) fails the whole listing;
// optional facts (power limit, MIG) that NVML does not support read as zero.
func (n *NVML) Devices(ctx context.Context) ([]Device, error) {
	if err := n.checkOpen(ctx); err != nil {
		return nil, err
	}
	count, ret := n.lib.DeviceGetCount()
	if !ok(ret) {
		return nil, fmt.Errorf("nvml device count: %w", ret)
	}
	devs := make([]Device, 0, count)
	mig := map[string]nvml.Device{}
	for i := range count {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h, ret := n.lib.DeviceGetHandleByIndex(i)
		if !ok(ret) {
			if errors.Is(ret, nvml.ERROR_GPU_IS_LOST) {
				n.gpuLost(i, ret)
				continue
			}
			return nil, fmt.Errorf("nvml device %d: handle: %w", i, ret)
		}
		d, err := n.device(i, h, mig)
		if errors.Is(err, nvml.ERROR_GPU_IS_LOST) {
			n.gpuLost(i, err)
			continue
		}
		if err != nil {
			return nil, err
		}
		devs = append(devs, d)
	}
	n.mu.Lock()
	n.mig = mig
	n.mu.Unlock()
	return devs, nil
}

// gpuLost logs, once, that NVML reports GPU i lost.
func (n *NVML) gpuLost(i int, err error) {
	n.mu.Lock()
	first := !n.lost[i]
	if n.lost == nil {
		n.lost = map[int]bool{}
	}
	n.lost[i] = true
	n.mu.Unlock()
	if first {
		n.log.Error("GPU lost: left out of the inventory until the machine is repaired", "index", i, "err", err)
	}
}

func (n *NVML) device(index int, h nvml.Device, mig map[string]nvml.Device) (Device, error) {
	d := Device{Index: index}
	var ret nvml.Return
	if d.UUID, ret = h.GetUUID(); !ok(ret) {
		return Device{}, fmt.Errorf("nvml device %d: uuid: %w", index, ret)
	}
	if d.Model, ret = h.GetName(); !ok(ret) {
		return Device{}, deviceError(d.UUID, "name", ret)
	}
	mem, ret := h.GetMemoryInfo()
	if !ok(ret) {
		return Device{}, deviceError(d.UUID, "memory info", ret)
	}
	d.MemoryMiB = mem.Total / mib
	major, minor, ret := h.GetCudaComputeCapability()
	if !ok(ret) {
		return Device{}, deviceError(d.UUID, "compute capability", ret)
	}
	d.ComputeCapability = ComputeCapability(major, minor)
	d.TensorCores = HasTensorCores(d.ComputeCapability)
	d.Minor = -1
	if m, ret := h.GetMinorNumber(); ok(ret) {
		d.Minor = m
	}

	limit, ret := h.GetEnforcedPowerLimit()
	switch {
	case ok(ret):
		d.PowerLimitWatts = limit / 1000
	case !unsupported(ret):
		return Device{}, deviceError(d.UUID, "power limit", ret)
	}

	current, _, ret := h.GetMigMode()
	switch {
	case ok(ret):
		d.MIGCapable = true
		d.MIGEnabled = current == nvml.DEVICE_MIG_ENABLE
	case !unsupported(ret):
		return Device{}, deviceError(d.UUID, "MIG mode", ret)
	}
	if d.MIGEnabled {
		insts, err := n.migDevices(d, h, mig)
		if err != nil {
			return Device{}, err
		}
		d.MIG = insts
		if slots, ret := h.GetMaxMigDeviceCount(); ok(ret) && slots > 0 {
			d.MIGSlices = uint32(slots)
		}
	}
	return d, nil
}

// migDevices lists the MIG devices of a GPU in MIG mode. Slots without a MIG
// device answer NOT_FOUND and are skipped.
func (n *NVML) migDevices(parent Device, h nvml.Device, seen map[string]nvml.Device) ([]MIGInstance, error) {
	slots, ret := h.GetMaxMigDeviceCount()
	if !ok(ret) {
		return nil, deviceError(parent.UUID, "max MIG device count", ret)
	}
	var out []MIGInstance
	for i := range slots {
		mh, ret := h.GetMigDeviceHandleByIndex(i)
		if errors.Is(ret, nvml.ERROR_NOT_FOUND) || errors.Is(ret, nvml.ERROR_INVALID_ARGUMENT) {
			continue
		}
		if !ok(ret) {
			return nil, deviceError(parent.UUID, fmt.Sprintf("MIG device %d", i), ret)
		}
		m := MIGInstance{ParentUUID: parent.UUID}
		if m.UUID, ret = mh.GetUUID(); !ok(ret) {
			return nil, deviceError(parent.UUID, fmt.Sprintf("MIG device %d uuid", i), ret)
		}
		if mem, ret := mh.GetMemoryInfo(); ok(ret) {
			m.MemoryMiB = mem.Total / mib
		}
		// GetAttributes works unprivileged, unlike the GPU-instance queries.
		if attrs, ret := mh.GetAttributes(); ok(ret) {
			if m.MemoryMiB == 0 {
				m.MemoryMiB = attrs.MemorySizeMB
			}
			m.Profile = MIGProfileName(attrs.GpuInstanceSliceCount, attrs.ComputeInstanceSliceCount,
				attrs.MemorySizeMB, parent.MemoryMiB)
			m.Slices = attrs.ComputeInstanceSliceCount
			if m.Slices == 0 || m.Slices > attrs.GpuInstanceSliceCount {
				m.Slices = attrs.GpuInstanceSliceCount
			}
		} else {
			n.log.Debug("MIG attributes unavailable", "gpu", parent.UUID, "mig", m.UUID, "err", ret)
		}
		seen[m.UUID] = mh
		out = append(out, m)
	}
	return out, nil
}

// Sample reads one GPU or MIG device. A MIG device reports memory only: NVML
// gives a slice no utilisation, and its power, energy and temperature are the
// whole GPU's, which would be counted once per slice. On a whole GPU, counters
// it does not support read 0; any other NVML failure is an error.
func (n *NVML) Sample(ctx context.Context, uuid string) (Sample, error) {
	if err := n.checkOpen(ctx); err != nil {
		return Sample{}, err
	}
	h, isMIG, err := n.handle(ctx, uuid)
	if err != nil {
		return Sample{}, err
	}
	s := Sample{UUID: uuid}
	if mem, ret := h.GetMemoryInfo(); ok(ret) {
		s.MemoryUsedMiB = mem.Used / mib
	} else if !unsupported(ret) {
		return Sample{}, deviceError(uuid, "memory info", ret)
	}
	if isMIG {
		return s, nil
	}
	if u, ret := h.GetUtilizationRates(); ok(ret) {
		s.UtilizationGPU, s.UtilizationMemory = u.Gpu, u.Memory
	} else if !unsupported(ret) {
		return Sample{}, deviceError(uuid, "utilization", ret)
	}
	if p, ret := h.GetPowerUsage(); ok(ret) {
		s.PowerMilliwatts = p
	} else if !unsupported(ret) {
		return Sample{}, deviceError(uuid, "power usage", ret)
	}
	if e, ret := h.GetTotalEnergyConsumption(); ok(ret) {
		s.EnergyMillijoules = e
	} else if !unsupported(ret) {
		return Sample{}, deviceError(uuid, "energy", ret)
	}
	if t, ret := h.GetTemperature(nvml.TEMPERATURE_GPU); ok(ret) {
		s.TemperatureC = t
	} else if !unsupported(ret) {
		return Sample{}, deviceError(uuid, "temperature", ret)
	}
	return s, nil
}

// handle finds a device by UUID: a MIG device from the last listing (listing
// again once if it is unknown), else NVML's by-UUID lookup. isMIG says which.
func (n *NVML) handle(ctx context.Context, uuid string) (h nvml.Device, isMIG bool, err error) {
	if h := n.migHandle(uuid); h != nil {
		return h, true, nil
	}
	if strings.HasPrefix(uuid, "MIG-") {
		if _, err := n.Devices(ctx); err != nil {
			return nil, false, err
		}
		if h := n.migHandle(uuid); h != nil {
			return h, true, nil
		}
	}
	h, ret := n.lib.DeviceGetHandleByUUID(uuid)
	switch {
	case ok(ret):
		return h, false, nil
	case errors.Is(ret, nvml.ERROR_NOT_FOUND), errors.Is(ret, nvml.ERROR_INVALID_ARGUMENT):
		return nil, false, fmt.Errorf("%w %q", ErrUnknownDevice, uuid)
	default:
		return nil, false, deviceError(uuid, "handle", ret)
	}
}

func (n *NVML) migHandle(uuid string) nvml.Device {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mig[uuid]
}

func ok(ret nvml.Return) bool { return errors.Is(ret, nvml.SUCCESS) }

// unsupported: the device or the caller cannot have this value, which is not a
// fault of the GPU.
func unsupported(ret nvml.Return) bool {
	return errors.Is(ret, nvml.ERROR_NOT_SUPPORTED) || errors.Is(ret, nvml.ERROR_NO_PERMISSION) ||
		errors.Is(ret, nvml.ERROR_FUNCTION_NOT_FOUND)
}

// deviceError names the device and the NVML call that failed.
func deviceError(uuid, op string, err error) error {
	return fmt.Errorf("gpu %s: %s: %w", uuid, op, err)
}
