package e2e

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/codec"

	"github.com/flopsnet/flops/worker/config"
	"github.com/flopsnet/flops/worker/daemon"
	"github.com/flopsnet/flops/worker/gpu"
	wpocp "github.com/flopsnet/flops/worker/pocp"
	gflpocp "github.com/flopsnet/flops/x/gfl/pocp"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// TestGPUPoCPMeasuredPower is issue 20's check on a real GPU (scripts/gpu-check.sh runs it
// with FLOPS_GPU_TESTS=1 and FLOPS_GPU_SOLVER=build/flops-gpu-solver; skipped otherwise,
// and in CI): a worker on the machine's GPUs (pocp.solver auto, no mock) claims the power
// its GPU solver measures, registers them, and answers PoCP challenges sized for 20 s of
// that power, on all its GPUs. It logs the chain's verified samples against the solver's
// own throughput on the challenge's size, on the same GPUs (the goal: within 10%), and the
// node's class after registration. It fails if no challenge passes.
func TestGPUPoCPMeasuredPower(t *testing.T) {
	if os.Getenv("FLOPS_GPU_TESTS") == "" {
		t.Skip("a GPU check: FLOPS_GPU_TESTS=1 FLOPS_GPU_SOLVER=... (scripts/gpu-check.sh)")
	}
	solverPath := os.Getenv("FLOPS_GPU_SOLVER")
	require.NotEmpty(t, solverPath, "FLOPS_GPU_SOLVER: the GPU solver's path")
	inv, err := gpu.Open(slog.Default())
	require.NoError(t, err)
	defer func() { _ = inv.Close() }()
	devs, err := inv.Devices(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, devs, "NVML lists no GPU")
	uuids := gpu.SchedulableUUIDs(devs)
	for _, d := range devs {
		t.Logf("GPU %d: %s %s, %d MiB, compute capability %s, MIG %v", d.Index, d.Model, d.UUID, d.MemoryMiB, d.ComputeCapability, d.MIGEnabled)
	}

	// the solver's own figure, as the worker claims it (the size grown until it shows)
	cfg := config.Default(t.TempDir())
	cfg.PoCP.External = solverPath
	solver := daemon.Solver(context.Background(), cfg, inv, slog.Default())
	claimed, n, took, err := wpocp.BenchmarkClaim(wpocp.OnDevices(context.Background(), uuids), solver, 1024, 16384, time.Second)
	require.NoError(t, err)
	t.Logf("solver %s: %d GFLOP/s at n = %d (%s)", solver.Name(), claimed, n, took)

	const target = 20 // seconds of work a challenge is sized for
	wc := startWorkerChainWith(t, func(cdc codec.Codec, gen map[string]json.RawMessage) {
		var g gfltypes.GenesisState
		cdc.MustUnmarshalJSON(gen[gfltypes.ModuleName], &g)
		g.Params.ChallengeTargetSeconds = target
		g.Params.ChallengeMaxN = gfltypes.DefaultParams().ChallengeMaxN
		g.Params.ChallengeCommitTimeout = 5 * time.Minute
		g.Params.ChallengeIntervalBlocks = 40
		g.Params.GpuClasses = gfltypes.DefaultGpuClasses() // the launch floors
		gen[gfltypes.ModuleName] = cdc.MustMarshalJSON(&g)
	}, "client", "gpu")
	w := wc.startWorker(t, "gpu", "gpu-land", func(c *config.Config) {
		c.Node.MockGPUs = 0
		c.Node.Runtimes = []string{"BUILTIN"}
		c.Node.ClaimedGflops = claimed
		c.PoCP.Solver, c.PoCP.External, c.PoCP.Workers = "auto", solverPath, 0
		c.PoCP.Timeout = config.Duration{Duration: 5 * time.Minute}
	})
	w.waitReady(t, wc, 3*time.Minute)
	ctx := context.Background()
	node, err := wc.client.GFL.Node(ctx, &gfltypes.QueryNodeRequest{NodeId: w.nodeID})
	require.NoError(t, err)
	t.Logf("node %d: class %s, %d GPUs, claimed %d GFLOP/s", w.nodeID, node.Node.GpuClass, len(node.Node.Gpus), node.Node.ClaimedGflops)

	var samples []uint64
	deadline := time.Now().Add(6 * time.Minute)
	for len(samples) < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Second)
		st, err := wc.client.GFL.NodeStats(ctx, &gfltypes.QueryNodeStatsRequest{NodeId: w.nodeID})
		require.NoError(t, err)
		samples = st.Stats.Samples
	}
	require.NotEmpty(t, samples, "no PoCP challenge passed in 6 minutes")
	gp, err := wc.client.GFL.Params(ctx, &gfltypes.QueryParamsRequest{})
	require.NoError(t, err)
	p := gp.Params
	cn, cr := gflpocp.ChooseSize(claimed, p.ChallengeTargetSeconds, p.ChallengeMinN, p.ChallengeMaxN, p.ChallengeMaxRn)
	own, ownTook, err := wpocp.Benchmark(wpocp.OnDevices(ctx, uuids), solver, cn, cr)
	require.NoError(t, err)
	for i, s := range samples {
		t.Logf("challenge %d: the chain measured %d GFLOP/s; the solver alone, n = %d r = %d: %d GFLOP/s in %s: %.1f%%",
			i+1, s, cn, cr, own, ownTook, 100*float64(s)/float64(max(own, 1)))
	}
	perGPU := samples[0] / uint64(len(devs))
	t.Logf("per GPU %d GFLOP/s: the launch table puts the node in %q", perGPU,
		gfltypes.Params{GpuClasses: gfltypes.DefaultGpuClasses()}.MeasuredClass(node.Node.GpuClass, node.Node.Gpus, perGPU))
}
