package keeper

import (
	"fmt"
	"math"
	"time"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/internal/collkeys"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// EndBlocker runs the market's due work in this order, each item in its own cache context
// (internal/blockhook), every kind bounded: auctions close, lapsed tasks are reassigned,
// revealed tasks settle after their challenge window, past-deadline tasks expire, finished
// jobs are pruned (all within max_timeouts_per_block), then the scheduler assigns
// (max_assign_per_block).
func (k Keeper) EndBlocker(ctx sdk.Context) error {
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	budget := int(p.MaxTimeoutsPerBlock)
	h := ctx.BlockHeight()
	byHeight := collections.Join(h, uint64(math.MaxUint64))
	heightRange := new(collections.Range[collections.Pair[int64, uint64]]).EndInclusive(byHeight)
	timeRange := new(collections.Range[collections.Pair[time.Time, uint64]]).EndInclusive(collections.Join(ctx.BlockTime(), uint64(math.MaxUint64)))

	steps := []struct {
		name string
		keys func(limit int) ([]uint64, error)
		run  func(ctx sdk.Context, id uint64) error
	}{
		{"close auction", heightKeys(ctx, k.AuctionClose, heightRange), func(c sdk.Context, id uint64) error { return k.closeAuction(c, p, id) }},
		{"ack timeout", heightKeys(ctx, k.AckDeadlines, heightRange), func(c sdk.Context, id uint64) error {
			return k.lapseIf(c, p, id, types.TASK_STATUS_ASSIGNED, fmt.Sprintf("not acked within %d blocks", p.AckTimeoutBlocks), p.AbandonSlashPpm, sstypes.SLASH_REASON_ABANDONED_TASK)
		}},
		{"heartbeat lapse", heightKeys(ctx, k.HeartbeatDue, heightRange), func(c sdk.Context, node uint64) error { return k.heartbeatLapsed(c, p, node) }},
		{"run deadline", timeKeys(ctx, k.RunDeadlines, timeRange), func(c sdk.Context, id uint64) error {
			return k.lapseIf(c, p, id, types.TASK_STATUS_RUNNING, "no result by the run deadline", p.AbandonSlashPpm, sstypes.SLASH_REASON_ABANDONED_TASK)
		}},
		{"reveal deadline", heightKeys(ctx, k.RevealDeadlines, heightRange), func(c sdk.Context, id uint64) error {
			return k.lapseIf(c, p, id, types.TASK_STATUS_COMMITTED, "commitment never revealed", p.MissedRevealSlashPpm, sstypes.SLASH_REASON_MISSED_REVEAL)
		}},
		{"draw audit", heightKeys(ctx, k.AuditDraws, heightRange), func(c sdk.Context, id uint64) error { return k.drawAudit(c, p, id) }},
		{"settle", heightKeys(ctx, k.SettleQueue, heightRange), func(c sdk.Context, id uint64) error { return k.settle(c, p, id) }},
		{"job deadline", timeKeys(ctx, k.JobDeadlines, timeRange), func(c sdk.Context, id uint64) error { return k.expireJob(c, p, id) }},
		{"prune", heightKeys(ctx, k.PruneQueue, heightRange), func(c sdk.Context, id uint64) error { return k.prune(c, p, id) }},
	}
	n, err := k.expireUnits(ctx, p, budget)
	if err != nil {
		return err
	}
	budget -= n
	for _, s := range steps {
		if budget <= 0 {
			break
		}
		ids, err := s.keys(budget)
		if err != nil {
			return err
		}
		budget -= len(ids)
		for _, id := range ids {
			_ = blockhook.Apply(ctx, "market: "+s.name, func(c sdk.Context) error { return s.run(c, id) })
		}
	}
	return k.assignPending(ctx, p)
}

// heightKeys returns a function that pops up to limit due (height, id) entries.
func heightKeys(ctx sdk.Context, ks collections.KeySet[collections.Pair[int64, uint64]], rng collections.Ranger[collections.Pair[int64, uint64]]) func(int) ([]uint64, error) {
	return func(limit int) ([]uint64, error) {
		keys, err := collkeys.CollectKeys(ctx, ks, rng, limit)
		if err != nil {
			return nil, err
		}
		ids := make([]uint64, len(keys))
		for i, key := range keys {
			if err := ks.Remove(ctx, key); err != nil {
				return nil, err
			}
			ids[i] = key.K2()
		}
		return ids, nil
	}
}

// timeKeys is heightKeys for (time, id) queues.
func timeKeys(ctx sdk.Context, ks collections.KeySet[collections.Pair[time.Time, uint64]], rng collections.Ranger[collections.Pair[time.Time, uint64]]) func(int) ([]uint64, error) {
	return func(limit int) ([]uint64, error) {
		keys, err := collkeys.CollectKeys(ctx, ks, rng, limit)
		if err != nil {
			return nil, err
		}
		ids := make([]uint64, len(keys))
		for i, key := range keys {
			if err := ks.Remove(ctx, key); err != nil {
				return nil, err
			}
			ids[i] = key.K2()
		}
		return ids, nil
	}
}

// lapseIf takes a task that is still in status want away from its node: a small slash
// (compensating the owner), a reputation event, and back to the queue with its last
// checkpoint, or FAILED after max_reassignments. A won auction task never acked forfeits
// the bid's deposit to the owner.
func (k Keeper) lapseIf(ctx sdk.Context, p types.Params, id uint64, want types.TaskStatus, reason string, slashPPM uint32, slashReason sstypes.SlashReason) error {
	t, err := k.Tasks.Get(ctx, id)
	if err != nil {
		return err
	}
	if t.Status != want {
		return nil // moved on since the entry was queued
	}
	return k.lapse(ctx, p, t, reason, slashPPM, slashReason)
}

func (k Keeper) lapse(ctx sdk.Context, p types.Params, t types.Task, reason string, slashPPM uint32, slashReason sstypes.SlashReason) error {
	job, err := k.Jobs.Get(ctx, t.JobId)
	if err != nil {
		return err
	}
	// The queue entry that brought us here was popped; detach the rest.
	exposure := t.Exposure
	if err := k.detach(ctx, &job, &t); err != nil {
		return err
	}
	provider := k.mustAcc(t.Provider)
	if slashReason == sstypes.SLASH_REASON_MISSED_REVEAL {
		// withholding a committed result must never pay better than revealing a wrong one
		if slashPPM, err = k.penaltyPPM(ctx, provider, slashPPM, exposure); err != nil {
			return err
		}
	}
	ev := sstypes.SlashEvidence{NodeId: t.NodeId, JobId: t.JobId, TaskId: t.Id}
	if _, err := k.collateral.Slash(ctx, provider, slashPPM, slashReason,
		sstypes.Beneficiaries{Compensate: k.mustAcc(job.Owner)}, ev); err != nil {
		return err
	}
	if t.BidNode != 0 && t.Status == types.TASK_STATUS_ASSIGNED {
		if err := k.settleBidDeposit(ctx, &job, t.BidNode, true); err != nil {
			return err
		}
	}
	k.hooks().AfterTaskLapsed(ctx, t.NodeId, reason)
	from := t.NodeId
	t.ExcludedNodes = append(t.ExcludedNodes, from)
	t.Reassignments++
	t.NodeId, t.Provider, t.Price, t.Exposure, t.BidNode = 0, "", sdkmath.ZeroInt(), sdkmath.ZeroInt(), 0
	t.Commitment, t.CommitHeight, t.RevealDeadlineHeight, t.AckDeadlineHeight = nil, 0, 0, 0
	if t.Reassignments > p.MaxReassignments {
		if err := k.finishTask(ctx, &job, &t, p, types.TASK_STATUS_FAILED, fmt.Sprintf("%s; failed after %d reassignments", reason, p.MaxReassignments)); err != nil {
			return err
		}
		if err := k.memberGone(ctx, p, &job, t); err != nil {
			return err
		}
		return k.Jobs.Set(ctx, job.Id, job)
	}
	t.Status = types.TASK_STATUS_PENDING
	if job.Status != types.JOB_STATUS_CANCELLED {
		if err := k.AssignQueue.Set(ctx, queueKey(job, t.Id)); err != nil {
			return err
		}
	}
	if err := k.Tasks.Set(ctx, t.Id, t); err != nil {
		return err
	}
	k.addHistory(ctx, &job, p, "TaskReassigned", t.Id, from, reason)
	if err := k.Jobs.Set(ctx, job.Id, job); err != nil {
		return err
	}
	return ctx.EventManager().EmitTypedEvent(&types.EventTaskReassigned{
		TaskId: t.Id, JobId: t.JobId, FromNode: from, Reason: reason, Reassignments: t.Reassignments,
	})
}

// heartbeatLapsed takes every running task away from a node whose heartbeat lapsed.
func (k Keeper) heartbeatLapsed(ctx sdk.Context, p types.Params, node uint64) error {
	due, err := k.Heartbeats.Get(ctx, node)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return nil // no record
	} else if err != nil {
		return err
	}
	if due > ctx.BlockHeight() {
		return nil // beat since the entry was queued
	}
	if err := k.Heartbeats.Remove(ctx, node); err != nil {
		return err
	}
	it, err := k.Tasks.Indexes.ByNode.MatchExact(ctx, node)
	if err != nil {
		return err
	}
	var running []types.Task
	for ; it.Valid(); it.Next() {
		id, err := it.PrimaryKey()
		if err != nil {
			_ = it.Close()
			return err
		}
		t, err := k.Tasks.Get(ctx, id)
		if err != nil {
			_ = it.Close()
			return err
		}
		if t.Status == types.TASK_STATUS_RUNNING {
			running = append(running, t)
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	for _, t := range running {
		if err := k.lapse(ctx, p, t, fmt.Sprintf("heartbeat lapsed for %d blocks", p.HeartbeatTimeoutBlocks), p.AbandonSlashPpm, sstypes.SLASH_REASON_ABANDONED_TASK); err != nil {
			return err
		}
	}
	return nil
}

// settle pays a revealed task at the end of its challenge window: price + tip from the
// escrow (minus the take), the rest of its reservation refunded, exposure released, the
// verified work recorded for x/dps.
func (k Keeper) settle(ctx sdk.Context, p types.Params, id uint64) error {
	t, err := k.Tasks.Get(ctx, id)
	if err != nil {
		return err
	}
	if t.Status != types.TASK_STATUS_VERIFIED {
		return nil
	}
	job, err := k.Jobs.Get(ctx, t.JobId)
	if err != nil {
		return err
	}
	if err := k.detach(ctx, &job, &t); err != nil {
		return err
	}
	// A primary is paid its price and tip from its reservation; the other roles their
	// price from the verification budget.
	gross := t.Price
	if t.Role == types.TASK_ROLE_PRIMARY {
		gross = gross.Add(job.Spec.PriorityTip.Amount)
	}
	if err := k.pay(ctx, &job, &t, p, gross); err != nil {
		return err
	}
	if err := k.recordWork(ctx, job, t, gross); err != nil {
		return err
	}
	provider := k.mustAcc(t.Provider)
	n, err := k.ProviderTasks.Get(ctx, provider)
	if err != nil && !errorsmod.IsOf(err, collections.ErrNotFound) {
		return err
	}
	if err := k.ProviderTasks.Set(ctx, provider, n+1); err != nil {
		return err
	}
	k.hooks().AfterTaskSettled(ctx, t.NodeId, !t.CommitTime.After(job.Spec.Deadline))
	if err := k.finishTask(ctx, &job, &t, p, types.TASK_STATUS_SETTLED, ""); err != nil {
		return err
	}
	return k.Jobs.Set(ctx, job.Id, job)
}

// recordWork adds a settled task to its provider's verified work of the current reward
// epoch: C = the node's GFL index corrected for the job's workload class, times the task's
// run time, times its share of the node's GPUs (GFLOP-seconds); and the fees paid by
// another account. Self-paid work never counts: not when the owner is the provider, nor
// when the provider funded the owner (funding.go).
func (k Keeper) recordWork(ctx sdk.Context, job types.Job, t types.Task, gross sdkmath.Int) error {
	if k.wiring.workEpoch == nil {
		return nil
	}
	if ok, err := k.earnsWork(ctx, job.Owner, k.mustAcc(t.Provider)); err != nil || !ok {
		return err
	}
	epoch, err := k.wiring.workEpoch.CurrentWorkEpoch(ctx)
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
	gpus := uint64(max(len(node.Gpus), 1))
	c := sdkmath.NewIntFromUint64(corrected).MulRaw(int64(run / time.Second)).
		Mul(sdkmath.NewIntFromUint64(uint64(job.Spec.Requirements.GPUs()))).Quo(sdkmath.NewIntFromUint64(gpus))
	key := collections.Join3(epoch, k.mustAcc(t.Provider), int32(job.Spec.Workload))
	rec, err := k.Work.Get(ctx, key)
	if err != nil {
		rec = types.WorkRecord{GflopSeconds: sdkmath.ZeroInt(), Fees: sdkmath.ZeroInt()}
	}
	rec.GflopSeconds = rec.GflopSeconds.Add(c)
	rec.Fees = rec.Fees.Add(gross)
	rec.Tasks++
	return k.Work.Set(ctx, key, rec)
}

// expireJob expires the tasks of a job that never started before its deadline (pending and
// assigned but not acked) and refunds them; running ones lapse at their run deadline.
func (k Keeper) expireJob(ctx sdk.Context, p types.Params, id uint64) error {
	job, err := k.Jobs.Get(ctx, id)
	if err != nil {
		return err
	}
	tasks, err := k.jobTasks(ctx, id)
	if err != nil {
		return err
	}
	for _, t := range tasks {
		if t.Status != types.TASK_STATUS_PENDING && t.Status != types.TASK_STATUS_ASSIGNED {
			continue
		}
		if err := k.detach(ctx, &job, &t); err != nil {
			return err
		}
		if err := k.finishTask(ctx, &job, &t, p, types.TASK_STATUS_EXPIRED, "the job's deadline passed before it started"); err != nil {
			return err
		}
		if err := k.memberGone(ctx, p, &job, t); err != nil {
			return err
		}
	}
	return k.Jobs.Set(ctx, id, job)
}

// prune deletes a finished job after job_retention_blocks: its tasks (at most
// max_timeouts_per_block per block; the job is re-queued until they are gone), bids and
// history.
func (k Keeper) prune(ctx sdk.Context, p types.Params, id uint64) error {
	job, err := k.Jobs.Get(ctx, id)
	if err != nil {
		return err
	}
	it, err := k.Tasks.Indexes.ByJob.MatchExact(ctx, id)
	if err != nil {
		return err
	}
	var ids []uint64
	for ; it.Valid() && len(ids) < int(p.MaxTimeoutsPerBlock); it.Next() {
		tid, err := it.PrimaryKey()
		if err != nil {
			_ = it.Close()
			return err
		}
		ids = append(ids, tid)
	}
	if err := it.Close(); err != nil {
		return err
	}
	for _, tid := range ids {
		if err := k.Tasks.Remove(ctx, tid); err != nil {
			return err
		}
	}
	if len(ids) == int(p.MaxTimeoutsPerBlock) {
		return k.PruneQueue.Set(ctx, collections.Join(ctx.BlockHeight()+1, id))
	}
	if err := k.Bids.Clear(ctx, collections.NewPrefixedPairRange[uint64, uint64](id)); err != nil {
		return err
	}
	if err := k.History.Clear(ctx, collections.NewPrefixedPairRange[uint64, uint32](id)); err != nil {
		return err
	}
	return k.Jobs.Remove(ctx, job.Id)
}
