package telemetry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/flopsnet/flops/worker/gpu"
)

// fakeInventory serves samples from a map the test edits; listing order is
// the order of uuids.
type fakeInventory struct {
	mu      sync.Mutex
	uuids   []string
	samples map[string]gpu.Sample
	fail    map[string]error
	listErr error
	lists   int
}

func (f *fakeInventory) Devices(ctx context.Context) ([]gpu.Device, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	if f.listErr != nil {
		return nil, f.listErr
	}
	var devs []gpu.Device
	for i, u := range f.uuids {
		devs = append(devs, gpu.Device{Index: i, UUID: u})
	}
	return devs, ctx.Err()
}

func (f *fakeInventory) Sample(_ context.Context, uuid string) (gpu.Sample, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail[uuid]; err != nil {
		return gpu.Sample{}, err
	}
	s, found := f.samples[uuid]
	if !found {
		return gpu.Sample{}, fmt.Errorf("%w %q", gpu.ErrUnknownDevice, uuid)
	}
	return s, nil
}

func (f *fakeInventory) Close() error    { return nil }
func (f *fakeInventory) Backend() string { return gpu.BackendNVML }

func (f *fakeInventory) listCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists
}

func (f *fakeInventory) edit(fn func(f *fakeInventory)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// The sampler reads every GPU at once and then each period, in fake time:
// gauges follow the readings, energy adds the counter's increase, a failing
// GPU is counted, a vanished GPU loses its series, a failed listing keeps
// them, and cancelling stops it cleanly.
func TestRunSampler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inv := &fakeInventory{
			uuids: []string{"GPU-a", "GPU-b"},
			samples: map[string]gpu.Sample{
				"GPU-a": {UUID: "GPU-a", UtilizationGPU: 10, EnergyMillijoules: 1_000_000},
				"GPU-b": {UUID: "GPU-b", UtilizationGPU: 50, EnergyMillijoules: 2_000_000},
			},
		}
		m := New(WithoutRuntimeCollectors())
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- RunSampler(ctx, inv, m, 10*time.Second, nil) }()
		util := func(u string) float64 { return toFloat64(t, m.gpuUtil.WithLabelValues(u)) }
		energy := func(u string) float64 { return toFloat64(t, m.gpuEnergy.WithLabelValues(u)) }

		synctest.Wait() // first round, at once
		if inv.listCount() != 1 || util("GPU-a") != 10 || util("GPU-b") != 50 || energy("GPU-a") != 0 {
			t.Fatalf("round 1: lists %d util %v/%v energy %v", inv.listCount(), util("GPU-a"), util("GPU-b"), energy("GPU-a"))
		}

		inv.edit(func(f *fakeInventory) {
			f.samples["GPU-a"] = gpu.Sample{UUID: "GPU-a", UtilizationGPU: 95, EnergyMillijoules: 1_250_000}
			f.fail = map[string]error{"GPU-b": errors.New("GPU is lost")}
		})
		time.Sleep(9 * time.Second)
		synctest.Wait()
		if inv.listCount() != 1 {
			t.Fatalf("sampled before the period: %d lists", inv.listCount())
		}
		time.Sleep(time.Second)
		synctest.Wait() // round 2
		if util("GPU-a") != 95 || energy("GPU-a") != 250 {
			t.Errorf("round 2: GPU-a util %v energy %v, want 95 and 250 J", util("GPU-a"), energy("GPU-a"))
		}
		if got := toFloat64(t, m.gpuSampleErrors.WithLabelValues("GPU-b")); got != 1 || util("GPU-b") != 50 {
			t.Errorf("round 2: GPU-b errors %v util %v, want 1 and the old 50", got, util("GPU-b"))
		}

		inv.edit(func(f *fakeInventory) { f.listErr = errors.New("nvml: unknown error") })
		time.Sleep(10 * time.Second)
		synctest.Wait() // round 3: listing fails, series stay
		if n := countSeries(t, m.gpuUtil); n != 2 {
			t.Errorf("round 3: %d utilisation series, want 2 kept", n)
		}

		inv.edit(func(f *fakeInventory) { f.listErr = nil; f.uuids = []string{"GPU-a"} })
		time.Sleep(10 * time.Second)
		synctest.Wait() // round 4: GPU-b left
		if n, e := countSeries(t, m.gpuUtil), countSeries(t, m.gpuSampleErrors); n != 1 || e != 0 {
			t.Errorf("round 4: %d utilisation and %d error series, want 1 and 0", n, e)
		}

		cancel()
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("RunSampler = %v, want nil after cancel", err)
			}
		default:
			t.Fatal("RunSampler still running after cancel")
		}
		if inv.listCount() != 4 {
			t.Errorf("%d rounds, want 4", inv.listCount())
		}
	})
}

// Without a GPU backend there is nothing to sample: RunSampler returns nil at
// once instead of holding an errgroup slot.
func TestRunSamplerNoGPU(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if err := RunSampler(ctx, gpu.NewCPUOnly("test"), New(), time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("RunSampler waited for the context")
	}
}
