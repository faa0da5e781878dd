package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/worker/chain"
	"github.com/flopsnet/flops/worker/executor"
	"github.com/flopsnet/flops/worker/gpu"
	wpocp "github.com/flopsnet/flops/worker/pocp"
	dpstypes "github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// BenchmarkSize is the first GEMM the worker times to claim its power at the first start;
// it doubles it while a run takes under a second, up to BenchmarkMaxSize (a GPU's small
// runs are all start-up: wpocp.BenchmarkClaim).
const (
	BenchmarkSize    = 1024
	BenchmarkMaxSize = 16384
)

// Setup makes the chain know the machine: it bonds up to the configured collateral (and
// at least the chain's minimum for its GPUs), finds the node registered with this
// machine's GPUs or registers it, and updates its spec when the config changed.
func (a *Agent) Setup(ctx context.Context) error {
	devs, err := a.o.GPUs.Devices(ctx)
	if err != nil {
		return fmt.Errorf("GPU inventory: %w", err)
	}
	mock := len(devs) == 0 && a.cfg.Node.MockGPUs > 0
	if mock {
		devs = MockDevices(a.o.Chain.Address(), a.cfg.Node.MockGPUs)
		a.log.Info("no GPU found: registering mock GPUs", "gpus", len(devs))
	}
	devs, dropped := gpu.Offerable(devs)
	if len(dropped) > 0 {
		a.log.Warn("GPUs in MIG mode without a MIG instance are not offered: create instances (nvidia-smi mig -cgi ... -C) or turn MIG off", "gpus", dropped)
	}
	if len(devs) == 0 {
		return fmt.Errorf("no GPU on this machine (%s) and node.mock_gpus is 0: nothing to sell", gpu.FallbackReason(a.o.GPUs))
	}
	a.mu.Lock()
	a.devices, a.units, a.mockGPUs = devs, gpu.SchedulableUUIDs(devs), mock
	a.mu.Unlock()
	if err := a.ensureBond(ctx, uint64(len(devs))); err != nil {
		return err
	}
	node, err := a.findNode(ctx, devs)
	if err != nil {
		return err
	}
	spec, err := a.nodeSpec(ctx, devs, node)
	if err != nil {
		return err
	}
	op := a.o.Chain.Address().String()
	switch {
	case node == nil:
		if err := a.submit(ctx, "register node", &gfltypes.MsgRegisterNode{Operator: op, Spec: spec}); err != nil {
			return fmt.Errorf("register node: %w", err)
		}
		if node, err = a.findNode(ctx, devs); err != nil {
			return err
		}
		if node == nil {
			return errors.New("registered, but the chain does not list the node")
		}
		a.log.Info("node registered", "node", node.Id, "class", node.GpuClass, "status", node.Status, "gpus", len(node.Gpus), "claimed_gflops", spec.ClaimedGflops)
	case specChanged(*node, spec):
		a.mu.Lock()
		a.node = *node
		a.mu.Unlock()
		if err := a.updateNode(ctx, spec); err != nil {
			return err
		}
	default:
		a.log.Info("node found", "node", node.Id, "class", node.GpuClass, "status", node.Status)
	}
	switch node.Status {
	case gfltypes.NODE_STATUS_INACTIVE:
		// deactivated (or drained) by its operator, who runs the worker again: the node
		// goes back on the market, its collateral locked again (its GPUs are still its
		// own on the chain, so registering them anew would be refused)
		if err := a.submit(ctx, "reactivate node", &gfltypes.MsgReactivateNode{Operator: op, NodeId: node.Id}); err != nil {
			return fmt.Errorf("reactivate node %d: %w", node.Id, err)
		}
		a.log.Info("node reactivated: it was inactive; it takes work again once its PoCP challenge passes", "node", node.Id)
	case gfltypes.NODE_STATUS_DRAINING:
		a.log.Warn("the node is draining: it takes no new work, finishes its tasks in flight and is deactivated when they end (flops-worker drain --cancel puts it back)", "node", node.Id)
	}
	got, err := a.gfl.Node(ctx, &gfltypes.QueryNodeRequest{NodeId: node.Id})
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.node = got.Node
	a.nodeStatus = got.Node.Status
	a.mu.Unlock()
	if a.node.ClaimedClass != "" {
		a.logClass(a.node)
	}
	if a.node.AwaitingMeasurement {
		a.log.Info("the node takes jobs once a PoCP challenge shows its class's power floor", "node", a.node.Id, "class", a.node.GpuClass)
	}
	if kept, err := a.state.keys(); err == nil && len(kept) > 0 {
		// results committed before a restart: the ticks reveal them (or forget them once
		// the chain has moved on)
		a.log.Info("results kept from before a restart", "count", len(kept), "keys", kept)
		a.adoptClaims(kept)
	}
	if a.node.Status == gfltypes.NODE_STATUS_PENDING {
		a.log.Warn("the node waits for governance approval (GOVERNED admission)", "node", a.node.Id)
	}
	a.checkDiskRoom(ctx)
	a.checkAskCap(ctx)
	return nil
}

// checkAskCap warns when the node asks more per GPU-hour than its class's cap in the last
// reward distribution: x/dps pays no availability reward to a node priced out of its
// class's market (x/dps/README.md, "Priced out").
func (a *Agent) checkAskCap(ctx context.Context) {
	res, err := a.dps.LatestEmission(ctx, &dpstypes.QueryLatestEmissionRequest{})
	if err != nil {
		a.log.Warn("the last reward distribution not read: the ask is not checked against its class's cap", "err", err)
		return
	}
	if !res.Found {
		return
	}
	a.mu.Lock()
	node := a.node
	a.mu.Unlock()
	if c, over := dpstypes.PricedOut(res.Distribution.AskCaps, node.GpuClass, node.AskPerGpuHour.Amount); over {
		a.log.Warn("the node asks more per GPU-hour than its class's cap in the last reward distribution: it earns no availability reward while it does (lower node.ask_per_gpu_hour)",
			"node", node.Id, "class", node.GpuClass, "ask", node.AskPerGpuHour.Amount.String(), "cap", c.Cap.String(),
			"reference_ask", c.ReferenceAsk.String(), "epoch", res.Distribution.Epoch)
	}
}

// checkDiskRoom warns when the work directory's filesystem has less free space than the
// tasks this machine may run at once may fill: for each GPU (or MIG instance) it offers,
// the chain's task_disk_mib_per_gpu, or the disk the node offers (node.disk_mib_per_gpu)
// when that is more. A job that fills its disk within that limit would then fail here on
// a full disk and succeed on another provider's machine, which refutes the failure this
// worker reports, and slashes its provider.
func (a *Agent) checkDiskRoom(ctx context.Context) {
	params, err := a.market.Params(ctx, &markettypes.QueryParamsRequest{})
	if err != nil {
		a.log.Warn("market params not read: the work directory's free space is not checked", "err", err)
		return
	}
	dir := a.cfg.Executor.WorkDir
	free, err := executor.FreeSpace(dir)
	if err != nil {
		a.log.Warn("the work directory's free space is not checked", "work_dir", dir, "err", err)
		return
	}
	perGPU := max(params.Params.TaskDiskBytes(markettypes.Requirements{GpuCount: 1}), params.Params.TaskDiskBytes(markettypes.Requirements{GpuCount: 1, DiskMibPerGpu: a.cfg.Node.DiskMiBPerGPU}))
	need := perGPU * uint64(max(len(a.units), 1))
	if free < need {
		a.log.Warn("the work directory has less free space than the tasks this machine may run can fill (task_disk_mib_per_gpu, or node.disk_mib_per_gpu when more, for each GPU): a job that fills its disk within its limit would fail here on a full disk, and the failure this worker reports would be refuted by a run elsewhere",
			"work_dir", dir, "free_bytes", free, "tasks_may_fill_bytes", need, "task_disk_mib_per_gpu", params.Params.TaskDiskMibPerGpu, "disk_mib_per_gpu", a.cfg.Node.DiskMiBPerGPU, "gpus", len(a.units))
	}
}

// ensureBond bonds the difference between the target and what is bonded.
func (a *Agent) ensureBond(ctx context.Context, gpus uint64) error {
	op := a.o.Chain.Address()
	params, err := a.coll.Params(ctx, &sstypes.QueryParamsRequest{})
	if err != nil {
		return fmt.Errorf("collateral params: %w", err)
	}
	target := a.cfg.Bond.BondAmount()
	if min := params.Params.MinCollateralPerGpu.MulRaw(int64(gpus)); target.LT(min) {
		a.log.Warn("bond.amount is below the chain's minimum for the GPUs: bonding the minimum", "configured", target, "minimum", min)
		target = min
	}
	bonded := sdkmath.ZeroInt()
	if c, err := a.coll.Collateral(ctx, &sstypes.QueryCollateralRequest{Provider: op.String()}); err == nil {
		bonded = c.Collateral.Bonded
	}
	if bonded.GTE(target) {
		return nil
	}
	amount := sdk.NewCoin(params.Params.CollateralDenom, target.Sub(bonded))
	if err := a.submit(ctx, "bond", &sstypes.MsgBond{Provider: op.String(), Amount: amount}); err != nil {
		return fmt.Errorf("bond %s: %w", amount, err)
	}
	a.log.Info("bonded", "amount", amount, "total", target)
	return nil
}

// findNode returns the operator's node holding these GPUs (the configured id first).
func (a *Agent) findNode(ctx context.Context, devs []gpu.Device) (*gfltypes.Node, error) {
	if id := a.cfg.Node.ID; id != 0 {
		res, err := a.gfl.Node(ctx, &gfltypes.QueryNodeRequest{NodeId: id})
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", id, err)
		}
		if res.Node.Operator != a.o.Chain.Address().String() {
			return nil, fmt.Errorf("node %d is operated by %s, not by this key", id, res.Node.Operator)
		}
		return &res.Node, nil
	}
	uuids := map[string]bool{}
	for _, d := range devs {
		uuids[d.UUID] = true
	}
	nodes, err := chain.NodesOf(ctx, a.gfl, a.o.Chain.Address().String())
	if err != nil {
		return nil, err
	}
	var inactive *gfltypes.Node
	for _, n := range nodes {
		for _, g := range n.Gpus {
			switch {
			case !uuids[g.Uuid]:
			case n.Status != gfltypes.NODE_STATUS_INACTIVE:
				return &n, nil
			case inactive == nil:
				inactive = &n
			}
		}
	}
	// a node deactivated (or drained) still owns its GPUs on the chain until it is
	// deleted: it is this machine's node, reactivated by Setup
	return inactive, nil
}

// nodeSpec is what the node registers: the GPUs, the config, and its claimed power
// (configured, the registered one, or measured now with the PoCP solver).
func (a *Agent) nodeSpec(ctx context.Context, devs []gpu.Device, node *gfltypes.Node) (gfltypes.NodeSpec, error) {
	workloads, err := a.cfg.Node.WorkloadClasses()
	if err != nil {
		return gfltypes.NodeSpec{}, err
	}
	runtimes, err := a.cfg.Node.RuntimeList()
	if err != nil {
		return gfltypes.NodeSpec{}, err
	}
	if slices.Contains(runtimes, gfltypes.RUNTIME_CONTAINER) {
		// Declaring CONTAINER without a runtime would have every container job assigned
		// here fail on the provider's side, and the provider slashed for it.
		if _, err := a.o.Executor.ContainerRuntime(); err != nil {
			a.log.Warn("node.runtimes lists CONTAINER but no container runtime works here: not declared (install podman or docker)", "err", err)
			runtimes = slices.DeleteFunc(runtimes, func(r gfltypes.Runtime) bool { return r == gfltypes.RUNTIME_CONTAINER })
		}
	}
	if len(runtimes) == 0 {
		return gfltypes.NodeSpec{}, errors.New("node.runtimes: none of them can run here")
	}
	claimed := a.cfg.Node.ClaimedGflops
	if claimed == 0 && node != nil {
		claimed = node.ClaimedGflops
	}
	if claimed == 0 {
		gflops, n, took, err := wpocp.BenchmarkClaim(wpocp.OnDevices(ctx, gpu.SchedulableUUIDs(devs)), a.o.Solver, BenchmarkSize, BenchmarkMaxSize, time.Second)
		if err != nil {
			return gfltypes.NodeSpec{}, fmt.Errorf("benchmark: %w", err)
		}
		claimed = max(gflops, 1)
		a.log.Info("benchmarked the PoCP solver", "solver", a.o.Solver.Name(), "gflops", claimed, "n", n, "took", took)
	}
	return gfltypes.NodeSpec{
		Gpus: gpu.ToGpuInfos(devs), Region: a.cfg.Node.Region, Endpoint: a.cfg.Node.Endpoint,
		Workloads: workloads, Runtimes: runtimes, AskPerGpuHour: sdk.NewCoin("udps", a.cfg.Node.Ask()), ClaimedGflops: claimed,
		DiskMibPerGpu: a.cfg.Node.DiskMiBPerGPU,
	}, nil
}

// specChanged: the machine's node spec differs from the node registered, its GPUs (as
// x/gfl compares them: every field) included.
func specChanged(n gfltypes.Node, s gfltypes.NodeSpec) bool {
	if !gfltypes.SameGPUs(n.Gpus, s.Gpus) {
		return true
	}
	if n.Region != s.Region || n.Endpoint != s.Endpoint || !n.AskPerGpuHour.Equal(s.AskPerGpuHour) || len(n.Workloads) != len(s.Workloads) || n.DiskMibPerGpu != s.DiskMibPerGpu {
		return true
	}
	if !slices.Equal(n.Runtimes, gfltypes.NodeRuntimes(s)) {
		return true
	}
	for i := range n.Workloads {
		if n.Workloads[i] != s.Workloads[i] {
			return true
		}
	}
	return false
}

// MockDevices are n A100-40GB GPUs with UUIDs derived from the operator's address, for
// demos and tests on machines without a GPU (node.mock_gpus).
func MockDevices(op sdk.AccAddress, n int) []gpu.Device {
	out := make([]gpu.Device, n)
	tag := fmt.Sprintf("%x", op.Bytes()[:6])
	for i := range out {
		out[i] = gpu.Device{
			Index: i, UUID: fmt.Sprintf("GPU-mock-%s-%d", tag, i), Model: "NVIDIA A100-SXM4-40GB",
			MemoryMiB: 40960, ComputeCapability: "8.0", TensorCores: true, PowerLimitWatts: 400, Minor: -1,
		}
	}
	return out
}

// since is how long ago a block time was, on the agent's clock.
func (a *Agent) since(t time.Time) time.Duration { return a.o.Now().Sub(t) }
