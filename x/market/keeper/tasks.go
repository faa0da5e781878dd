package keeper

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/validate"
	"github.com/flopsnet/flops/x/market/types"
)

// A task replica holds, in each status, exactly these things; detach releases them and
// attach takes them, so that every transition keeps the queues, the node slots and the
// providers' exposure exact:
//
//	PENDING    an AssignQueue entry, or an AssignRetryAt entry while parked after no node
//	           could take it (jobs in the scheduler's hands)
//	ASSIGNED   an AckDeadlines entry, the node's GPUs, one in-flight task, exposure = price
//	RUNNING    a RunDeadlines entry, the node's GPUs, one in-flight task, exposure
//	COMMITTED  a RevealDeadlines entry once its group's reveals are open, one in-flight
//	           task, exposure (GPUs are free again)
//	REVEALED   exposure (waiting for its group or its dispute to be decided)
//	VERIFIED   a SettleQueue entry (the end of its challenge window), exposure
//	final      nothing
//
// Escrow: each task reserves part of the job's escrow: a primary replica its max price
// plus tip, an escalation, audit or committee task its share of the verification budget.
// When the task becomes final, what its provider was not paid returns: a primary's to the
// owner, the others' to the verification budget (refunded with the job's end).

// holdsNode: the task occupies its node's GPUs.
func holdsNode(s types.TaskStatus) bool {
	return s == types.TASK_STATUS_ASSIGNED || s == types.TASK_STATUS_RUNNING
}

// inFlight: the task's work is not revealed yet; its node may not be deactivated.
func inFlight(s types.TaskStatus) bool {
	return s == types.TASK_STATUS_ASSIGNED || s == types.TASK_STATUS_RUNNING || s == types.TASK_STATUS_COMMITTED
}

// holdsExposure: the provider's collateral backs the task until it is paid or taken away.
func holdsExposure(s types.TaskStatus) bool {
	switch s {
	case types.TASK_STATUS_ASSIGNED, types.TASK_STATUS_RUNNING, types.TASK_STATUS_COMMITTED,
		types.TASK_STATUS_REVEALED, types.TASK_STATUS_VERIFIED:
		return true
	}
	return false
}

// isFinal: nothing more happens to the task.
func isFinal(s types.TaskStatus) bool {
	switch s {
	case types.TASK_STATUS_SETTLED, types.TASK_STATUS_FAILED, types.TASK_STATUS_EXPIRED, types.TASK_STATUS_CANCELLED:
		return true
	}
	return false
}

// enqueue adds the queue entry of the task's status.
func (k Keeper) enqueue(ctx context.Context, job types.Job, t types.Task) error {
	switch t.Status {
	case types.TASK_STATUS_PENDING:
		if job.Status == types.JOB_STATUS_ACTIVE {
			return k.AssignQueue.Set(ctx, queueKey(job, t.Id))
		}
	case types.TASK_STATUS_ASSIGNED:
		return k.AckDeadlines.Set(ctx, collections.Join(t.AckDeadlineHeight, t.Id))
	case types.TASK_STATUS_RUNNING:
		return k.RunDeadlines.Set(ctx, collections.Join(t.RunDeadline, t.Id))
	case types.TASK_STATUS_COMMITTED:
		if t.RevealDeadlineHeight != 0 {
			return k.RevealDeadlines.Set(ctx, collections.Join(t.RevealDeadlineHeight, t.Id))
		}
	case types.TASK_STATUS_VERIFIED:
		return k.SettleQueue.Set(ctx, collections.Join(t.SettleHeight, t.Id))
	}
	return nil
}

// dequeue removes the queue entry of the task's status.
func (k Keeper) dequeue(ctx context.Context, job types.Job, t types.Task) error {
	switch t.Status {
	case types.TASK_STATUS_PENDING:
		if err := k.AssignQueue.Remove(ctx, queueKey(job, t.Id)); err != nil {
			return err
		}
		return k.unpark(ctx, t.Id)
	case types.TASK_STATUS_ASSIGNED:
		return k.AckDeadlines.Remove(ctx, collections.Join(t.AckDeadlineHeight, t.Id))
	case types.TASK_STATUS_RUNNING:
		return k.RunDeadlines.Remove(ctx, collections.Join(t.RunDeadline, t.Id))
	case types.TASK_STATUS_COMMITTED:
		return k.RevealDeadlines.Remove(ctx, collections.Join(t.RevealDeadlineHeight, t.Id))
	case types.TASK_STATUS_VERIFIED:
		return k.SettleQueue.Remove(ctx, collections.Join(t.SettleHeight, t.Id))
	}
	return nil
}

// detach releases everything the task holds in its current status. The caller then sets
// a new status (and attaches it) and saves the task.
func (k Keeper) detach(ctx context.Context, job *types.Job, t *types.Task) error {
	if err := k.dequeue(ctx, *job, *t); err != nil {
		return err
	}
	if t.NodeId == 0 {
		return nil
	}
	var dGPUs, dTasks int64
	if holdsNode(t.Status) {
		dGPUs = -int64(job.Spec.Requirements.GPUs())
	}
	if inFlight(t.Status) {
		dTasks = -1
	}
	if err := k.adjustSlot(ctx, t.NodeId, dGPUs, dTasks); err != nil {
		return err
	}
	if holdsExposure(t.Status) && !t.Exposure.IsNil() && t.Exposure.IsPositive() {
		return k.collateral.ReleaseExposure(ctx, k.mustAcc(t.Provider), t.Exposure)
	}
	return nil
}

// adjustSlot changes a node's GPUs in use and in-flight tasks and re-indexes it.
func (k Keeper) adjustSlot(ctx context.Context, nodeID uint64, dGPUs, dTasks int64) error {
	s, err := k.Slots.Get(ctx, nodeID)
	if err != nil {
		return fmt.Errorf("market: slot of node %d: %w", nodeID, err)
	}
	old := s
	used, tasks := int64(s.GpusUsed)+dGPUs, int64(s.Tasks)+dTasks
	if used < 0 || tasks < 0 {
		return fmt.Errorf("market: node %d slot out of step: gpus used %d, tasks %d", nodeID, used, tasks)
	}
	s.GpusUsed, s.Tasks = uint32(used), uint32(tasks)
	return k.setSlot(ctx, &old, s)
}

// setSlot stores a slot and moves its scheduling index entry and class counters (old may
// be nil).
func (k Keeper) setSlot(ctx context.Context, old *types.NodeSlot, s types.NodeSlot) error {
	if old != nil && old.Active {
		if err := k.SchedIndex.Remove(ctx, indexKey(*old)); err != nil {
			return err
		}
		if err := k.countClass(ctx, *old, -1); err != nil {
			return err
		}
	}
	if s.Active {
		if err := k.SchedIndex.Set(ctx, indexKey(s)); err != nil {
			return err
		}
		if err := k.countClass(ctx, s, +1); err != nil {
			return err
		}
	}
	if old == nil {
		if m, err := k.MaxSlot.Get(ctx); err != nil && !errors.Is(err, collections.ErrNotFound) {
			return err
		} else if s.NodeId > m {
			if err := k.MaxSlot.Set(ctx, s.NodeId); err != nil {
				return err
			}
		}
	}
	return k.Slots.Set(ctx, s.NodeId, s)
}

// countClass moves an indexed slot's class counter (idle or loaded) by d.
func (k Keeper) countClass(ctx context.Context, s types.NodeSlot, d int64) error {
	c, err := k.ClassNodes.Get(ctx, s.GpuClass)
	if err != nil && !errors.Is(err, collections.ErrNotFound) {
		return err
	}
	idle, loaded := c.K1(), c.K2()
	if err != nil {
		idle, loaded = 0, 0
	}
	n := &loaded
	if loadPPM(s.GpusUsed, s.Gpus) == 0 {
		n = &idle
	}
	if d < 0 && *n == 0 {
		return fmt.Errorf("market: class %q counter out of step", s.GpuClass)
	}
	*n = uint64(int64(*n) + d)
	if idle == 0 && loaded == 0 {
		return k.ClassNodes.Remove(ctx, s.GpuClass)
	}
	return k.ClassNodes.Set(ctx, s.GpuClass, collections.Join(idle, loaded))
}

func indexKey(s types.NodeSlot) collections.Triple[string, uint32, uint64] {
	return collections.Join3(s.GpuClass, loadPPM(s.GpusUsed, s.Gpus), s.NodeId)
}

// loadPPM is used/total in parts per million (a node without GPUs is full).
func loadPPM(used, total uint32) uint32 {
	if total == 0 {
		return validate.PPMOne
	}
	return uint32(uint64(used) * validate.PPMOne / uint64(total))
}

// pay pays a provider gross udps of the job's escrow for a task: the protocol take
// (take_rate) is split between the x/dps reward pool (take_pool_share) and the fee
// collector, the provider gets the rest. Integer maths, truncated: the provider's share
// is what the take leaves, so nothing is created or lost.
func (k Keeper) pay(ctx context.Context, job *types.Job, t *types.Task, p types.Params, gross sdkmath.Int) error {
	if !gross.IsPositive() {
		return nil
	}
	split := SplitPayment(gross, p.TakeRatePpm, p.TakePoolSharePpm)
	provider := k.mustAcc(t.Provider)
	send := func(amount sdkmath.Int, fn func(sdk.Coins) error) error {
		if !amount.IsPositive() {
			return nil
		}
		return fn(sdk.NewCoins(sdk.NewCoin(p.Denom, amount)))
	}
	if err := send(split.Provider, func(c sdk.Coins) error {
		return k.bankKeeper.SendCoinsFromModuleToAccount(ctx, types.ModuleName, provider, c)
	}); err != nil {
		return err
	}
	if err := send(split.Pool, func(c sdk.Coins) error {
		return k.bankKeeper.SendCoinsFromModuleToModule(ctx, types.ModuleName, k.rewardPool, c)
	}); err != nil {
		return err
	}
	if err := send(split.FeeCollector, func(c sdk.Coins) error {
		return k.bankKeeper.SendCoinsFromModuleToModule(ctx, types.ModuleName, k.feeCollector, c)
	}); err != nil {
		return err
	}
	job.Escrow = job.Escrow.Sub(gross)
	t.Paid = t.Paid.Add(gross)
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventTaskSettled{
		TaskId: t.Id, JobId: t.JobId, Provider: t.Provider, Paid: split.Provider, ToPool: split.Pool, ToFeeCollector: split.FeeCollector,
	})
}

// Payment is how a gross payment is shared out.
type Payment struct {
	Provider, Pool, FeeCollector sdkmath.Int
}

// SplitPayment: take = floor(gross * take_rate), pool = floor(take * pool_share),
// fee collector = take - pool, provider = gross - take.
func SplitPayment(gross sdkmath.Int, takeRatePPM, poolSharePPM uint32) Payment {
	take := gross.MulRaw(int64(takeRatePPM)).QuoRaw(validate.PPMOne)
	pool := take.MulRaw(int64(poolSharePPM)).QuoRaw(validate.PPMOne)
	return Payment{Provider: gross.Sub(take), Pool: pool, FeeCollector: take.Sub(pool)}
}

// refund returns amount of the job's escrow to its owner.
func (k Keeper) refund(ctx context.Context, job *types.Job, amount sdkmath.Int) error {
	if !amount.IsPositive() {
		return nil
	}
	if amount.GT(job.Escrow) {
		return fmt.Errorf("market: job %d refund %s exceeds its escrow %s", job.Id, amount, job.Escrow)
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	if err := k.bankKeeper.SendCoinsFromModuleToAccount(ctx, types.ModuleName, k.mustAcc(job.Owner), sdk.NewCoins(sdk.NewCoin(p.Denom, amount))); err != nil {
		return err
	}
	job.Escrow = job.Escrow.Sub(amount)
	return nil
}

// finishTask puts a detached task in a final status: what the provider was not paid of the
// replica's reservation (max price + tip) returns to the owner, and the job may finish.
func (k Keeper) finishTask(ctx context.Context, job *types.Job, t *types.Task, p types.Params, status types.TaskStatus, reason string) error {
	// The job's counters count its primary replicas; the other roles serve them.
	switch {
	case t.Role != types.TASK_ROLE_PRIMARY:
	case status == types.TASK_STATUS_SETTLED:
		job.TasksSettled++
	default:
		job.TasksFailed++
	}
	if rest := t.Reserved.Sub(t.Paid); rest.IsPositive() {
		if t.Role == types.TASK_ROLE_PRIMARY {
			if err := k.refund(ctx, job, rest); err != nil {
				return err
			}
		} else {
			job.VerificationLeft = job.VerificationLeft.Add(rest)
		}
	}
	t.Status = status
	t.Reason = reason
	if err := k.Tasks.Set(ctx, t.Id, *t); err != nil {
		return err
	}
	k.addHistory(ctx, job, p, "Task"+statusWord(status), t.Id, t.NodeId, reason)
	if err := sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventTaskStatus{
		TaskId: t.Id, JobId: t.JobId, NodeId: t.NodeId, Status: status, Reason: reason,
	}); err != nil {
		return err
	}
	return k.maybeFinishJob(ctx, job, p)
}

// memberGone re-examines a task's verification group after the task became final outside
// a decision (failed after its reassignments, expired, cancelled): the others may now reveal
// or be decided.
func (k Keeper) memberGone(ctx context.Context, p types.Params, job *types.Job, t types.Task) error {
	if !isCompared(t.Role) && t.Role != types.TASK_ROLE_COMMITTEE {
		return nil
	}
	all, err := k.shardTasks(ctx, job.Id, t.Index)
	if err != nil {
		return err
	}
	for _, m := range all {
		if !isFinal(m.Status) && (m.Role == t.Role || (isCompared(m.Role) && isCompared(t.Role))) {
			return k.afterGroupChange(ctx, p, job, m)
		}
	}
	return nil
}

// maybeFinishJob ends a job whose tasks are all final: the rest of its escrow (unspent
// verification budget) returns to the owner and it is scheduled for pruning.
func (k Keeper) maybeFinishJob(ctx context.Context, job *types.Job, p types.Params) error {
	if job.FinishedHeight != 0 || uint64(job.TasksSettled)+uint64(job.TasksFailed) < job.Spec.TotalTasks() {
		return nil
	}
	if open, err := k.openTasks(ctx, job.Id); err != nil || open > 0 {
		return err // escalations, audits or committees still running
	}
	switch {
	case job.Status == types.JOB_STATUS_CANCELLED:
	case job.TasksFailed == 0:
		job.Status = types.JOB_STATUS_COMPLETED
	default:
		job.Status = types.JOB_STATUS_FAILED
	}
	refunded := job.Escrow
	if err := k.refund(ctx, job, job.Escrow); err != nil {
		return err
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	job.FinishedHeight = sdkCtx.BlockHeight()
	if err := k.JobDeadlines.Remove(ctx, collections.Join(job.Spec.Deadline, job.Id)); err != nil {
		return err
	}
	if err := k.PruneQueue.Set(ctx, collections.Join(job.FinishedHeight+int64(p.JobRetentionBlocks), job.Id)); err != nil {
		return err
	}
	k.addHistory(ctx, job, p, "Job"+strings.TrimPrefix(job.Status.String(), "JOB_STATUS_"), 0, 0, fmt.Sprintf("%d settled, %d failed; %s%s refunded", job.TasksSettled, job.TasksFailed, refunded, p.Denom))
	return sdkCtx.EventManager().EmitTypedEvent(&types.EventJobFinished{JobId: job.Id, Status: job.Status, Refunded: refunded})
}

func statusWord(s types.TaskStatus) string {
	w := strings.ToLower(strings.TrimPrefix(s.String(), "TASK_STATUS_"))
	return strings.ToUpper(w[:1]) + w[1:]
}

// addHistory appends to the job's stored history, at most max_history_per_job entries
// (every step also has its typed event).
func (k Keeper) addHistory(ctx context.Context, job *types.Job, p types.Params, event string, taskID, nodeID uint64, detail string) {
	if job.HistoryLen >= p.MaxHistoryPerJob {
		return
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	e := types.HistoryEntry{Height: sdkCtx.BlockHeight(), Time: sdkCtx.BlockTime(), Event: event, TaskId: taskID, NodeId: nodeID, Detail: detail}
	if err := k.History.Set(ctx, collections.Join(job.Id, job.HistoryLen), e); err == nil {
		job.HistoryLen++
	}
}

// openTasks counts a job's tasks not yet final.
func (k Keeper) openTasks(ctx context.Context, jobID uint64) (int, error) {
	tasks, err := k.jobTasks(ctx, jobID)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range tasks {
		if !isFinal(t.Status) {
			n++
		}
	}
	return n, nil
}
