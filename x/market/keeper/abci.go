package keeper

import (
	"fmt"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/collkeys"
	"github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// lapseIf takes a task that is still in status want away from its node: a small slash
// (burned; a missed reveal's compensates the owner), a reputation event, and back to the queue with its last
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
	job, err := k.loadJob(ctx, t.JobId)
	if err != nil {
		return err
	}
	// withholding a committed result must never pay better than revealing a wrong one: a
	// missed reveal's slash covers the task's exposure as a wrong result's does. It is
	// burned, as an abandoned task's is, not paid to the owner: others can make a provider
	// miss a reveal (a proposer censoring it, an owner flooding its node), and the task runs
	// again at no cost to the owner, so a compensation would be a prize for arranging it;
	// a job can make its provider abandon it (a command that takes the machine down), and
	// no owner may profit from a job that fails (x/market/README.md, "Failure is a result").
	//
	// An abandoned task's slash is at most failure_penalty_multiple x the task's value
	// (abandoned): a job can take its machine down, so a share of the whole bond let a
	// client burn a large provider's collateral for the price of one task.
	ev := sstypes.SlashEvidence{NodeId: t.NodeId, JobId: t.JobId, TaskId: t.Id}
	var took sdkmath.Int
	if slashReason == sstypes.SLASH_REASON_MISSED_REVEAL {
		took, err = k.slashed(ctx, t.Provider, slashPPM, t.Exposure, slashReason, "", nil, nil, ev)
	} else {
		took, err = k.abandoned(ctx, p, t.Provider, slashPPM, taskValue(job, t.Role, t.Price), sdkmath.Int{}, slashReason, ev)
	}
	if err != nil {
		return err
	}
	addRerunSlashed(&t, t.Provider, took)
	if t.BidNode != 0 && t.Status == types.TASK_STATUS_ASSIGNED {
		if err := k.settleBidDeposit(ctx, &job, t.BidNode, true); err != nil {
			return err
		}
	}
	if err := k.hooks().AfterTaskLapsed(ctx, t.NodeId, reason); err != nil {
		return err
	}
	from := t.NodeId
	unassign := func(t *types.Task) {
		t.ExcludedNodes = append(t.ExcludedNodes, from)
		t.Reassignments++
		t.NodeId, t.Provider, t.Price, t.Exposure, t.BidNode = 0, "", sdkmath.ZeroInt(), sdkmath.ZeroInt(), 0
		t.Commitment, t.CommitHeight, t.RevealDeadlineHeight, t.AckDeadlineHeight = nil, 0, 0, 0
		t.Progress, t.ProgressHeight = "", 0
	}
	end, status := "", types.TASK_STATUS_FAILED
	switch {
	case job.Status == types.JOB_STATUS_CANCELLED && t.Role == types.TASK_ROLE_PRIMARY:
		// nobody places a cancelled job's work again: its reservation returns now
		end, status = reason+"; the job was cancelled", types.TASK_STATUS_CANCELLED
	case t.Reassignments >= p.MaxReassignments:
		end = fmt.Sprintf("%s; failed after %d reassignments", reason, p.MaxReassignments)
	}
	if end != "" {
		if err := k.finishTask(ctx, p, &job, &t, status, 0, end, unassign); err != nil {
			return err
		}
		return k.afterMemberLeft(ctx, p, &job, t)
	}
	if err := k.transition(ctx, p, &job, &t, types.TASK_STATUS_PENDING, step{history: "TaskReassigned", node: from, detail: reason}, unassign); err != nil {
		return err
	}
	return ctx.EventManager().EmitTypedEvent(&types.EventTaskReassigned{
		TaskId: t.Id, JobId: t.JobId, FromNode: from, Reason: reason, Reassignments: t.Reassignments,
	})
}

// heartbeatLapsed takes the running tasks away from a node whose heartbeat lapsed, at
// most lapseChunk a part (done: none left); a node that beat since is left alone.
func (k Keeper) heartbeatLapsed(ctx sdk.Context, p types.Params, node uint64) (bool, error) {
	due, err := k.Heartbeats.Get(ctx, node)
	switch {
	case err == nil && due > ctx.BlockHeight():
		return true, nil // beat since the entry was queued
	case err == nil:
		if err := k.Heartbeats.Remove(ctx, node); err != nil {
			return false, err
		}
	case !errorsmod.IsOf(err, collections.ErrNotFound):
		return false, err
	}
	// no record: lapsed (now or in an earlier part); its running tasks go, a part at a time
	keys, err := collkeys.CollectKeys(ctx, k.NodeRunning, collections.NewPrefixedPairRange[uint64, uint64](node), lapseChunk+1)
	if err != nil {
		return false, err
	}
	for i, key := range keys {
		if i == lapseChunk {
			return false, nil
		}
		t, err := k.Tasks.Get(ctx, key.K2())
		if err != nil {
			return false, err
		}
		if err := k.lapse(ctx, p, t, fmt.Sprintf("heartbeat lapsed for %d blocks", p.HeartbeatTimeoutBlocks), p.AbandonSlashPpm, sstypes.SLASH_REASON_ABANDONED_TASK); err != nil {
			return false, err
		}
	}
	return true, nil
}

// settlementGross is what a settled task is paid: a primary the part of its price for the
// time it ran (types.TimePrice) and its tip from its reservation, the other roles their
// price from the verification budget.
func settlementGross(p types.Params, job types.Job, t types.Task) sdkmath.Int {
	if t.Role == types.TASK_ROLE_PRIMARY {
		return types.TimePrice(t.Price, t.CommitTime.Sub(t.StartedTime), job.Spec.MaxDuration, p.BillingGranularity).Add(job.Spec.PriorityTip.Amount)
	}
	return t.Price
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
	job, err := k.loadJob(ctx, t.JobId)
	if err != nil {
		return err
	}
	gross := settlementGross(p, job, t)
	if err := k.pay(ctx, &job, &t, p, gross); err != nil {
		return err
	}
	if err := k.recordWork(ctx, job, t, gross); err != nil {
		return err
	}
	// wash work (a payer the provider funded) is paid but earns no record: neither a
	// step through the audit warm-up nor reputation
	counts, err := k.counts(ctx, job, t)
	if err != nil {
		return err
	}
	if counts {
		provider, err := k.acc(t.Provider)
		if err != nil {
			return err
		}
		n, err := k.ProviderTasks.Get(ctx, provider)
		if err != nil && !errorsmod.IsOf(err, collections.ErrNotFound) {
			return err
		}
		if err := k.ProviderTasks.Set(ctx, provider, n+1); err != nil {
			return err
		}
		if err := k.hooks().AfterTaskSettled(ctx, t.NodeId, !t.CommitTime.After(taskDeadline(job, t))); err != nil {
			return err
		}
	}
	return k.finishTask(ctx, p, &job, &t, types.TASK_STATUS_SETTLED, t.NodeId, "")
}

// expireJobPart expires, at the job's deadline, the tasks that never started (pending,
// and assigned but not acked) and refunds them, sweepChunk tasks a part from a cursor
// (done: the sweep is over); running ones lapse at their run deadline.
func (k Keeper) expireJobPart(ctx sdk.Context, p types.Params, id uint64) (bool, error) {
	job, err := k.loadJob(ctx, id)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return true, nil
	} else if err != nil {
		return false, err
	}
	if job.FinishedHeight != 0 {
		return true, k.SweepCursors.Remove(ctx, collections.Join(sweepExpire, id))
	}
	return k.sweep(ctx, &job, sweepExpire, sweepChunk, func(t types.Task) error {
		if t.Status != types.TASK_STATUS_PENDING && t.Status != types.TASK_STATUS_ASSIGNED {
			return nil
		}
		if !t.Deadline.IsZero() {
			return nil // a verification task: its own deadline ends it, not the job's
		}
		if err := k.finishTask(ctx, p, &job, &t, types.TASK_STATUS_EXPIRED, t.NodeId, "the job's deadline passed before it started"); err != nil {
			return err
		}
		return k.afterMemberLeft(ctx, p, &job, t)
	})
}

// sweep applies fn to up to limit of a job's tasks after its sweep cursor of the given
// kind, in id order, and moves the cursor; done when it saw the last task (the cursor is
// then forgotten).
func (k Keeper) sweep(ctx sdk.Context, job *types.Job, kind uint32, limit int, fn func(t types.Task) error) (bool, error) {
	key := collections.Join(kind, job.Id)
	after, err := k.SweepCursors.Get(ctx, key)
	if err != nil && !errorsmod.IsOf(err, collections.ErrNotFound) {
		return false, err
	}
	// the ids first (no write under an open iterator), each task read just before fn: fn
	// on one task may change a later one (a sibling, a committee member)
	ids, err := k.liveJobTaskIDs(ctx, *job, after, limit+1)
	if err != nil {
		return false, err
	}
	for i, id := range ids {
		if i == limit {
			return false, k.SweepCursors.Set(ctx, key, ids[i-1])
		}
		t, err := k.Tasks.Get(ctx, id)
		if err != nil {
			return false, err
		}
		if err := fn(t); err != nil {
			return false, err
		}
	}
	return true, k.SweepCursors.Remove(ctx, key)
}

// prunePart deletes a finished job after job_retention_blocks: its tasks and their
// disputes, pruneChunk tasks a part (done: the job is gone), then its bids and history.
func (k Keeper) prunePart(ctx sdk.Context, id uint64) (bool, error) {
	job, err := k.loadJob(ctx, id)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return true, nil
	} else if err != nil {
		return false, err
	}
	var tasks []types.Task
	if err := k.walkJobTasks(ctx, job, 0, false, func(t types.Task) (bool, error) {
		tasks = append(tasks, t)
		return len(tasks) == pruneChunk, nil
	}); err != nil {
		return false, err
	}
	for _, t := range tasks {
		if t.DisputeId != 0 {
			if err := k.Disputes.Remove(ctx, t.DisputeId); err != nil {
				return false, err
			}
		}
		if err := k.Tasks.Remove(ctx, t.Id); err != nil {
			return false, err
		}
	}
	if len(tasks) == pruneChunk {
		return false, nil
	}
	if err := k.Bids.Clear(ctx, collections.NewPrefixedPairRange[uint64, uint64](id)); err != nil {
		return false, err
	}
	if err := k.History.Clear(ctx, collections.NewPrefixedPairRange[uint64, uint32](id)); err != nil {
		return false, err
	}
	if err := k.removeHistoryAdded(ctx, job); err != nil {
		return false, err
	}
	if err := k.JobSpecs.Remove(ctx, id); err != nil {
		return false, err
	}
	if job.ProgramApart {
		if err := k.JobPrograms.Remove(ctx, id); err != nil {
			return false, err
		}
	}
	if err := k.moveJobCount(ctx, job.Status, types.JOB_STATUS_UNSPECIFIED); err != nil {
		return false, err
	}
	return true, k.Jobs.Remove(ctx, id)
}
