//go:build cgo && unix

package telemetry

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flopsnet/flops/worker/gpu"
)

// TestSamplerCPUOverhead measures issue 7's "worker CPU overhead at idle and
// while sampling NVML each second": the process's CPU time (user+sys from
// getrusage) over a window with nothing running (the idle baseline) and over
// a window of RunSampler at 1 s on the 8 mock GPUs, as CPU% = CPU seconds /
// wall seconds. It only reports; timings are never asserted. Run it with
//
//	FLOPS_OVERHEAD=1 go test -run TestSamplerCPUOverhead -v ./worker/telemetry/
//
// FLOPS_OVERHEAD_SECONDS sets each window (default 10); a third window with
// a bare 1 s ticker tells the cost of waking up from the cost of the round.
// The mock answers NVML from memory, so the sampling figure leaves out the
// driver's own time.
//
// The whole daemon's idle figure is not measured here: the agent's idle loop
// polls the chain's height every chain.poll_interval and queries the chain on
// every new block, so without a chain it would measure a ticker. It needs a
// chain (the end-to-end setup in tests/).
func TestSamplerCPUOverhead(t *testing.T) {
	if testing.Short() || os.Getenv("FLOPS_OVERHEAD") != "1" {
		t.Skip("CPU overhead measurement: set FLOPS_OVERHEAD=1 (and no -short)")
	}
	window := 10 * time.Second
	if v := os.Getenv("FLOPS_OVERHEAD_SECONDS"); v != "" {
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil || secs <= 0 {
			t.Fatalf("FLOPS_OVERHEAD_SECONDS=%q: want a positive number of seconds", v)
		}
		window = time.Duration(secs * float64(time.Second))
	}
	inv := &countingInventory{Inventory: newMockMachine(t)}
	m := New() // as the daemon builds it, with the Go runtime and process collectors
	// One round before measuring creates the GPU series, as the daemon's first
	// round does once per process; the windows then see the steady state.
	NewGPUSampler(inv, m, nil).SampleOnce(t.Context())
	inv.lists.Store(0)
	// Let the start-up work (test binary, the first round's garbage, the
	// scavenger after a GC) finish before the idle window.
	runtime.GC()
	time.Sleep(2 * time.Second)

	idle := measureCPU(t, window, func(ctx context.Context) { <-ctx.Done() })
	// A bare 1 s ticker separates waking the process each second from the
	// round's own work.
	ticking := measureCPU(t, window, func(ctx context.Context) {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	sampling := measureCPU(t, window, func(ctx context.Context) {
		if err := RunSampler(ctx, inv, m, time.Second, nil); err != nil {
			t.Errorf("RunSampler: %v", err)
		}
	})
	rounds := inv.lists.Load()

	t.Logf("window %v each; %d CPUs, GOMAXPROCS %d (on a shared, loaded host the figures are upper bounds)",
		window, runtime.NumCPU(), runtime.GOMAXPROCS(0))
	t.Logf("idle:     %s", idle)
	t.Logf("1 s tick: %s", ticking)
	t.Logf("sampling: %s, %d rounds of %d GPUs at 1 s", sampling, rounds, mockGPUs)
	diff := sampling.cpu() - idle.cpu()
	t.Logf("overhead of sampling: %+.4f CPU%% (%+.3f ms CPU over the window)", sampling.percent()-idle.percent(), diff.Seconds()*1e3)
	if rounds > 0 {
		t.Logf("CPU per round above idle: %.1f µs, of which above a bare 1 s tick: %.1f µs",
			diff.Seconds()*1e6/float64(rounds), (sampling.cpu()-ticking.cpu()).Seconds()*1e6/float64(rounds))
	}
}

// countingInventory counts listings: one per sampling round.
type countingInventory struct {
	gpu.Inventory
	lists atomic.Int64
}

func (c *countingInventory) Devices(ctx context.Context) ([]gpu.Device, error) {
	c.lists.Add(1)
	return c.Inventory.Devices(ctx)
}

// cpuWindow is the process's CPU time over a wall-clock window.
type cpuWindow struct {
	user, sys, wall time.Duration
}

func (w cpuWindow) cpu() time.Duration { return w.user + w.sys }

// percent is CPU seconds per wall second × 100: 100 is one core busy.
func (w cpuWindow) percent() float64 { return 100 * w.cpu().Seconds() / w.wall.Seconds() }

func (w cpuWindow) String() string {
	return "CPU " + strconv.FormatFloat(w.percent(), 'f', 4, 64) + "% (user " + w.user.String() +
		" + sys " + w.sys.String() + " over " + w.wall.Round(time.Millisecond).String() + ")"
}

// measureCPU runs fn until a context of the given length ends and returns
// the whole process's CPU time (all threads, RUSAGE_SELF) over that time.
func measureCPU(t *testing.T, window time.Duration, fn func(ctx context.Context)) cpuWindow {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), window)
	defer cancel()
	before, start := rusage(t), time.Now()
	fn(ctx)
	after, wall := rusage(t), time.Since(start)
	return cpuWindow{
		user: tvDuration(after.Utime) - tvDuration(before.Utime),
		sys:  tvDuration(after.Stime) - tvDuration(before.Stime),
		wall: wall,
	}
}

func rusage(t *testing.T) syscall.Rusage {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatalf("getrusage: %v", err)
	}
	return ru
}

func tvDuration(tv syscall.Timeval) time.Duration {
	return time.Duration(tv.Nano())
}
