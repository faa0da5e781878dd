//go:build cgo

package telemetry

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	"github.com/flopsnet/flops/worker/gpu"
)

// Issue 7's "worker CPU overhead while sampling NVML each second", per round:
//
//	go test -run X -bench . -benchtime 2s ./worker/telemetry/
//
// The figures are Go-side costs only: the mock answers each NVML call from
// memory, where the real driver spends microseconds in an ioctl. go-nvml's
// mock also appends every call to a log under a mutex (about 105 calls per
// round on 8 GPUs), which the nvml-mock figure includes.

const mockGPUs = 8

// newMockMachine is worker/gpu's NVML inventory over go-nvml's 8 × A100-40GB
// mock (dgxa100), with the counters the mock leaves unset filled in as
// worker/gpu's tests fill them: GPU i reads 10·i % busy, i GiB used, 100+i W,
// 40+i °C, a 400 W limit, and an energy counter that grows 1 J per reading,
// so every round also adds to gpu_energy_joules_total.
func newMockMachine(tb testing.TB) gpu.Inventory {
	tb.Helper()
	s := dgxa100.New()
	for i, dev := range s.Devices {
		d := dev.(*dgxa100.Device)
		d.MemoryInfo.Used = uint64(i) << 30
		d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 400_000, nvml.SUCCESS }
		d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: uint32(10 * i), Memory: uint32(5 * i)}, nvml.SUCCESS
		}
		d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return uint32(100_000 + 1000*i), nvml.SUCCESS }
		d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return uint32(40 + i), nvml.SUCCESS }
		var energy atomic.Uint64 // mJ
		energy.Store(1_000_000 * uint64(i+1))
		d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return energy.Add(1000), nvml.SUCCESS }
	}
	inv, err := gpu.OpenLibrary(s, nil)
	if err != nil {
		tb.Fatalf("OpenLibrary on the mock: %v", err)
	}
	if inv.Backend() != gpu.BackendNVML {
		tb.Fatalf("mock opened as backend %q", inv.Backend())
	}
	tb.Cleanup(func() { _ = inv.Close() })
	return inv
}

// newFakeMachine is the sampler test's in-memory inventory with mockGPUs
// GPUs: no NVML layer, so a round costs the sampler and Prometheus only.
func newFakeMachine() *fakeInventory {
	f := &fakeInventory{samples: map[string]gpu.Sample{}}
	for i := range mockGPUs {
		u := fmt.Sprintf("GPU-fake-%d", i)
		f.uuids = append(f.uuids, u)
		f.samples[u] = gpu.Sample{UUID: u, UtilizationGPU: uint32(10 * i), UtilizationMemory: uint32(5 * i),
			MemoryUsedMiB: uint64(i) * 1024, PowerMilliwatts: uint32(100_000 + 1000*i),
			EnergyMillijoules: 1_000_000 * uint64(i+1), TemperatureC: uint32(40 + i)}
	}
	return f
}

// BenchmarkSampleOnce is one sampling round on 8 GPUs in steady state (series
// already exported): list the GPUs, read each, set five gauges and the energy
// counter per GPU. nvml-mock goes through worker/gpu's NVML inventory over
// go-nvml's mock; fake-inventory leaves NVML out, which isolates the sampler
// and the Prometheus updates. cpu%@1s is the round's cost as a share of one
// core when sampled every second (telemetry.sample_every's default).
func BenchmarkSampleOnce(b *testing.B) {
	for _, bc := range []struct {
		name string
		inv  func(testing.TB) gpu.Inventory
	}{
		{"gpus=8/nvml-mock", newMockMachine},
		{"gpus=8/fake-inventory", func(testing.TB) gpu.Inventory { return newFakeMachine() }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			inv := bc.inv(b)
			m := New()
			s := NewGPUSampler(inv, m, nil)
			ctx := context.Background()
			s.SampleOnce(ctx) // the first round creates the series; later ones update them
			if n := len(s.known); n != mockGPUs {
				b.Fatalf("first round saw %d GPUs, want %d", n, mockGPUs)
			}
			b.ReportAllocs()
			for b.Loop() {
				s.SampleOnce(ctx)
			}
			perRound := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(perRound*1e9/mockGPUs, "ns/gpu")
			b.ReportMetric(100*perRound/time.Second.Seconds(), "cpu%@1s")
		})
	}
}
