package telemetry

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/flopsnet/flops/worker/gpu"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

const namespace = "flops_worker"

// Label names.
const (
	labelClass   = "class"    // workload class, e.g. the BUILTIN workload or "process"
	labelReason  = "reason"   // short failure cause from a fixed set: "timeout", "exit", "oom" ...
	labelOutcome = "outcome"  // "completed" or "failed"
	labelUUID    = "uuid"     // GPU UUID
	labelSolver  = "solver"   // PoCP solver: "cpu" or the external GPU solver's name
	labelMsgType = "msg_type" // Msg type URL, e.g. "/flops.market.v1.MsgRevealResult"
)

// Task outcomes as the duration histogram labels them.
const (
	OutcomeCompleted = "completed"
	OutcomeFailed    = "failed"
)

const bytesPerMiB = 1024 * 1024

// Metrics holds the worker's metrics on a registry of its own. All methods are
// safe for concurrent use.
type Metrics struct {
	reg       *prometheus.Registry
	now       func() time.Time
	created   time.Time
	noRuntime bool

	up    prometheus.Gauge
	ready prometheus.Gauge
	info  *prometheus.GaugeVec

	tasksRunning   *prometheus.GaugeVec
	tasksWaiting   prometheus.Gauge
	tasksCompleted *prometheus.CounterVec
	tasksFailed    *prometheus.CounterVec
	taskDuration   *prometheus.HistogramVec
	taskGPUSeconds *prometheus.CounterVec
	taskEnergy     *prometheus.CounterVec
	dispatch       prometheus.Histogram

	gpuUtil         *prometheus.GaugeVec
	gpuMemUtil      *prometheus.GaugeVec
	gpuMemUsed      *prometheus.GaugeVec
	gpuPower        *prometheus.GaugeVec
	gpuTemp         *prometheus.GaugeVec
	gpuEnergy       *prometheus.CounterVec
	gpuSampleErrors *prometheus.CounterVec

	pocpSolve  *prometheus.HistogramVec
	pocpGFLOPS *prometheus.GaugeVec

	txBroadcast *prometheus.CounterVec
	txFailed    *prometheus.CounterVec
	txResent    prometheus.Counter
	chainHeight prometheus.Gauge
	// chainHeightAgeFn reads the age at scrape time.
	chainHeightAgeFn prometheus.GaugeFunc

	mu           sync.Mutex
	lastEnergyMJ map[string]uint64 // last cumulative NVML energy counter per GPU
	lastHeight   int64
	heightSeenAt time.Time // zero until the first ChainHeight
}

// Option configures New.
type Option func(*Metrics)

// WithClock replaces time.Now (chain height age), for tests.
func WithClock(now func() time.Time) Option {
	return func(m *Metrics) { m.now = now }
}

// WithoutRuntimeCollectors leaves out the go_* and process_* metrics (tests
// comparing a whole scrape).
func WithoutRuntimeCollectors() Option {
	return func(m *Metrics) { m.noRuntime = true }
}

// New registers the worker's metrics, plus Go runtime and process metrics, on
// a new registry. flops_worker_up is 1 from here on; ready starts at 0.
func New(opts ...Option) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), now: time.Now, lastEnergyMJ: map[string]uint64{}}
	for _, o := range opts {
		o(m)
	}
	m.created = m.now()
	if !m.noRuntime {
		m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}

	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help})
		m.reg.MustRegister(g)
		return g
	}
	gaugeVec := func(name, help string, labels ...string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, labels)
		m.reg.MustRegister(g)
		return g
	}
	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
		m.reg.MustRegister(c)
		return c
	}
	histVec := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: name, Help: help, Buckets: buckets}, labels)
		m.reg.MustRegister(h)
		return h
	}

	m.up = gauge("up", "1 while the worker process runs.")
	m.ready = gauge("ready", "1 when the worker is ready to take tasks (registered, bonded, chain in sync).")
	m.info = gaugeVec("info", "Constant 1, labelled with the worker's version and GPU backend.", "version", "gpu_backend")

	m.tasksRunning = gaugeVec("tasks_running", "Tasks executing now, by workload class.", labelClass)
	m.tasksWaiting = gauge("tasks_waiting_for_gpus", "Tasks the chain gave this node that wait for their GPUs here, unacked (held by another run; pool units give theirs up). One that stays up points at a GPU the machine lost, or at runs the chain no longer has here.")
	m.tasksCompleted = counterVec("tasks_completed_total", "Tasks that finished with a result, by workload class.", labelClass)
	m.tasksFailed = counterVec("tasks_failed_total", "Tasks that failed, by workload class and reason.", labelClass, labelReason)
	m.taskDuration = histVec("task_duration_seconds", "Wall time of a task's execution.",
		[]float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400}, labelClass, labelOutcome)
	m.taskGPUSeconds = counterVec("task_gpu_seconds_total", "GPU-seconds reported in completed tasks' usage.", labelClass)
	m.taskEnergy = counterVec("task_energy_joules_total", "Energy reported in completed tasks' usage.", labelClass)
	m.dispatch = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "dispatch_latency_seconds",
		Help:    "From the time of the block that assigned a task to the start of its execution here.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 30}})
	m.reg.MustRegister(m.dispatch)

	m.gpuUtil = gaugeVec("gpu_utilization_percent", "Percent of NVML's last sample period a kernel ran.", labelUUID)
	m.gpuMemUtil = gaugeVec("gpu_memory_utilization_percent", "Percent of NVML's last sample period memory was read or written.", labelUUID)
	m.gpuMemUsed = gaugeVec("gpu_memory_used_bytes", "GPU memory in use.", labelUUID)
	m.gpuPower = gaugeVec("gpu_power_watts", "GPU power draw.", labelUUID)
	m.gpuTemp = gaugeVec("gpu_temperature_celsius", "GPU core temperature.", labelUUID)
	m.gpuEnergy = counterVec("gpu_energy_joules_total", "GPU energy used since the worker started sampling it (NVML counter increases).", labelUUID)
	m.gpuSampleErrors = counterVec("gpu_sample_errors_total", "Failed NVML readings.", labelUUID)

	m.pocpSolve = histVec("pocp_solve_seconds", "Time to solve a proof-of-compute challenge.",
		prometheus.ExponentialBuckets(0.05, 2, 12), labelSolver)
	m.pocpGFLOPS = gaugeVec("pocp_gflops", "GFLOP/s measured by the last solved proof-of-compute challenge.", labelSolver)

	m.txBroadcast = counterVec("txs_broadcast_total", "Transactions broadcast, by Msg type.", labelMsgType)
	m.txFailed = counterVec("txs_failed_total", "Transactions that failed (rejected, non-zero code, not included), by Msg type.", labelMsgType)
	m.txResent = prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "txs_resent_total",
		Help: "Transactions the node had accepted and then lost (a restarted node empties its mempool), taken again when the worker sent them once more, or signed anew when another of its transactions had used their sequence meanwhile."})
	m.reg.MustRegister(m.txResent)
	m.chainHeight = gauge("chain_height", "Last chain height the worker saw.")
	m.chainHeightAgeFn = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: namespace, Name: "chain_height_age_seconds",
		Help: "Seconds since the chain height last moved up; since start while none was seen.",
	}, m.chainHeightAge)
	m.reg.MustRegister(m.chainHeightAgeFn)

	m.up.Set(1)
	return m
}

// Registry is the registry /metrics serves; other packages may add collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// SetInfo records the worker's version and GPU backend ("nvml" or "none").
func (m *Metrics) SetInfo(version, gpuBackend string) {
	m.info.Reset()
	m.info.WithLabelValues(version, gpuBackend).Set(1)
}

// SetUp sets flops_worker_up; New sets it to 1, shutdown may clear it.
func (m *Metrics) SetUp(up bool) { m.up.Set(boolFloat(up)) }

// SetReady sets flops_worker_ready. /readyz also sets it on every probe.
func (m *Metrics) SetReady(ready bool) { m.ready.Set(boolFloat(ready)) }

// TaskStarted counts a task of the workload class as running.
func (m *Metrics) TaskStarted(class string) {
	m.tasksRunning.WithLabelValues(class).Inc()
}

// TasksWaitingForGPUs sets how many tasks wait for their GPUs here.
func (m *Metrics) TasksWaitingForGPUs(n int) { m.tasksWaiting.Set(float64(n)) }

// ObserveDispatch records a task's dispatch latency: the assigning block's time to the
// start of its execution.
func (m *Metrics) ObserveDispatch(latency time.Duration) { m.dispatch.Observe(latency.Seconds()) }

// TaskCompleted ends a running task with a result: it took wall time took and
// reported usage u.
func (m *Metrics) TaskCompleted(class string, took time.Duration, u markettypes.Usage) {
	m.tasksRunning.WithLabelValues(class).Dec()
	m.tasksCompleted.WithLabelValues(class).Inc()
	m.taskDuration.WithLabelValues(class, OutcomeCompleted).Observe(took.Seconds())
	m.taskGPUSeconds.WithLabelValues(class).Add(float64(u.GpuSeconds))
	m.taskEnergy.WithLabelValues(class).Add(float64(u.EnergyJoules))
}

// TaskFailed ends a running task without a result; reason is a short cause
// from a fixed set ("timeout", "exit", "oom", "input", "image", "disk", "cancelled",
// "error": the agent's failReason).
func (m *Metrics) TaskFailed(class, reason string, took time.Duration) {
	m.tasksRunning.WithLabelValues(class).Dec()
	m.tasksFailed.WithLabelValues(class, reason).Inc()
	m.taskDuration.WithLabelValues(class, OutcomeFailed).Observe(took.Seconds())
}

// ObserveGPUSample records one reading. The energy counter grows by the NVML
// counter's increase since the previous reading of that GPU; the first
// reading, an unsupported counter (0) or a counter that went backwards (driver
// reload) only sets the baseline.
func (m *Metrics) ObserveGPUSample(s gpu.Sample) {
	m.gpuUtil.WithLabelValues(s.UUID).Set(float64(s.UtilizationGPU))
	m.gpuMemUtil.WithLabelValues(s.UUID).Set(float64(s.UtilizationMemory))
	m.gpuMemUsed.WithLabelValues(s.UUID).Set(float64(s.MemoryUsedMiB * bytesPerMiB))
	m.gpuPower.WithLabelValues(s.UUID).Set(float64(s.PowerMilliwatts) / 1000)
	m.gpuTemp.WithLabelValues(s.UUID).Set(float64(s.TemperatureC))
	energy := m.gpuEnergy.WithLabelValues(s.UUID) // exported at 0 from the first reading

	m.mu.Lock()
	defer m.mu.Unlock()
	last, seen := m.lastEnergyMJ[s.UUID]
	if s.EnergyMillijoules == 0 {
		delete(m.lastEnergyMJ, s.UUID)
		return
	}
	m.lastEnergyMJ[s.UUID] = s.EnergyMillijoules
	if seen && s.EnergyMillijoules >= last {
		energy.Add(float64(s.EnergyMillijoules-last) / 1000)
	}
}

// GPUSampleFailed counts a failed reading of a GPU.
func (m *Metrics) GPUSampleFailed(uuid string) {
	m.gpuSampleErrors.WithLabelValues(uuid).Inc()
}

// ForgetGPU drops a GPU's series (it left the inventory).
func (m *Metrics) ForgetGPU(uuid string) {
	for _, v := range []*prometheus.MetricVec{
		m.gpuUtil.MetricVec, m.gpuMemUtil.MetricVec, m.gpuMemUsed.MetricVec, m.gpuPower.MetricVec,
		m.gpuTemp.MetricVec, m.gpuEnergy.MetricVec, m.gpuSampleErrors.MetricVec,
	} {
		v.DeleteLabelValues(uuid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.lastEnergyMJ, uuid)
}

// ObservePoCPSolve records a solved proof-of-compute challenge: how long the
// solver took and the GFLOP/s it measured.
func (m *Metrics) ObservePoCPSolve(solver string, took time.Duration, gflops float64) {
	m.pocpSolve.WithLabelValues(solver).Observe(took.Seconds())
	m.pocpGFLOPS.WithLabelValues(solver).Set(gflops)
}

// TxBroadcast counts a transaction broadcast for each Msg type URL in it.
func (m *Metrics) TxBroadcast(msgTypes ...string) {
	for _, t := range msgTypes {
		m.txBroadcast.WithLabelValues(t).Inc()
	}
}

// TxFailed counts a failed transaction for each Msg type URL in it.
func (m *Metrics) TxFailed(msgTypes ...string) {
	for _, t := range msgTypes {
		m.txFailed.WithLabelValues(t).Inc()
	}
}

// TxResent counts a transaction the node had lost and took again (chain.Config.Resent).
func (m *Metrics) TxResent() { m.txResent.Inc() }

// ChainHeight records the latest height seen; the age restarts when the
// height moves up, so a stalled chain or a lost connection shows as a growing
// age.
func (m *Metrics) ChainHeight(height int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.heightSeenAt.IsZero() || height > m.lastHeight {
		m.heightSeenAt = m.now()
		m.lastHeight = height
	}
	m.chainHeight.Set(float64(height))
}

func (m *Metrics) chainHeightAge() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	since := m.heightSeenAt
	if since.IsZero() {
		since = m.created
	}
	return max(m.now().Sub(since).Seconds(), 0)
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
