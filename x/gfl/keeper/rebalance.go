package keeper

import (
	"context"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"
	epochstypes "github.com/cosmos/cosmos-sdk/x/epochs/types"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/x/gfl/types"
)

// The rebalance (burn and mint). At the end of each x/epochs epoch named by
// epoch_identifier, the epoch is queued and new challenge results start counting in the
// next one. EndBlock then walks the nodes in id order, max_rebalance_per_block per block,
// resuming from a cursor: each node's power becomes median * availability of its epoch
// statistics and its operator's ugfl is minted or burned by the difference, so that at
// every moment ugfl supply = sum of the nodes' power = NetworkPower.total_gflops.
// A node with no concluded challenge in the epoch keeps its power (nothing was measured);
// an inactive node has none.

// EpochHooks returns the x/epochs hooks of the module.
func (k Keeper) EpochHooks() epochstypes.EpochHooks { return epochHooks{k} }

type epochHooks struct{ k Keeper }

// AfterEpochEnd queues the ended epoch for rebalancing. Constant work; an error is logged,
// never returned to x/epochs (which would halt the chain).
func (h epochHooks) AfterEpochEnd(ctx context.Context, identifier string, _ int64) error {
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	_ = blockhook.Apply(sdkCtx, "gfl: queue rebalance", func(ctx sdk.Context) error {
		p, err := h.k.Params.Get(ctx)
		if err != nil || identifier != p.EpochIdentifier {
			return err
		}
		st, err := h.k.Rebalance.Get(ctx)
		if err != nil {
			return err
		}
		st.Pending = append(st.Pending, st.StatsEpoch)
		st.StatsEpoch++
		return h.k.Rebalance.Set(ctx, st)
	})
	return nil
}

// BeforeEpochStart implements epochstypes.EpochHooks.
func (h epochHooks) BeforeEpochStart(context.Context, string, int64) error { return nil }

func (k Keeper) rebalanceNode(ctx sdk.Context, p types.Params, id, epoch uint64) error {
	node, err := k.Nodes.Get(ctx, id)
	if err != nil {
		return err
	}
	key := collections.Join(id, epoch)
	stats, err := k.Stats.Get(ctx, key)
	found := err == nil
	if err != nil && !errorsmod.IsOf(err, collections.ErrNotFound) {
		return err
	}
	old := node.PowerGflops
	power := old
	reclassed := false
	switch {
	case !node.Schedulable():
		power = 0
	case found && stats.Issued > 0:
		node.MedianGflops = types.Median(stats.Samples)
		node.AvailabilityPpm = types.AvailabilityPPM(stats.Passed, stats.Issued)
		power = types.IndexPower(node.MedianGflops, node.AvailabilityPpm)
		if len(stats.Samples) > 0 {
			// measured: the class follows the measurement (a node whose every challenge
			// failed or was missed measured nothing, and keeps its class), and the node
			// waits for no sample any more: the measurement placed it
			if reclassed, err = k.reclass(ctx, p, &node, epoch); err != nil {
				return err
			}
			reclassed = reclassed || node.AwaitingMeasurement
			node.AwaitingMeasurement = false
		}
	}
	if limit, ok := p.PowerCap(node); ok && power > limit {
		// answered by more than the GPUs it declares, or declaring fewer since it was
		// measured (docs/pocp.md, "Power per declared GPU")
		power = limit
	}
	if err := k.setNodePower(ctx, &node, power); err != nil {
		return err
	}
	node.PowerEpoch = epoch
	// the power is the epoch's, and so is the ask it is held to (x/dps): the highest of
	// the epoch, then the running peak starts again from the ask now
	node.EpochAsk = node.HighestAsk()
	node.PeakAsk = node.AskPerGpuHour.Amount
	if found {
		if err := k.Stats.Remove(ctx, key); err != nil {
			return err
		}
	}
	if err := k.Nodes.Set(ctx, id, node); err != nil {
		return err
	}
	if reclassed {
		// the market moves the node's slot to its class, out of scheduling or into it
		if err := k.gflHooks().AfterNodeChanged(ctx, node); err != nil {
			return err
		}
	}
	return ctx.EventManager().EmitTypedEvent(&types.EventNodeRebalanced{
		NodeId: id, Operator: node.Operator, Epoch: epoch, OldGflops: old, NewGflops: power,
		MedianGflops: node.MedianGflops, AvailabilityPpm: node.AvailabilityPpm,
	})
}

// reclass puts a node whose median sample was just taken in the class its power per GPU
// measures (types.Params.MeasuredClass): the class it claimed while it measures within
// that class's range, the best class its measurement and memory fit otherwise, none when
// no class does. Its power moves with it (the caller then sets the new power, in the new
// class); the caller saves the node and tells the market. It reports whether the class
// changed.
func (k Keeper) reclass(ctx sdk.Context, p types.Params, node *types.Node, epoch uint64) (bool, error) {
	claimed := node.Claimed()
	perGPU := node.PerGPU(node.MedianGflops)
	to := p.MeasuredClass(claimed, node.Gpus, perGPU)
	if to == node.GpuClass {
		return false, nil
	}
	from := node.GpuClass
	if node.PowerGflops > 0 {
		if err := k.addClassPower(ctx, from, node.PowerGflops, false); err != nil {
			return false, err
		}
		if err := k.addClassPower(ctx, to, node.PowerGflops, true); err != nil {
			return false, err
		}
	}
	node.GpuClass = to
	node.ClaimedClass = ""
	if to != claimed {
		node.ClaimedClass = claimed
	}
	return true, ctx.EventManager().EmitTypedEvent(&types.EventNodeReclassed{
		NodeId: node.Id, Operator: node.Operator, From: from, To: to, ClaimedClass: claimed,
		MeasuredGflopsPerGpu: perGPU, Epoch: epoch,
	})
}

// WorkloadTotals derives the network's corrected power per workload class from the class
// totals and the current weights (a class no longer in the table counts for nothing).
func (k Keeper) WorkloadTotals(ctx context.Context, p types.Params) ([]types.WorkloadPower, error) {
	out := make([]types.WorkloadPower, len(p.WorkloadWeights))
	for i, w := range p.WorkloadWeights {
		out[i].Workload = w.Workload
	}
	err := k.ClassPower.Walk(ctx, nil, func(class string, power uint64) (bool, error) {
		f, ok := p.ClassFactors(class)
		if !ok {
			return false, nil
		}
		for i, w := range p.WorkloadWeights {
			out[i].Gflops += types.Corrected(power, w, f)
		}
		return false, nil
	})
	return out, err
}

// NodeWorkloadPower is a node's power corrected per workload class.
func NodeWorkloadPower(p types.Params, n types.Node) []types.WorkloadPower {
	f, _ := p.ClassFactors(n.GpuClass)
	out := make([]types.WorkloadPower, len(p.WorkloadWeights))
	for i, w := range p.WorkloadWeights {
		out[i] = types.WorkloadPower{Workload: w.Workload, Gflops: types.Corrected(n.PowerGflops, w, f)}
	}
	return out
}
