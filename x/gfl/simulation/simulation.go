// Package simulation is x/gfl in the app's simulations (app/sim_test.go): random genesis
// params and the operators' node registration, deactivation and reactivation.
package simulation

import (
	"context"
	"fmt"
	"time"

	"github.com/cosmos/cosmos-sdk/testutil/simsx"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/module"

	"github.com/flopsnet/flops/internal/simutil"
	"github.com/flopsnet/flops/x/gfl/keeper"
	"github.com/flopsnet/flops/x/gfl/types"
)

// RandomizedGenState writes the module's genesis: the defaults with challenges every 20 to
// 200 blocks, so that a simulation sees nodes challenged, and (not answered by the
// simulated operators yet) missing their deadlines.
func RandomizedGenState(s *module.SimulationState) {
	gs := types.DefaultGenesisState()
	gs.Params.ChallengeIntervalBlocks = uint64(20 + s.Rand.Intn(181))
	gs.Params.ChallengeRevealBlocks = uint64(5 + s.Rand.Intn(30))
	// the simulator's blocks are up to 2.8 h apart
	gs.Params.ChallengeCommitTimeout = time.Duration(6+s.Rand.Intn(114)) * time.Hour
	s.GenState[types.ModuleName] = s.Cdc.MustMarshalJSON(gs)
}

// Operators lists the accounts whose bonded collateral covers gpus more GPUs, in address
// order (x/staking-slash; the app wires it).
type Operators func(ctx context.Context, gpus uint64) []sdk.AccAddress

// MsgRegisterNodeFactory registers a node of 1 to 4 GPUs for an account whose collateral
// covers them (one in ten tries any account: refused with ErrInsufficientCollateral, as
// the simulation expects).
func MsgRegisterNodeFactory(k keeper.Keeper, operators Operators) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgRegisterNode, simsx.SimDeliveryResultHandler) {
		p, err := k.Params.Get(ctx)
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil, nil
		}
		r := data.Rand()
		gpus := 1 + r.Intn(4)
		var op simsx.SimAccount
		if ops := operators(ctx, uint64(gpus)); len(ops) > 0 && r.Intn(10) != 0 {
			op = data.GetAccountbyAccAddr(reporter, ops[r.Intn(len(ops))])
		} else {
			op = data.AnyAccount(reporter)
		}
		if reporter.IsSkipped() {
			return nil, nil, nil
		}
		class := p.GpuClasses[r.Intn(len(p.GpuClasses))]
		spec := types.NodeSpec{
			Region: []string{"eu-west", "us-east", "ap-south"}[r.Intn(3)], Endpoint: fmt.Sprintf("https://n%d.sim.example", r.Uint32()),
			Workloads:     []types.WorkloadClass{types.WORKLOAD_CLASS_TRAINING, types.WORKLOAD_CLASS_INFERENCE, types.WORKLOAD_CLASS_BATCH, types.WORKLOAD_CLASS_RENDERING}[:1+r.Intn(4)],
			Runtimes:      []types.Runtime{types.RUNTIME_BUILTIN, types.RUNTIME_CONTAINER, types.RUNTIME_PROCESS}[:1+r.Intn(3)],
			AskPerGpuHour: sdk.NewInt64Coin(sdk.DefaultBondDenom, int64(100_000+r.Intn(2_000_000))), ClaimedGflops: uint64(1 + r.Intn(1000)),
		}
		for range gpus {
			spec.Gpus = append(spec.Gpus, types.GpuInfo{
				Model: "NVIDIA " + class.ModelSubstrings[0], Uuid: fmt.Sprintf("GPU-%016x", r.Uint64()), MemoryMib: class.MinMemoryMib, ComputeCapability: "8.0",
			})
		}
		return []simsx.SimAccount{op}, &types.MsgRegisterNode{Operator: op.AddressBech32, Spec: spec}, simutil.Expect(types.ErrInsufficientCollateral)
	})
}

// MsgDeactivateNodeFactory takes a simulated operator's active node out of service; a
// node with work in flight or a challenge awaiting its reveal is refused (ErrNodeBusy),
// as the simulation expects.
func MsgDeactivateNodeFactory(k keeper.Keeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgDeactivateNode, simsx.SimDeliveryResultHandler) {
		n, op, ok := pickNode(ctx, k, data, reporter, types.NODE_STATUS_ACTIVE)
		if !ok {
			return nil, nil, nil
		}
		return []simsx.SimAccount{op}, &types.MsgDeactivateNode{Operator: n.Operator, NodeId: n.Id}, simutil.Expect(types.ErrNodeBusy)
	})
}

// MsgReactivateNodeFactory puts a simulated operator's inactive node back (refused when
// its collateral no longer covers the GPUs: ErrInsufficientCollateral, expected).
func MsgReactivateNodeFactory(k keeper.Keeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgReactivateNode, simsx.SimDeliveryResultHandler) {
		n, op, ok := pickNode(ctx, k, data, reporter, types.NODE_STATUS_INACTIVE)
		if !ok {
			return nil, nil, nil
		}
		return []simsx.SimAccount{op}, &types.MsgReactivateNode{Operator: n.Operator, NodeId: n.Id}, simutil.Expect(types.ErrInsufficientCollateral)
	})
}

// pickNode draws one of the newest nodes in status want whose operator is a simulated
// account.
func pickNode(ctx context.Context, k keeper.Keeper, data *simsx.ChainDataSource, reporter simsx.SimulationReporter, want types.NodeStatus) (types.Node, simsx.SimAccount, bool) {
	var found []types.Node
	_ = simutil.Newest(ctx, k.Nodes.Iterate, func(n types.Node) {
		if n.Status == want && data.HasAccount(n.Operator) {
			found = append(found, n)
		}
	})
	if len(found) == 0 {
		reporter.Skipf("no %s node of a simulated operator", want)
		return types.Node{}, simsx.SimAccount{}, false
	}
	n := found[data.Rand().Intn(len(found))]
	return n, data.GetAccount(reporter, n.Operator), !reporter.IsSkipped()
}
