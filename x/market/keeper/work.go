package keeper

import (
	"context"
	"time"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/gfl/pocp"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/types"
)

// Verified work. x/market reports every settled task and every paid pool unit through
// the AfterWorkVerified hook and keeps nothing of it: x/dps owns the work ledger, the
// funding links and the rule of what counts (x/dps/keeper/work.go).

// recordWork reports a settled task as verified work: C = the node's GFL index corrected
// for the job's workload class, times the task's run time (commit - ack, at most
// max_duration, whole seconds), times its share of the node's GPUs (GFLOP-seconds); the
// fees are the gross payment. A hook error is returned: the settlement fails whole.
func (k Keeper) recordWork(ctx context.Context, job types.Job, t types.Task, gross sdkmath.Int) error {
	payer, err := k.acc(job.Owner)
	if err != nil {
		return err
	}
	provider, err := k.acc(t.Provider)
	if err != nil {
		return err
	}
	node, err := k.gfl.GetNode(ctx, t.NodeId)
	if err != nil {
		return err
	}
	gp, err := k.gfl.GetParams(ctx)
	if err != nil {
		return err
	}
	var corrected uint64
	if f, ok := gp.ClassFactors(node.GpuClass); ok {
		for _, w := range gp.WorkloadWeights {
			if w.Workload == job.Spec.Workload {
				corrected = gfltypes.Corrected(node.PowerGflops, w, f)
			}
		}
	}
	run := t.CommitTime.Sub(t.StartedTime)
	run = min(max(run, 0), job.Spec.MaxDuration)
	// the task's share of the node's power: its GPUs, or on a node with MIG its devices'
	// shares of a card (a one-slice instance of 7 did a seventh of a GPU's work; counted
	// as a GPU, 7 slices of one card were 7 GPUs' verified work), as at its assignment:
	// the node's devices may have changed since (a task assigned before device_share
	// reads them as they are now)
	gpus := uint64(max(len(node.Gpus), 1))
	share, whole := uint64(job.Spec.Requirements.GPUs()), uint64(1)
	switch {
	case t.DeviceShare > 0:
		share, whole = uint64(t.DeviceShare), types.DeviceShareDen
	case len(t.Devices) > 0:
		share, whole = types.DevicesShare(types.SlotFromNode(node), t.Devices)
	}
	c := sdkmath.NewIntFromUint64(corrected).MulRaw(int64(run / time.Second)).
		Mul(sdkmath.NewIntFromUint64(share)).Quo(sdkmath.NewIntFromUint64(gpus * whole))
	return k.hooks().AfterWorkVerified(ctx, types.VerifiedWork{
		Payer: payer, Provider: provider, Workload: int32(job.Spec.Workload), GflopSeconds: c, Fees: gross,
	})
}

// recordPoolWork reports a paid pool unit as verified work: a GEMM unit's exact FLOPs, in
// GFLOP-seconds of one second of a GFLOP/s node (NONE pools do no verified work); the fee
// is the unit's price.
func (k Keeper) recordPoolWork(ctx context.Context, pool types.Pool, provider sdk.AccAddress, fee sdkmath.Int) error {
	payer, err := k.acc(pool.Owner)
	if err != nil {
		return err
	}
	work := sdkmath.ZeroInt()
	if pool.Spec.Verification == types.VERIFICATION_CLASS_BUILTIN_GEMM {
		c := pocp.Challenge{N: pool.Spec.Builtin.GemmN, R: pool.Spec.Builtin.GemmR}
		work = sdkmath.NewIntFromUint64(c.FLOPs() / 1e9)
	}
	return k.hooks().AfterWorkVerified(ctx, types.VerifiedWork{
		Payer: payer, Provider: provider, Workload: int32(pool.Spec.Workload), GflopSeconds: work, Fees: fee,
	})
}
