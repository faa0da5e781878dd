// Package gpu is the worker's view of its accelerators: which GPUs (and MIG
// slices) the machine has, what they are doing right now, and how much GPU time
// and energy a task used.
//
// NVIDIA GPUs are read through NVML (github.com/NVIDIA/go-nvml) behind
// nvml.Interface, so tests inject go-nvml's mock. NVML needs cgo; a binary built
// with CGO_ENABLED=0, or a machine without the NVIDIA driver, gets the CPU-only
// inventory (no devices, Backend "none") with the reason it fell back, never an
// error. An error from Open means NVML is present but broken.
//
// Units: memory in MiB, power in milliwatts (limits in watts), energy in
// millijoules (NVML's cumulative counter), temperature in degrees Celsius,
// utilisation in percent over NVML's last sample period.
package gpu
