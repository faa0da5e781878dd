package telemetry

import (
	"context"
	"log/slog"
	"time"

	"github.com/flopsnet/flops/worker/gpu"
)

// DefaultSampleInterval is RunSampler's period when given none.
const DefaultSampleInterval = 15 * time.Second

// RunSampler copies every GPU's readings into m, at once and then every
// `every`, until ctx is done (it then returns nil). It lists the inventory
// each round, so GPUs that leave it lose their series. MIG slices are not
// sampled: NVML gives them no utilisation, power or energy of their own.
// With no GPU backend it returns at once.
func RunSampler(ctx context.Context, inv gpu.Inventory, m *Metrics, every time.Duration, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "telemetry")
	if inv == nil || inv.Backend() == gpu.BackendNone {
		log.Info("no GPU backend, GPU sampler not started", "reason", gpu.FallbackReason(inv))
		return nil
	}
	if every <= 0 {
		every = DefaultSampleInterval
	}
	s := NewGPUSampler(inv, m, log)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		s.SampleOnce(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// GPUSampler holds what one sampling loop remembers between rounds: the GPUs
// it exported and those whose last reading failed (logged once, not every
// round).
type GPUSampler struct {
	inv     gpu.Inventory
	m       *Metrics
	log     *slog.Logger
	known   map[string]bool
	failing map[string]bool
}

// NewGPUSampler is a sampler for callers that drive the rounds themselves.
func NewGPUSampler(inv gpu.Inventory, m *Metrics, log *slog.Logger) *GPUSampler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &GPUSampler{inv: inv, m: m, log: log, known: map[string]bool{}, failing: map[string]bool{}}
}

// SampleOnce is one round: list the GPUs, read each, forget the vanished.
// A failed listing keeps the previous series and is retried next round.
func (s *GPUSampler) SampleOnce(ctx context.Context) {
	devs, err := s.inv.Devices(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("listing GPUs failed", "err", err)
		}
		return
	}
	present := make(map[string]bool, len(devs))
	for _, d := range devs {
		if ctx.Err() != nil {
			return
		}
		present[d.UUID] = true
		sample, err := s.inv.Sample(ctx, d.UUID)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.m.GPUSampleFailed(d.UUID)
			if !s.failing[d.UUID] {
				s.log.Warn("reading GPU failed", "gpu", d.UUID, "err", err)
				s.failing[d.UUID] = true
			}
			continue
		}
		if s.failing[d.UUID] {
			s.log.Info("reading GPU works again", "gpu", d.UUID)
			delete(s.failing, d.UUID)
		}
		s.m.ObserveGPUSample(sample)
	}
	for uuid := range s.known {
		if !present[uuid] {
			s.log.Warn("GPU left the inventory", "gpu", uuid)
			s.m.ForgetGPU(uuid)
			delete(s.failing, uuid)
		}
	}
	s.known = present
}
