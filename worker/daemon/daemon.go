// Package daemon wires flops-worker's parts together from a configuration: the chain
// connection and the key's signer, the GPUs, the executor and the output store, the PoCP
// solver, the bidder, the agent, the output server and the telemetry server. `flops-worker
// run` and the end-to-end tests start a worker through it.
package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/app/encoding"
	"github.com/flopsnet/flops/worker/agent"
	"github.com/flopsnet/flops/worker/bidder"
	"github.com/flopsnet/flops/worker/chain"
	"github.com/flopsnet/flops/worker/config"
	"github.com/flopsnet/flops/worker/executor"
	"github.com/flopsnet/flops/worker/gpu"
	"github.com/flopsnet/flops/worker/outputs"
	wpocp "github.com/flopsnet/flops/worker/pocp"
	"github.com/flopsnet/flops/worker/telemetry"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// Version is stamped at build time (-ldflags -X).
var Version = "dev"

// Sandbox is the executor's sandbox from the config: required when the node accepts
// PROCESS jobs, memory and CPUs shared out per GPU by default, the GPUs' device nodes from
// the inventory (mock GPUs have none), the keyring, state directory and work directory
// kept out of the tasks' view.
func Sandbox(ctx context.Context, cfg config.Config, inv gpu.Inventory, op sdk.AccAddress) (executor.Sandbox, error) {
	sc := cfg.Executor.Sandbox
	devs, err := inv.Devices(ctx)
	if err != nil {
		return executor.Sandbox{}, err
	}
	if len(devs) == 0 && cfg.Node.MockGPUs > 0 {
		devs = agent.MockDevices(op, cfg.Node.MockGPUs)
	}
	gpus := uint64(max(len(devs), 1))
	s := executor.Sandbox{
		Required: cfg.Node.AcceptsProcess(), Network: sc.Network, Processes: sc.Processes,
		MemoryPerGPU: sc.MemoryMiBPerGPU << 20, CPUsPerGPU: sc.CPUsPerGPU, MaxFileBytes: sc.MaxFileMiB << 20, Cgroup: sc.Cgroup,
		Private: []string{cfg.Key.Dir, cfg.Key.PassphraseFile, cfg.StateDir},
		Devices: func(uuids []string) ([]string, error) { return gpu.DeviceNodes(devs, uuids) },
	}
	if len(sc.ReadOnly) > 0 {
		s.ReadOnly = sc.ReadOnly
	}
	if s.MemoryPerGPU == 0 {
		s.MemoryPerGPU = executor.MachineMemory() / gpus
	}
	if s.CPUsPerGPU == 0 {
		s.CPUsPerGPU = max(uint64(runtime.NumCPU())/gpus, 1)
	}
	return s, nil
}

// urlHost is the host (with its port, if it names one) of a URL, "" if none.
func urlHost(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Host
}

// gatewayAddr is the host:port of the IPFS gateway the provider configured ("" if none).
func gatewayAddr(gateway string) string {
	u, err := url.Parse(gateway)
	if err != nil || u.Host == "" {
		return ""
	}
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// Ready is closed when the worker has registered its node and follows the chain.
type Ready chan struct{}

// Run starts a worker and blocks until ctx ends (then shuts down within 10 s) or a part
// fails. ready, if not nil, is closed once the node is set up.
func Run(ctx context.Context, cfg config.Config, log *slog.Logger, ready Ready) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	enc, err := encoding.Make()
	if err != nil {
		return err
	}
	pass, err := cfg.Key.Passphrase()
	if err != nil {
		return err
	}
	kr, err := chain.KeyringWithPassphrase(cfg.Key.Backend, cfg.Key.Dir, pass, enc.Codec)
	if err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	priv, err := chain.LoadKey(kr, cfg.Key.Name)
	if err != nil {
		return err
	}
	clientTLS, err := cfg.Chain.ClientTLS()
	if err != nil {
		return err
	}
	serverTLS, err := cfg.Outputs.ServerTLS()
	if err != nil {
		return err
	}
	metrics := telemetry.New()
	// a daemon outlives its node's restarts: it waits for the node rather than exiting
	client, err := chain.Dial(ctx, chain.Config{GRPC: cfg.Chain.GRPC, TLS: clientTLS, ChainID: cfg.Chain.ChainID, GasPrice: cfg.Chain.GasPrice,
		WaitForNode: true, Resent: metrics.TxResent}, log.With("component", "chain"))
	if err != nil {
		return err
	}
	defer func() { _ = client.Close() }()
	signer := chain.NewSigner(client, priv, log.With("component", "signer"))

	var inv gpu.Inventory = gpu.NewCPUOnly("node.no_nvml is set: the machine's GPUs are ignored")
	if !cfg.Node.NoNVML {
		if inv, err = gpu.Open(log.With("component", "gpu")); err != nil {
			return err
		}
	}
	defer func() { _ = inv.Close() }()
	sandbox, err := Sandbox(ctx, cfg, inv, signer.Address())
	if err != nil {
		return err
	}
	solver := Solver(ctx, cfg, inv, log)
	inputs := executor.InputClient(cfg.Executor.PrivateInputs, gatewayAddr(cfg.Executor.IPFSGateway))
	exec, err := executor.New(executor.Options{WorkDir: cfg.Executor.WorkDir, Log: log.With("component", "executor"),
		IPFSGateway: cfg.Executor.IPFSGateway, ContainerRuntime: cfg.Executor.ContainerRuntime, Workers: cfg.Executor.Workers, GemmSolver: solver,
		Sandbox: sandbox, HTTPClient: inputs, RegistryTransport: inputs.Transport, RegistryLogins: cfg.Executor.RegistryLogins, LocalImages: cfg.Executor.LocalImages,
		ImageCacheBytes:     cfg.Executor.ImageCacheGiB << 30,
		InputCacheBytes:     cfg.Executor.InputCacheGiB << 30,
		SignCheckpointFetch: func(req *http.Request) error { return outputs.SignRequest(req, priv, time.Now()) }})
	if err != nil {
		return err
	}
	store, err := outputs.Open(filepath.Join(cfg.Executor.WorkDir, "outputs"))
	if err != nil {
		return err
	}
	// the owners' ends of their dashboard sessions, kept across restarts
	revocations, err := outputs.OpenRevocations(filepath.Join(cfg.Executor.WorkDir, "outputs", "revocations.json"))
	if err != nil {
		return err
	}
	metrics.SetInfo(Version, inv.Backend())
	publicURL := cfg.Outputs.PublicURL
	if publicURL == "" {
		publicURL = cfg.Node.Endpoint
	}
	ckptDir := filepath.Join(cfg.Executor.WorkDir, "checkpoints")
	pub := &agent.LocalPublisher{Store: store, BaseURL: publicURL, Dir: ckptDir, UploadURL: cfg.Outputs.CheckpointUploadURL}
	a, err := agent.New(agent.Options{
		Config: cfg, Log: log, Chain: agent.Remote{Client: client, Signer: signer}, GPUs: inv, Executor: exec,
		Solver: solver, Bidder: Bidder(cfg, log), Publisher: pub, Metrics: metrics,
	})
	if err != nil {
		return err
	}

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return signer.Run(ctx) })
	g.Go(func() error {
		pruneOutputs(ctx, store, ckptDir, cfg.Outputs.Retention.Duration, time.Hour, log.With("component", "outputs"))
		return nil
	})
	g.Go(func() error {
		return telemetry.RunSampler(ctx, inv, metrics, cfg.Telemetry.SampleEvery.Duration, log.With("component", "telemetry"))
	})
	var isReady atomic.Bool
	g.Go(func() error {
		return serve(ctx, cfg.Telemetry.Listen, telemetry.Handler(metrics, func() error {
			if !isReady.Load() {
				return errors.New("setting up: bonding and registering the node")
			}
			return nil
		}), nil)
	})
	mux := http.NewServeMux()
	served := outputs.Handler(store, ownerOf(client), time.Now, outputs.WithLiveLogs(exec.TaskLogs),
		outputs.WithHosts(urlHost(cfg.Node.Endpoint), urlHost(publicURL)), outputs.WithCheckpoints(ckptDir, providerOf(client)), outputs.WithRevocations(revocations))
	mux.Handle("/v1/tasks/", served)
	mux.Handle("/v1/checkpoints/", served)
	g.Go(func() error { return serve(ctx, cfg.Outputs.Listen, mux, serverTLS) })
	// The agent's context ends with the cause executor.ErrWorkerShutdown when the
	// daemon's does: its running PROCESS and CONTAINER tasks are then left running for
	// the next start to adopt, not killed as a cancelled task is.
	agentCtx, stopAgent := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopAgent(nil)
	g.Go(func() error {
		<-ctx.Done()
		stopAgent(executor.ErrWorkerShutdown)
		return nil
	})
	g.Go(func() error {
		ctx := agentCtx
		if err := a.Setup(ctx); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		isReady.Store(true)
		metrics.SetReady(true)
		if ready != nil {
			close(ready)
		}
		log.Info("worker ready", "node", a.Node().Id, "operator", signer.Address().String(), "gpu_backend", inv.Backend(),
			"outputs", publicURL, "telemetry", cfg.Telemetry.Listen)
		return a.Follow(ctx)
	})
	err = g.Wait()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// idleTimeout closes a keep-alive connection that has asked nothing for this long. The
// output server is public: with none (net/http's default when no read timeout is set, and
// a read timeout would cut a followed log), a stranger's idle connections were held open
// for ever, each a file descriptor of the worker's.
var idleTimeout = 2 * time.Minute

// serve runs an HTTP server on addr until ctx ends (empty addr: none), over TLS when
// tlsConf is set.
func serve(ctx context.Context, addr string, h http.Handler, tlsConf *tls.Config) error {
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return serveOn(ctx, ln, h, tlsConf)
}

// serveOn is serve on a listener.
func serveOn(ctx context.Context, ln net.Listener, h http.Handler, tlsConf *tls.Config) error {
	if tlsConf != nil {
		ln = tls.NewListener(ln, tlsConf)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idleTimeout}
	return telemetry.Serve(ctx, srv, ln)
}

// GPUSolverName is the CUDA solver's program (tools/gpu-solver, built and installed by
// make where nvcc is found), looked for next to flops-worker and in PATH.
const GPUSolverName = "flops-gpu-solver"

// Solver is the configured PoCP solver, which BUILTIN gemm tasks use too:
//
//   - "go": the CPU solver;
//   - "external": pocp.external, falling back to the CPU solver when it fails;
//   - "auto" (the default): on a machine whose NVML lists GPUs, the GPU solver
//     (pocp.external when set, else GPUSolverName next to this program or in PATH),
//     falling back to the CPU solver; the CPU solver otherwise. Either way one log line
//     says which and why.
//
// An external solver spreads each solve over the GPUs it is given (worker/pocp.OnDevices).
func Solver(ctx context.Context, cfg config.Config, inv gpu.Inventory, log *slog.Logger) wpocp.Solver {
	goSolver := wpocp.NewGoSolver(cfg.PoCP.Workers)
	external := func(path string) wpocp.Solver {
		ext := wpocp.NewExternalSolver(path, cfg.PoCP.ExternalArgs, cfg.PoCP.Timeout.Duration, log.With("component", "pocp"))
		return wpocp.Fallback(ext, goSolver)
	}
	switch cfg.PoCP.Solver {
	case "go":
		log.Info("PoCP and BUILTIN gemm on the CPU (pocp.solver: go)", "solver", goSolver.Name())
		return goSolver
	case "external":
		log.Info("PoCP and BUILTIN gemm on the external solver (pocp.solver: external), the CPU solver if it fails", "solver", cfg.PoCP.External)
		return external(cfg.PoCP.External)
	}
	var devs []gpu.Device
	if inv != nil {
		var err error
		if devs, err = inv.Devices(ctx); err != nil {
			log.Warn("PoCP and BUILTIN gemm on the CPU: listing the GPUs failed", "err", err, "solver", goSolver.Name())
			return goSolver
		}
	}
	if len(devs) == 0 {
		reason := "NVML lists no GPU"
		if inv != nil && gpu.FallbackReason(inv) != "" {
			reason = gpu.FallbackReason(inv)
		}
		log.Info("PoCP and BUILTIN gemm on the CPU: no NVIDIA GPU", "reason", reason, "solver", goSolver.Name())
		return goSolver
	}
	path, how := FindGPUSolver(cfg.PoCP.External)
	if path == "" {
		log.Warn("PoCP and BUILTIN gemm on the CPU, not the GPUs: no GPU solver found ("+how+"); "+
			"build it with `make gpu-solver` (needs the CUDA toolkit's nvcc) or set pocp.external", "gpus", len(devs), "solver", goSolver.Name())
		return goSolver
	}
	log.Info("PoCP and BUILTIN gemm on the GPUs, the CPU solver if it fails", "solver", path, "found", how, "gpus", len(devs))
	return external(path)
}

// FindGPUSolver is the GPU solver auto uses: configured (pocp.external), else
// GPUSolverName next to this program, else in PATH; "" when none is. how says where it
// was found, or where it was looked for.
func FindGPUSolver(configured string) (path, how string) {
	if configured != "" {
		if _, err := os.Stat(configured); err != nil {
			return "", "pocp.external " + configured + ": " + err.Error()
		}
		return configured, "pocp.external"
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), GPUSolverName)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, "next to " + filepath.Base(exe)
		}
	}
	if p, err := exec.LookPath(GPUSolverName); err == nil {
		return p, "PATH"
	}
	return "", GPUSolverName + " is neither next to flops-worker nor in PATH"
}

// Bidder is the configured pricing policy.
func Bidder(cfg config.Config, log *slog.Logger) bidder.Policy {
	if cfg.Bidder.Script != "" {
		return bidder.Script{Path: cfg.Bidder.Script, Log: log}
	}
	per := map[string]sdkmath.Int{}
	for class, v := range cfg.Bidder.PerGPUHour {
		if a, ok := sdkmath.NewIntFromString(v); ok {
			per[class] = a
		}
	}
	return bidder.Ask{PerGPUHour: per, Default: cfg.Node.Ask(), LoadMarkupPPM: cfg.Bidder.LoadMarkupPPM}
}

// ownerOf names the account allowed to fetch a task's outputs: the job's owner, or a pool
// unit's pool owner.
func ownerOf(c *chain.Client) func(ctx context.Context, taskID uint64) (string, error) {
	return func(ctx context.Context, taskID uint64) (string, error) {
		if taskID&(1<<63) != 0 {
			res, err := c.Market.Pool(ctx, &markettypes.QueryPoolRequest{PoolId: taskID &^ (1 << 63) >> 32})
			if err != nil {
				return "", fmt.Errorf("%w: %w", outputs.ErrTaskNotFound, err)
			}
			return res.Pool.Owner, nil
		}
		t, err := taskOf(ctx, c, taskID)
		if err != nil {
			return "", err
		}
		j, err := c.Market.Job(ctx, &markettypes.QueryJobRequest{JobId: t.JobId})
		if err != nil {
			return "", err
		}
		return j.Job.Owner, nil
	}
}

// providerOf is the provider the chain has a task with now (outputs.WithCheckpoints).
func providerOf(c *chain.Client) func(ctx context.Context, taskID uint64) (string, error) {
	return func(ctx context.Context, taskID uint64) (string, error) {
		t, err := taskOf(ctx, c, taskID)
		if err != nil {
			return "", err
		}
		return t.Provider, nil
	}
}

// taskOf is a task as the chain has it; outputs.ErrTaskNotFound for one it does not know.
func taskOf(ctx context.Context, c *chain.Client, taskID uint64) (*markettypes.Task, error) {
	t, err := c.Market.Task(ctx, &markettypes.QueryTaskRequest{TaskId: taskID})
	if err != nil {
		if status.Code(err) == codes.NotFound { // x/market's ErrTaskNotFound
			return nil, fmt.Errorf("%w: task %d", outputs.ErrTaskNotFound, taskID)
		}
		return nil, err
	}
	return &t.Task, nil
}

// pruneOutputs forgets the stored outputs of tasks whose runs ended more than retention
// ago, and the checkpoints published (in ckptDir) before then, at start and then every
// interval, until ctx ends (retention 0: never). A task in flight checkpoints more often
// than that; its successor resumes from the newest.
func pruneOutputs(ctx context.Context, store *outputs.Store, ckptDir string, retention, interval time.Duration, log *slog.Logger) {
	if retention <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		cutoff := time.Now().Add(-retention)
		if n, err := store.Prune(ctx, cutoff); err != nil {
			log.Warn("stored outputs not pruned", "err", err)
		} else if n > 0 {
			log.Info("stored outputs past their retention removed", "tasks", n, "retention", retention)
		}
		if entries, err := os.ReadDir(ckptDir); err == nil {
			for _, de := range entries {
				if info, err := de.Info(); err == nil && info.Mode().IsRegular() && info.ModTime().Before(cutoff) {
					if err := os.Remove(filepath.Join(ckptDir, de.Name())); err != nil {
						log.Warn("published checkpoint not removed", "file", de.Name(), "err", err)
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
