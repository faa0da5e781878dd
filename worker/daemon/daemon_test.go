package daemon

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/testutil/testdirs"
	"github.com/flopsnet/flops/worker/config"
	"github.com/flopsnet/flops/worker/gpu"
)

// With outputs.tls_cert and tls_key the output server speaks HTTPS only.
func TestOutputServerOverTLS(t *testing.T) {
	certFile, keyFile, pool := testdirs.SelfSigned(t, t.TempDir())
	conf, err := config.Outputs{TLSCert: certFile, TLSKey: keyFile}.ServerTLS()
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "outputs") }), conf)
	}()
	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}, Timeout: 5 * time.Second}
	var body string
	require.Eventually(t, func() bool {
		resp, err := trusting.Get("https://" + addr + "/")
		if err != nil {
			return false
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return true
	}, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, "outputs", body)
	plain, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/")
	if err == nil {
		require.NotEqual(t, http.StatusOK, plain.StatusCode, "plain HTTP is not served")
		_ = plain.Body.Close()
	}
	cancel()
	require.NoError(t, <-done)
}

// listed is an inventory listing GPUs (NVML's view) without sampling them.
type listed struct{ devs []gpu.Device }

func (l listed) Devices(context.Context) ([]gpu.Device, error) { return l.devs, nil }
func (l listed) Sample(context.Context, string) (gpu.Sample, error) {
	return gpu.Sample{}, gpu.ErrUnknownDevice
}
func (l listed) Close() error    { return nil }
func (l listed) Backend() string { return gpu.BackendNVML }

// pocp.solver auto: the GPU solver (configured, next to the worker or in PATH), falling
// back to the CPU one, where NVML lists GPUs; the CPU solver, with the reason in the log,
// where it lists none or no GPU solver is found; go and external as configured.
func TestSolverAutoPicksTheGPUSolver(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ctx := context.Background()
	gpus := listed{devs: []gpu.Device{{UUID: "GPU-1"}, {UUID: "GPU-2"}}}
	dir := t.TempDir()
	prog := filepath.Join(dir, GPUSolverName)
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\nexit 1\n"), 0o755))
	t.Setenv("PATH", t.TempDir()) // no flops-gpu-solver in PATH, nor next to the test binary

	cfg := config.Default(t.TempDir())
	require.Equal(t, "auto", cfg.PoCP.Solver, "the default")

	name := func(inv gpu.Inventory, c config.Config) string { return Solver(ctx, c, inv, log).Name() }
	require.Equal(t, "go-cpu/2", name(gpu.NewCPUOnly("NVML library not found"), withWorkers(cfg, 2)))
	require.Contains(t, logs.String(), "PoCP and BUILTIN gemm on the CPU: no NVIDIA GPU")
	require.Contains(t, logs.String(), "NVML library not found")

	logs.Reset()
	require.Equal(t, "go-cpu/2", name(gpus, withWorkers(cfg, 2)))
	require.Contains(t, logs.String(), "no GPU solver found")
	require.Contains(t, logs.String(), "make gpu-solver")

	logs.Reset()
	c := withWorkers(cfg, 2)
	c.PoCP.External = prog
	require.Equal(t, "external:"+GPUSolverName+"|go-cpu/2", name(gpus, c), "configured")
	require.Contains(t, logs.String(), "PoCP and BUILTIN gemm on the GPUs")
	require.Equal(t, "go-cpu/2", name(gpu.NewCPUOnly("none"), c), "no GPU: the CPU, whatever is configured for auto")

	t.Setenv("PATH", dir)
	require.Equal(t, "external:"+GPUSolverName+"|go-cpu/2", name(gpus, withWorkers(cfg, 2)), "found in PATH")
	path, how := FindGPUSolver("")
	require.Equal(t, prog, path)
	require.Equal(t, "PATH", how)
	_, how = FindGPUSolver(filepath.Join(dir, "missing"))
	require.Contains(t, how, "pocp.external")

	c = withWorkers(cfg, 2)
	c.PoCP.Solver = "go"
	require.Equal(t, "go-cpu/2", name(gpus, c))
	c.PoCP.Solver, c.PoCP.External = "external", prog
	require.Equal(t, "external:"+GPUSolverName+"|go-cpu/2", name(gpu.NewCPUOnly("none"), c), "external is the operator's word")
}

func withWorkers(c config.Config, n int) config.Config {
	c.PoCP.Workers = n
	return c
}

// A stranger's idle keep-alive connections to the worker's public servers (outputs,
// telemetry) are closed after idleTimeout: with no timeout a connection that asked once
// and then nothing was held open for ever, and enough of them would use up the worker's
// file descriptors. A request answered, the connection is closed once idle.
func TestServerClosesIdleConnections(t *testing.T) {
	was := idleTimeout
	idleTimeout = 200 * time.Millisecond
	t.Cleanup(func() { idleTimeout = was })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serveOn(ctx, ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }), nil)
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})

	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	_, err = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: worker\r\n\r\n")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	b := make([]byte, 4096)
	n, err := conn.Read(b)
	require.NoError(t, err)
	require.Contains(t, string(b[:n]), "200 OK")
	began := time.Now()
	_, err = io.ReadAll(conn) // the server closes it when idle; the deadline fails the test
	require.NoError(t, err, "closed by the server, not by the read deadline")
	require.Less(t, time.Since(began), 5*time.Second)
}
