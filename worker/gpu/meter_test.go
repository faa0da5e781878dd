package gpu

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	markettypes "github.com/flopsnet/flops/x/market/types"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fakeInventory serves energy counters from a map; a UUID absent from it is
// unknown, one mapped to an error fails to read.
type fakeInventory struct {
	mu     sync.Mutex
	energy map[string]uint64
	fail   map[string]error
}

func (f *fakeInventory) set(uuid string, mj uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.energy[uuid] = mj
}

func (f *fakeInventory) Devices(context.Context) ([]Device, error) { return nil, nil }
func (f *fakeInventory) Close() error                              { return nil }
func (f *fakeInventory) Backend() string                           { return "fake" }
func (f *fakeInventory) Sample(_ context.Context, uuid string) (Sample, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail[uuid]; err != nil {
		return Sample{}, err
	}
	e, found := f.energy[uuid]
	if !found {
		return Sample{}, fmt.Errorf("%w %q", ErrUnknownDevice, uuid)
	}
	return Sample{UUID: uuid, EnergyMillijoules: e}, nil
}

func equalUsage(a, b markettypes.Usage) bool {
	return a.GpuSeconds == b.GpuSeconds && a.EnergyJoules == b.EnergyJoules && slices.Equal(a.GpuUuids, b.GpuUuids)
}

// The meter's arithmetic, one rule per case.
func TestMeterMaths(t *testing.T) {
	cases := []struct {
		name    string
		uuids   []string
		start   map[string]uint64 // energy counters at StartMeter (mJ)
		end     map[string]uint64 // energy counters at Stop (mJ)
		fail    map[string]error  // read failures at Stop
		elapsed time.Duration
		want    markettypes.Usage
	}{
		{
			// wall time × GPUs; energy is the counters' increase, mJ → J.
			name:    "two GPUs",
			uuids:   []string{"GPU-a", "GPU-b"},
			start:   map[string]uint64{"GPU-a": 5_000_000, "GPU-b": 7_000_000},
			end:     map[string]uint64{"GPU-a": 6_500_000, "GPU-b": 7_250_000},
			elapsed: 10 * time.Minute,
			want:    markettypes.Usage{GpuSeconds: 1200, EnergyJoules: 1750, GpuUuids: []string{"GPU-a", "GPU-b"}},
		},
		{
			// fractions of a GPU-second and of a joule are truncated, after
			// summing: 2 × 1.6 s = 3.2 s, 999 + 999 mJ = 1.998 J.
			name:    "truncation",
			uuids:   []string{"GPU-a", "GPU-b"},
			start:   map[string]uint64{"GPU-a": 1, "GPU-b": 1},
			end:     map[string]uint64{"GPU-a": 1000, "GPU-b": 1000},
			elapsed: 1600 * time.Millisecond,
			want:    markettypes.Usage{GpuSeconds: 3, EnergyJoules: 1, GpuUuids: []string{"GPU-a", "GPU-b"}},
		},
		{
			// a UUID listed twice is one GPU.
			name:    "duplicates",
			uuids:   []string{"GPU-a", "GPU-a", ""},
			start:   map[string]uint64{"GPU-a": 1_000},
			end:     map[string]uint64{"GPU-a": 3_000},
			elapsed: time.Minute,
			want:    markettypes.Usage{GpuSeconds: 60, EnergyJoules: 2, GpuUuids: []string{"GPU-a"}},
		},
		{
			// a counter reading 0 is unsupported: time counts, energy does not.
			name:    "energy unsupported",
			uuids:   []string{"MIG-a", "GPU-b"},
			start:   map[string]uint64{"MIG-a": 0, "GPU-b": 2_000},
			end:     map[string]uint64{"MIG-a": 0, "GPU-b": 5_000},
			elapsed: time.Minute,
			want:    markettypes.Usage{GpuSeconds: 120, EnergyJoules: 3, GpuUuids: []string{"MIG-a", "GPU-b"}},
		},
		{
			// a counter that went backwards (driver reloaded) adds nothing.
			name:    "counter reset",
			uuids:   []string{"GPU-a", "GPU-b"},
			start:   map[string]uint64{"GPU-a": 9_000_000, "GPU-b": 1_000},
			end:     map[string]uint64{"GPU-a": 4_000, "GPU-b": 11_000},
			elapsed: time.Second,
			want:    markettypes.Usage{GpuSeconds: 2, EnergyJoules: 10, GpuUuids: []string{"GPU-a", "GPU-b"}},
		},
		{
			// a GPU unreadable at the end adds no energy but still its time.
			name:    "read failure",
			uuids:   []string{"GPU-a", "GPU-b"},
			start:   map[string]uint64{"GPU-a": 1_000, "GPU-b": 1_000},
			end:     map[string]uint64{"GPU-a": 2_000, "GPU-b": 9_000},
			fail:    map[string]error{"GPU-b": fmt.Errorf("gpu lost")},
			elapsed: time.Second,
			want:    markettypes.Usage{GpuSeconds: 2, EnergyJoules: 1, GpuUuids: []string{"GPU-a", "GPU-b"}},
		},
		{
			// a GPU unknown at the start adds no energy even if it appears.
			name:    "unknown at start",
			uuids:   []string{"GPU-x"},
			end:     map[string]uint64{"GPU-x": 5_000},
			elapsed: 3 * time.Second,
			want:    markettypes.Usage{GpuSeconds: 3, GpuUuids: []string{"GPU-x"}},
		},
		{
			// a CPU-only task uses nothing.
			name:    "no GPUs",
			elapsed: time.Hour,
			want:    markettypes.Usage{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inv := &fakeInventory{energy: map[string]uint64{}}
			for u, e := range tc.start {
				inv.set(u, e)
			}
			clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
			m := StartMeter(inv, tc.uuids, WithClock(clock.now))
			clock.advance(tc.elapsed)
			for u, e := range tc.end {
				inv.set(u, e)
			}
			inv.fail = tc.fail
			if got := m.Stop(); !equalUsage(got, tc.want) {
				t.Errorf("Usage = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// Snapshot reads the usage so far; Stop freezes it, later clock moves or
// counter increases change nothing, and callers cannot alias the UUID list.
func TestMeterSnapshotAndStop(t *testing.T) {
	inv := &fakeInventory{energy: map[string]uint64{"GPU-a": 1_000}}
	clock := &fakeClock{t: time.Unix(0, 0)}
	m := StartMeter(inv, []string{"GPU-a"}, WithClock(clock.now))

	clock.advance(10 * time.Second)
	inv.set("GPU-a", 4_000)
	if got, want := m.Snapshot(), (markettypes.Usage{GpuSeconds: 10, EnergyJoules: 3, GpuUuids: []string{"GPU-a"}}); !equalUsage(got, want) {
		t.Errorf("Snapshot = %+v, want %+v", got, want)
	}
	clock.advance(10 * time.Second)
	inv.set("GPU-a", 9_000)
	final := m.Stop()
	want := markettypes.Usage{GpuSeconds: 20, EnergyJoules: 8, GpuUuids: []string{"GPU-a"}}
	if !equalUsage(final, want) {
		t.Errorf("Stop = %+v, want %+v", final, want)
	}
	final.GpuUuids[0] = "changed"
	clock.advance(time.Hour)
	inv.set("GPU-a", 99_000_000)
	if got := m.Stop(); !equalUsage(got, want) {
		t.Errorf("second Stop = %+v, want %+v", got, want)
	}
	if got := m.Snapshot(); !equalUsage(got, want) {
		t.Errorf("Snapshot after Stop = %+v, want %+v", got, want)
	}
}

// A nil inventory (no GPU backend) still counts time on the given UUIDs.
func TestMeterNilInventory(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	m := StartMeter(nil, []string{"GPU-a"}, WithClock(clock.now))
	clock.advance(5 * time.Second)
	if got := m.Stop(); got.GpuSeconds != 5 || got.EnergyJoules != 0 {
		t.Errorf("Usage = %+v", got)
	}
}
