package telemetry

import (
	"sync"
	"testing"
	"time"

	"github.com/flopsnet/flops/worker/gpu"
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

// Two workers in one process (tests, a multi-key node) never collide: each
// Metrics has its own registry.
func TestNewIsolatedRegistries(t *testing.T) {
	a, b := New(), New()
	a.TaskStarted("gemm")
	if got := toFloat64(t, b.tasksRunning.WithLabelValues("gemm")); got != 0 {
		t.Errorf("second registry sees %v running", got)
	}
	if toFloat64(t, a.up) != 1 || toFloat64(t, a.ready) != 0 {
		t.Error("up must start at 1 and ready at 0")
	}
}

// Task lifecycle: running goes up and down by class, outcomes are counted
// apart, durations land in the histogram by outcome, usage adds up per class.
func TestTaskMetrics(t *testing.T) {
	m := New(WithoutRuntimeCollectors())
	for range 3 {
		m.TaskStarted("gemm")
	}
	m.TaskStarted("process")
	m.TaskCompleted("gemm", 90*time.Second, markettypes.Usage{GpuSeconds: 180, EnergyJoules: 45_000})
	m.TaskCompleted("gemm", 20*time.Second, markettypes.Usage{GpuSeconds: 20, EnergyJoules: 5_000})
	m.TaskFailed("process", "timeout", 3*time.Hour)

	want := `
# HELP flops_worker_task_energy_joules_total Energy reported in completed tasks' usage.
# TYPE flops_worker_task_energy_joules_total counter
flops_worker_task_energy_joules_total{class="gemm"} 50000
# HELP flops_worker_task_gpu_seconds_total GPU-seconds reported in completed tasks' usage.
# TYPE flops_worker_task_gpu_seconds_total counter
flops_worker_task_gpu_seconds_total{class="gemm"} 200
# HELP flops_worker_tasks_completed_total Tasks that finished with a result, by workload class.
# TYPE flops_worker_tasks_completed_total counter
flops_worker_tasks_completed_total{class="gemm"} 2
# HELP flops_worker_tasks_failed_total Tasks that failed, by workload class and reason.
# TYPE flops_worker_tasks_failed_total counter
flops_worker_tasks_failed_total{class="process",reason="timeout"} 1
# HELP flops_worker_tasks_running Tasks executing now, by workload class.
# TYPE flops_worker_tasks_running gauge
flops_worker_tasks_running{class="gemm"} 1
flops_worker_tasks_running{class="process"} 0
`
	compareText(t, gatherText(t, m.Registry(),
		"flops_worker_tasks_running", "flops_worker_tasks_completed_total", "flops_worker_tasks_failed_total",
		"flops_worker_task_gpu_seconds_total", "flops_worker_task_energy_joules_total"), want)
	if n := countSeries(t, m.taskDuration); n != 2 {
		t.Errorf("%d duration series, want 2 (gemm completed, process failed)", n)
	}
	wantHist := `
# HELP flops_worker_task_duration_seconds Wall time of a task's execution.
# TYPE flops_worker_task_duration_seconds histogram
flops_worker_task_duration_seconds_bucket{class="process",outcome="failed",le="1"} 0
flops_worker_task_duration_seconds_bucket{class="process",outcome="failed",le="5"} 0
flops_worker_task_duration_seconds_bucket{class="process",outcome="failed",le="15"} 0
flops_worker_task_duration_seconds_bucket{class="process",outcome="failed",le="30"} 0
flops_worker_task_duration_seconds_bucket{class="process",outcome="failed",le="60"} 0
flops_worker_task_duration_seconds_bucket{class="process",outcome="failed",le="120"} 0
flops_worker_task_duration_seconds_bucket{class="process",outcome="failed",le="300"} 0
flops_worker_task_duration_seconds_bucket{class="process",outcome="failed",le="600"} 0
flops_worker_task_duration_seconds_bucket{class="process",outcome="failed",le="1800"} 0
flops_worker_task_duration_seconds_bucket{class="process",outcome="failed",le="3600"} 0
flops_worker_task_duration_seconds_bucket{class="process",outcome="failed",le="7200"} 0
flops_worker_task_duration_seconds_bucket{class="process",outcome="failed",le="14400"} 1
flops_worker_task_duration_seconds_bucket{class="process",outcome="failed",le="28800"} 1
flops_worker_task_duration_seconds_bucket{class="process",outcome="failed",le="86400"} 1
flops_worker_task_duration_seconds_bucket{class="process",outcome="failed",le="+Inf"} 1
flops_worker_task_duration_seconds_sum{class="process",outcome="failed"} 10800
flops_worker_task_duration_seconds_count{class="process",outcome="failed"} 1
`
	m.taskDuration.DeleteLabelValues("gemm", OutcomeCompleted)
	compareText(t, gatherText(t, m.Registry(), "flops_worker_task_duration_seconds"), wantHist)
}

// GPU readings in base units; the energy counter adds the NVML counter's
// increases only, never the first reading, an unsupported (0) counter or a
// reset.
func TestGPUSampleMetrics(t *testing.T) {
	m := New(WithoutRuntimeCollectors())
	s := gpu.Sample{UUID: "GPU-a", UtilizationGPU: 87, UtilizationMemory: 40, MemoryUsedMiB: 2048,
		PowerMilliwatts: 312_500, EnergyMillijoules: 10_000_000, TemperatureC: 66}
	m.ObserveGPUSample(s)
	checks := []struct {
		name string
		got  float64
		want float64
	}{
		{"utilization", toFloat64(t, m.gpuUtil.WithLabelValues("GPU-a")), 87},
		{"memory utilization", toFloat64(t, m.gpuMemUtil.WithLabelValues("GPU-a")), 40},
		{"memory bytes", toFloat64(t, m.gpuMemUsed.WithLabelValues("GPU-a")), 2048 * 1024 * 1024},
		{"watts", toFloat64(t, m.gpuPower.WithLabelValues("GPU-a")), 312.5},
		{"celsius", toFloat64(t, m.gpuTemp.WithLabelValues("GPU-a")), 66},
		{"energy after first reading", toFloat64(t, m.gpuEnergy.WithLabelValues("GPU-a")), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}

	energy := func() float64 { return toFloat64(t, m.gpuEnergy.WithLabelValues("GPU-a")) }
	for _, step := range []struct {
		name    string
		counter uint64 // mJ
		want    float64
	}{
		{"increase", 10_002_500, 2.5},
		{"increase again", 10_004_500, 4.5},
		{"driver reload resets the counter", 1_000, 4.5},
		{"counts from the new baseline", 3_000, 6.5},
		{"unsupported reading", 0, 6.5},
		{"first reading after unsupported", 9_000, 6.5},
		{"increase after that", 10_000, 7.5},
	} {
		s.EnergyMillijoules = step.counter
		m.ObserveGPUSample(s)
		if got := energy(); got != step.want {
			t.Errorf("%s: energy %v J, want %v", step.name, got, step.want)
		}
	}

	m.GPUSampleFailed("GPU-a")
	m.ObserveGPUSample(gpu.Sample{UUID: "GPU-b"})
	m.ForgetGPU("GPU-a")
	for _, c := range []struct {
		name string
		n    int
	}{
		{"utilization", countSeries(t, m.gpuUtil)},
		{"energy", countSeries(t, m.gpuEnergy)},
		{"errors", countSeries(t, m.gpuSampleErrors)},
	} {
		want := 1
		if c.name == "errors" {
			want = 0
		}
		if c.n != want {
			t.Errorf("%s: %d series after forgetting GPU-a, want %d", c.name, c.n, want)
		}
	}
}

// The chain height's age restarts only when the height moves up; before any
// height it counts from start.
func TestChainHeightAge(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	m := New(WithoutRuntimeCollectors(), WithClock(clock.now))
	age := func() float64 { return toFloat64(t, m.chainHeightAgeFn) }

	clock.advance(4 * time.Second)
	if got := age(); got != 4 {
		t.Errorf("age before any height = %v, want 4", got)
	}
	m.ChainHeight(100)
	if got := age(); got != 0 {
		t.Errorf("age at new height = %v", got)
	}
	clock.advance(7 * time.Second)
	m.ChainHeight(100)
	if got := age(); got != 7 {
		t.Errorf("age after same height = %v, want 7", got)
	}
	m.ChainHeight(101)
	if got, h := age(), toFloat64(t, m.chainHeight); got != 0 || h != 101 {
		t.Errorf("after 101: age %v height %v", got, h)
	}
}

func TestPoCPTxAndInfoMetrics(t *testing.T) {
	m := New(WithoutRuntimeCollectors())
	m.ObservePoCPSolve("cpu", 1500*time.Millisecond, 42.5)
	m.ObservePoCPSolve("cpu", 500*time.Millisecond, 40)
	reveal, hb := "/flops.market.v1.MsgRevealResult", "/flops.market.v1.MsgHeartbeat"
	m.TxBroadcast(reveal, hb)
	m.TxBroadcast(hb)
	m.TxFailed(reveal)
	m.TxResent()
	m.TasksWaitingForGPUs(3)
	m.TasksWaitingForGPUs(2)
	m.SetInfo("v0.1.0", gpu.BackendNone)
	m.SetInfo("v0.1.0", gpu.BackendNVML)
	m.SetReady(true)
	m.SetUp(false)

	want := `
# HELP flops_worker_info Constant 1, labelled with the worker's version and GPU backend.
# TYPE flops_worker_info gauge
flops_worker_info{gpu_backend="nvml",version="v0.1.0"} 1
# HELP flops_worker_pocp_gflops GFLOP/s measured by the last solved proof-of-compute challenge.
# TYPE flops_worker_pocp_gflops gauge
flops_worker_pocp_gflops{solver="cpu"} 40
# HELP flops_worker_ready 1 when the worker is ready to take tasks (registered, bonded, chain in sync).
# TYPE flops_worker_ready gauge
flops_worker_ready 1
# HELP flops_worker_tasks_waiting_for_gpus Tasks the chain gave this node that wait for their GPUs here, unacked (held by another run; pool units give theirs up). One that stays up points at a GPU the machine lost, or at runs the chain no longer has here.
# TYPE flops_worker_tasks_waiting_for_gpus gauge
flops_worker_tasks_waiting_for_gpus 2
# HELP flops_worker_txs_broadcast_total Transactions broadcast, by Msg type.
# TYPE flops_worker_txs_broadcast_total counter
flops_worker_txs_broadcast_total{msg_type="/flops.market.v1.MsgHeartbeat"} 2
flops_worker_txs_broadcast_total{msg_type="/flops.market.v1.MsgRevealResult"} 1
# HELP flops_worker_txs_failed_total Transactions that failed (rejected, non-zero code, not included), by Msg type.
# TYPE flops_worker_txs_failed_total counter
flops_worker_txs_failed_total{msg_type="/flops.market.v1.MsgRevealResult"} 1
# HELP flops_worker_txs_resent_total Transactions the node had accepted and then lost (a restarted node empties its mempool), taken again when the worker sent them once more, or signed anew when another of its transactions had used their sequence meanwhile.
# TYPE flops_worker_txs_resent_total counter
flops_worker_txs_resent_total 1
# HELP flops_worker_up 1 while the worker process runs.
# TYPE flops_worker_up gauge
flops_worker_up 0
`
	compareText(t, gatherText(t, m.Registry(),
		"flops_worker_pocp_gflops", "flops_worker_tasks_waiting_for_gpus", "flops_worker_txs_broadcast_total", "flops_worker_txs_failed_total", "flops_worker_txs_resent_total",
		"flops_worker_info", "flops_worker_ready", "flops_worker_up"), want)
	if got := countSeries(t, m.pocpSolve); got != 1 {
		t.Errorf("%d solve series", got)
	}
}
