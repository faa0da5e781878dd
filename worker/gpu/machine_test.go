//go:build cgo

package gpu

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

// TestOpenMachine opens this machine's real NVML. Without the NVIDIA driver it
// must fall back to CPU only with a reason; with GPUs (the lead's GPU machine)
// it lists them, samples each GPU and MIG device, and meters a second of idle
// time. Run with -v to see the inventory table.
func TestOpenMachine(t *testing.T) {
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	inv, err := Open(log)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer func() {
		if err := inv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	ctx := context.Background()
	devs, err := inv.Devices(ctx)
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	t.Logf("backend %s %s\n%s", inv.Backend(), FallbackReason(inv), Describe(devs))
	if inv.Backend() == BackendNone {
		if FallbackReason(inv) == "" || len(devs) != 0 {
			t.Fatalf("CPU-only inventory without a reason or with devices")
		}
		return
	}
	if len(devs) == 0 {
		t.Fatal("NVML backend with no devices")
	}
	for _, d := range devs {
		if d.UUID == "" || d.Model == "" || d.MemoryMiB == 0 || d.ComputeCapability == "" {
			t.Errorf("incomplete device %+v", d)
		}
		t.Logf("GpuInfo %+v", ToGpuInfo(d))
		s, err := inv.Sample(ctx, d.UUID)
		if err != nil {
			t.Errorf("Sample %s: %v", d.UUID, err)
		}
		t.Logf("sample %+v", s)
		for _, m := range d.MIG {
			s, err := inv.Sample(ctx, m.UUID)
			if err != nil {
				t.Errorf("Sample MIG %s: %v", m.UUID, err)
			}
			t.Logf("MIG %+v sample %+v", m, s)
		}
	}
	m := StartMeter(inv, SchedulableUUIDs(devs), WithMeterLogger(log))
	time.Sleep(1100 * time.Millisecond)
	u := m.Stop()
	t.Logf("1.1 s idle usage %+v", u)
	if u.GpuSeconds < uint64(len(u.GpuUuids)) {
		t.Errorf("GpuSeconds %d < %d UUIDs × 1 s", u.GpuSeconds, len(u.GpuUuids))
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
