package gpu

import (
	"context"
	"log/slog"
	"sync"
	"time"

	markettypes "github.com/flopsnet/flops/x/market/types"
)

// Meter measures what one task used on the GPUs (or MIG slices) it was pinned
// to, for MsgRevealResult's Usage:
//
//	gpu_seconds   = floor(wall time × number of distinct UUIDs / 1 s)
//	energy_joules = floor(Σ over UUIDs (counter_end − counter_start) / 1000 mJ)
//
// Both truncate: the fraction of a second or of a joule is not claimed. A UUID
// whose energy counter is unsupported (MIG slices, pre-Volta GPUs), failed to
// read, or went backwards (driver reload) adds no energy.
type Meter struct {
	inv   Inventory
	uuids []string
	now   func() time.Time
	log   *slog.Logger
	ctx   context.Context

	start       time.Time
	startEnergy map[string]uint64 // mJ; absent: no usable counter

	mu      sync.Mutex
	stopped bool
	final   markettypes.Usage
}

// MeterOption configures StartMeter.
type MeterOption func(*Meter)

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) MeterOption {
	return func(m *Meter) { m.now = now }
}

// WithMeterLogger logs counters that could not be read.
func WithMeterLogger(log *slog.Logger) MeterOption {
	return func(m *Meter) { m.log = log }
}

// WithMeterContext bounds the meter's NVML reads (start and stop) by ctx; by
// default they are not cancellable, as each read takes microseconds.
func WithMeterContext(ctx context.Context) MeterOption {
	return func(m *Meter) { m.ctx = ctx }
}

// StartMeter starts measuring a task on uuids (GPU or MIG UUIDs; duplicates
// count once). A nil inventory or no UUIDs measures a CPU-only task: zero usage.
func StartMeter(inv Inventory, uuids []string, opts ...MeterOption) *Meter {
	m := &Meter{
		inv:         inv,
		uuids:       dedup(uuids),
		now:         time.Now,
		log:         slog.New(slog.DiscardHandler),
		ctx:         context.Background(),
		startEnergy: map[string]uint64{},
	}
	for _, o := range opts {
		o(m)
	}
	m.start = m.now()
	for _, u := range m.uuids {
		if e, okE := m.energy(u); okE {
			m.startEnergy[u] = e
		}
	}
	return m
}

// Stop ends the measurement and returns the usage. Later calls return the
// same usage.
func (m *Meter) Stop() markettypes.Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.stopped {
		m.final = m.measure()
		m.stopped = true
	}
	return cloneUsage(m.final)
}

// Snapshot is the usage so far without stopping (for checkpoints); after Stop
// it is the final usage.
func (m *Meter) Snapshot() markettypes.Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return cloneUsage(m.final)
	}
	return m.measure()
}

func (m *Meter) measure() markettypes.Usage {
	elapsed := max(m.now().Sub(m.start), 0)
	u := markettypes.Usage{GpuUuids: append([]string(nil), m.uuids...)}
	// elapsed × n in nanoseconds overflows int64 only past 292 years of GPU time.
	u.GpuSeconds = uint64(elapsed) * uint64(len(m.uuids)) / uint64(time.Second)
	var mj uint64
	for _, id := range m.uuids {
		begin, okB := m.startEnergy[id]
		if !okB {
			continue
		}
		end, okE := m.energy(id)
		if !okE {
			continue
		}
		if end < begin {
			m.log.Warn("GPU energy counter went backwards, not counting it", "gpu", id,
				"start_mj", begin, "end_mj", end)
			continue
		}
		mj += end - begin
	}
	u.EnergyJoules = mj / 1000
	return u
}

// energy reads a UUID's cumulative counter; false when it cannot be used.
func (m *Meter) energy(uuid string) (uint64, bool) {
	if m.inv == nil {
		return 0, false
	}
	s, err := m.inv.Sample(m.ctx, uuid)
	if err != nil {
		m.log.Warn("GPU energy counter unreadable", "gpu", uuid, "err", err)
		return 0, false
	}
	return s.EnergyMillijoules, s.EnergyMillijoules != 0
}

func dedup(uuids []string) []string {
	seen := make(map[string]bool, len(uuids))
	out := make([]string, 0, len(uuids))
	for _, u := range uuids {
		if u == "" || seen[u] {
			continue
		}
		seen[u] = true
		out = append(out, u)
	}
	return out
}

func cloneUsage(u markettypes.Usage) markettypes.Usage {
	u.GpuUuids = append([]string(nil), u.GpuUuids...)
	return u
}
