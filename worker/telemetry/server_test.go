package telemetry

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/flopsnet/flops/worker/gpu"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

func get(t *testing.T, url string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body), resp.Header
}

// scrape fetches /metrics and parses it as Prometheus does.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body, header := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	dec := expfmt.NewDecoder(strings.NewReader(body), expfmt.ResponseFormat(header))
	fams := map[string]*dto.MetricFamily{}
	for {
		f := &dto.MetricFamily{}
		if err := dec.Decode(f); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("decode /metrics: %v\n%s", err, body)
		}
		fams[f.GetName()] = f
	}
	return fams
}

// sampleValue is the value of the family's series whose labels include all of
// labels (name, value pairs).
func sampleValue(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	f, found := fams[name]
	if !found {
		t.Fatalf("scrape lacks %s", name)
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			if !hasLabel(m, labels[i], labels[i+1]) {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("%s has no series %v", name, labels)
	return 0
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// A scrape of /metrics shows every worker metric the agent has touched, with
// its value, plus the Go runtime, process and handler metrics.
func TestMetricsEndpoint(t *testing.T) {
	m := New()
	m.SetInfo("v0.1.0", gpu.BackendNVML)
	m.TaskStarted("gemm")
	m.TaskStarted("gemm")
	m.TaskCompleted("gemm", time.Minute, markettypes.Usage{GpuSeconds: 60, EnergyJoules: 18_000})
	m.TaskStarted("process")
	m.TaskFailed("process", "exit", time.Second)
	m.ObserveGPUSample(gpu.Sample{UUID: "GPU-a", UtilizationGPU: 99, UtilizationMemory: 70, MemoryUsedMiB: 1,
		PowerMilliwatts: 250_000, EnergyMillijoules: 5_000, TemperatureC: 71})
	m.ObserveGPUSample(gpu.Sample{UUID: "GPU-a", EnergyMillijoules: 7_000})
	m.ObservePoCPSolve("cpu", 2*time.Second, 123.5)
	m.TxBroadcast("/flops.gfl.v1.MsgCommitChallenge")
	m.TxFailed("/flops.gfl.v1.MsgCommitChallenge")
	m.ChainHeight(4242)
	srv := httptest.NewServer(Handler(m, nil))
	defer srv.Close()

	fams := scrape(t, srv.URL)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"flops_worker_up", nil, 1},
		{"flops_worker_ready", nil, 0},
		{"flops_worker_info", []string{"version", "v0.1.0", "gpu_backend", "nvml"}, 1},
		{"flops_worker_tasks_running", []string{"class", "gemm"}, 1},
		{"flops_worker_tasks_running", []string{"class", "process"}, 0},
		{"flops_worker_tasks_completed_total", []string{"class", "gemm"}, 1},
		{"flops_worker_tasks_failed_total", []string{"class", "process", "reason", "exit"}, 1},
		{"flops_worker_task_duration_seconds", []string{"class", "gemm", "outcome", "completed"}, 1},
		{"flops_worker_task_gpu_seconds_total", []string{"class", "gemm"}, 60},
		{"flops_worker_task_energy_joules_total", []string{"class", "gemm"}, 18_000},
		{"flops_worker_gpu_utilization_percent", []string{"uuid", "GPU-a"}, 0},
		{"flops_worker_gpu_memory_utilization_percent", []string{"uuid", "GPU-a"}, 0},
		{"flops_worker_gpu_memory_used_bytes", []string{"uuid", "GPU-a"}, 0},
		{"flops_worker_gpu_power_watts", []string{"uuid", "GPU-a"}, 0},
		{"flops_worker_gpu_temperature_celsius", []string{"uuid", "GPU-a"}, 0},
		{"flops_worker_gpu_energy_joules_total", []string{"uuid", "GPU-a"}, 2},
		{"flops_worker_pocp_solve_seconds", []string{"solver", "cpu"}, 1},
		{"flops_worker_pocp_gflops", []string{"solver", "cpu"}, 123.5},
		{"flops_worker_txs_broadcast_total", []string{"msg_type", "/flops.gfl.v1.MsgCommitChallenge"}, 1},
		{"flops_worker_txs_failed_total", []string{"msg_type", "/flops.gfl.v1.MsgCommitChallenge"}, 1},
		{"flops_worker_chain_height", nil, 4242},
	} {
		if got := sampleValue(t, fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if age := sampleValue(t, fams, "flops_worker_chain_height_age_seconds"); age < 0 || age > 60 {
		t.Errorf("chain height age %v s just after a height", age)
	}
	for _, name := range []string{"go_goroutines", "process_start_time_seconds", "promhttp_metric_handler_requests_total"} {
		if _, found := fams[name]; !found {
			t.Errorf("scrape lacks %s", name)
		}
	}
}

// /healthz answers while the process runs; /readyz follows the ready func,
// gives its reason with 503, and keeps flops_worker_ready in step.
func TestHealthAndReady(t *testing.T) {
	var mu sync.Mutex
	notReady := errors.New("chain not synced: 12 blocks behind")
	readyErr := notReady
	m := New(WithoutRuntimeCollectors())
	srv := httptest.NewServer(Handler(m, func() error {
		mu.Lock()
		defer mu.Unlock()
		return readyErr
	}))
	defer srv.Close()

	if code, body, _ := get(t, srv.URL+"/healthz"); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	code, body, _ := get(t, srv.URL+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "12 blocks behind") {
		t.Errorf("/readyz not ready = %d %q", code, body)
	}
	if toFloat64(t, m.ready) != 0 {
		t.Error("ready gauge 1 while not ready")
	}

	mu.Lock()
	readyErr = nil
	mu.Unlock()
	if code, body, _ := get(t, srv.URL+"/readyz"); code != http.StatusOK || strings.TrimSpace(body) != "ready" {
		t.Errorf("/readyz ready = %d %q", code, body)
	}
	if toFloat64(t, m.ready) != 1 {
		t.Error("ready gauge 0 while ready")
	}

	resp, err := http.Post(srv.URL+"/healthz", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /healthz = %d, want 405", resp.StatusCode)
	}
	if code, _, _ := get(t, srv.URL+"/nope"); code != http.StatusNotFound {
		t.Errorf("/nope = %d", code)
	}
}

// A nil ready func is always ready.
func TestReadyNil(t *testing.T) {
	srv := httptest.NewServer(Handler(New(WithoutRuntimeCollectors()), nil))
	defer srv.Close()
	if code, _, _ := get(t, srv.URL+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz = %d", code)
	}
}

// Serve answers on its listener until the context ends, then shuts down and
// returns nil; a listen failure is an error.
func TestServe(t *testing.T) {
	srv := Server("127.0.0.1:0", New(WithoutRuntimeCollectors()), nil)
	if srv.ReadHeaderTimeout == 0 || srv.WriteTimeout == 0 || srv.Addr != "127.0.0.1:0" {
		t.Errorf("server without timeouts or address: %+v", srv)
	}
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, srv, ln) }()

	if code, _, _ := get(t, "http://"+ln.Addr().String()+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d", code)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
	case <-time.After(ShutdownTimeout + time.Second):
		t.Fatal("Serve did not return after cancel")
	}

	bad := Server("127.0.0.1:-1", New(WithoutRuntimeCollectors()), nil)
	if err := Serve(t.Context(), bad, nil); err == nil {
		t.Error("Serve on a bad address = nil")
	}
}
