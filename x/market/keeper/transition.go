package keeper

import (
	"context"
	"fmt"
	"slices"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"
	"github.com/cosmos/gogoproto/proto"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/market/types"
)

// The task lifecycle core. Every change of a task's status goes through transition, which
// releases what the old status holds, applies the new status's fields, takes what the new
// status holds, and saves the task and its job. A task replica holds, in each status,
// exactly these things, so that the queues, the node slots and the providers' exposure
// stay exact whatever path moved it:
//
//	status     due-work entry                                   node GPUs  in flight  exposure
//	PENDING    Waiting (its group in AssignQueue or parked; the    -          -          -
//	           group's record alone for a group of one), or
//	           AssignRetryAt + AssignRetries while parked alone;
//	           only when the job is ACTIVE, or the task serves
//	           verification of a CANCELLED job
//	ASSIGNED   AckDeadlines (ack deadline height)                  yes        yes        yes
//	RUNNING    RunDeadlines (run deadline time) and NodeRunning    yes        yes        yes
//	COMMITTED  AuditDraws while its audit is not drawn, then       -          yes        yes
//	           RevealDeadlines once its group's reveals are open
//	REVEALED   -                                                   -          -          yes
//	VERIFIED   SettleQueue (the end of its challenge window)       -          -          yes
//	final      -                                                   -          -          -
//
// The moves (canMove): PENDING -> ASSIGNED (scheduler, auction); ASSIGNED -> RUNNING (ack);
// RUNNING -> COMMITTED (commit); COMMITTED -> REVEALED (reveal); REVEALED -> VERIFIED
// (decided right); VERIFIED -> REVEALED (challenged: waits for its dispute); VERIFIED ->
// SETTLED (paid); ASSIGNED, RUNNING, COMMITTED -> PENDING (lapsed, reassigned); to FAILED
// from ASSIGNED to VERIFIED's predecessors (lapsed too often, wrong result, a tie) and
// from VERIFIED (its settlement failed five times and its provider cannot be paid); to
// EXPIRED from PENDING and ASSIGNED (the job's deadline); to CANCELLED from PENDING,
// ASSIGNED, RUNNING (the owner cancelled) and COMMITTED (a cancelled job's lapse); PENDING
// -> FAILED (a replica whose failure report another replica's report confirmed, failure.go);
// RUNNING -> PENDING also when its failure is reported (it runs again to confirm it). A move to the same
// status re-keys the task's entries after a change of its fields (reveals opened, audit
// drawn, dispute opened, the job's status changed).
//
// The core never calls up into the scheduler or verification: a caller that finishes a
// member of a verification group tells its group (afterMemberLeft, verification.go).
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

// awaitsAuditDraw: a committed single-replica EXACT primary whose audit is drawn from the
// hash of the block after its commitment; its reveal waits for the draw.
func awaitsAuditDraw(job types.Job, t types.Task) bool {
	return t.Status == types.TASK_STATUS_COMMITTED && t.Role == types.TASK_ROLE_PRIMARY && !t.Audited &&
		job.Spec.Verification == types.VERIFICATION_CLASS_EXACT && job.Spec.Replicas == 1
}

// queued: a pending task the scheduler may take. A BIDDING job's primaries wait for the
// auction; a CANCELLED job's primaries are never placed, but the verification of its
// finished work (audits, escalations, committees) still runs.
func queued(job types.Job, t types.Task) bool {
	if t.Status != types.TASK_STATUS_PENDING {
		return false
	}
	return job.Status == types.JOB_STATUS_ACTIVE || (job.Status == types.JOB_STATUS_CANCELLED && t.Role != types.TASK_ROLE_PRIMARY)
}

// canMove is the table of allowed moves above.
func canMove(from, to types.TaskStatus) bool {
	switch from {
	case types.TASK_STATUS_PENDING:
		return to == types.TASK_STATUS_PENDING || to == types.TASK_STATUS_ASSIGNED ||
			to == types.TASK_STATUS_EXPIRED || to == types.TASK_STATUS_CANCELLED || to == types.TASK_STATUS_FAILED
	case types.TASK_STATUS_ASSIGNED:
		return to == types.TASK_STATUS_RUNNING || to == types.TASK_STATUS_PENDING || to == types.TASK_STATUS_FAILED ||
			to == types.TASK_STATUS_EXPIRED || to == types.TASK_STATUS_CANCELLED
	case types.TASK_STATUS_RUNNING:
		return to == types.TASK_STATUS_COMMITTED || to == types.TASK_STATUS_PENDING || to == types.TASK_STATUS_FAILED ||
			to == types.TASK_STATUS_CANCELLED
	case types.TASK_STATUS_COMMITTED:
		return to == types.TASK_STATUS_COMMITTED || to == types.TASK_STATUS_REVEALED || to == types.TASK_STATUS_PENDING ||
			to == types.TASK_STATUS_FAILED || to == types.TASK_STATUS_CANCELLED
	case types.TASK_STATUS_REVEALED:
		return to == types.TASK_STATUS_REVEALED || to == types.TASK_STATUS_VERIFIED || to == types.TASK_STATUS_FAILED
	case types.TASK_STATUS_VERIFIED:
		return to == types.TASK_STATUS_REVEALED || to == types.TASK_STATUS_SETTLED || to == types.TASK_STATUS_FAILED
	}
	return false
}

// step is what a transition records besides the task: the job history entry (none when
// history is empty) and a typed event emitted once the task is saved, before the job may
// finish (so that a task's last event precedes its job's).
type step struct {
	history string
	node    uint64
	detail  string
	event   proto.Message
	// slot, when set, is the slot of the node the task moves to as stored now (read by the
	// caller in this unit): the move of the node's holdings starts from it rather than
	// reading it again
	slot *types.NodeSlot
	// jobAsStored: the job passed is its record as stored (the caller changed nothing of
	// it): when the transition changes nothing either, the record is neither read nor
	// written again
	jobAsStored bool
}

// transition moves t to status to (t as stored: its caller changes the task's fields in
// set, not before): it releases the due-work entry of t's current status,
// applies set (the new status's fields; nil for none), moves the node usage and the
// exposure by the difference between what the two statuses hold, adds the new due-work
// entry, saves the task, records the step, lets the job finish when the task is final,
// and saves the job. t and job are updated in place.
func (k Keeper) transition(ctx context.Context, p types.Params, job *types.Job, t *types.Task, to types.TaskStatus, s step, set func(*types.Task)) error {
	from := *t
	var stored types.Job
	if s.jobAsStored {
		stored = *job
	}
	if !canMove(from.Status, to) {
		return fmt.Errorf("market: task %d: %s -> %s is not a task transition", t.Id, from.Status, to)
	}
	if err := k.releaseEntry(ctx, *job, from); err != nil {
		return err
	}
	if set != nil {
		set(t)
	}
	if to == types.TASK_STATUS_PENDING && from.Status != types.TASK_STATUS_PENDING {
		t.PendingHeight = sdk.UnwrapSDKContext(ctx).BlockHeight()
	}
	t.Status = to
	if err := k.moveHoldings(ctx, *job, from, *t, s.slot); err != nil {
		return err
	}
	if err := k.attachEntry(ctx, *job, *t); err != nil {
		return err
	}
	if err := k.setTask(ctx, from, *t); err != nil {
		return err
	}
	if s.history != "" {
		if err := k.addHistory(ctx, *job, p, s.history, t.Id, s.node, s.detail); err != nil {
			return err
		}
	}
	if s.event != nil {
		if err := sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(s.event); err != nil {
			return err
		}
	}
	if isFinal(to) && !isFinal(from.Status) {
		if job.OpenTasks == 0 {
			return fmt.Errorf("market: job %d open task count out of step", job.Id)
		}
		job.OpenTasks--
		if err := k.maybeFinishJob(ctx, job, p); err != nil {
			return err
		}
	}
	if s.jobAsStored && sameRecord(stored, *job) {
		return nil
	}
	return k.saveJob(ctx, *job)
}

// insertTask stores a new PENDING task of the job with its due-work entry and counts it
// open (the caller saves the job).
func (k Keeper) insertTask(ctx context.Context, job *types.Job, t types.Task) error {
	if t.Status != types.TASK_STATUS_PENDING {
		return fmt.Errorf("market: new task %d is %s, not pending", t.Id, t.Status)
	}
	if err := k.storeNewTask(ctx, t); err != nil {
		return err
	}
	job.OpenTasks++
	return k.attachEntry(ctx, *job, t)
}

// insertPrimaries stores a new job's PENDING primaries as insertTask does, with their
// group's record and queue entry written once rather than once per task.
func (k Keeper) insertPrimaries(ctx context.Context, job *types.Job, tasks []types.Task) error {
	var waiting []types.Task
	for _, t := range tasks {
		if t.Status != types.TASK_STATUS_PENDING || t.Role != types.TASK_ROLE_PRIMARY || t.JobId != job.Id {
			return fmt.Errorf("market: new task %d is a %s %s of job %d, not a pending primary of job %d", t.Id, t.Status, t.Role, t.JobId, job.Id)
		}
		if err := k.storeNewTask(ctx, t); err != nil {
			return err
		}
		job.OpenTasks++
		if queued(*job, t) {
			waiting = append(waiting, t)
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	if len(waiting) > 1 {
		// a group of one names its task in its record alone (queue.go)
		for _, t := range waiting {
			if err := k.Waiting.Set(ctx, waitingKey(t)); err != nil {
				return err
			}
		}
	}
	first := waiting[0]
	// a new job (its id from JobSeq) has no group yet: its record is written, not read
	if err := k.setGroup(ctx, groupOf(first), groupState{size: uint64(len(waiting)), first: first.Id}); err != nil {
		return err
	}
	if err := k.moveQueueCounts(ctx, 1, int64(len(waiting)), 0, 0); err != nil {
		return err
	}
	return k.AssignQueue.Set(ctx, groupKey(*job, types.TASK_ROLE_PRIMARY))
}

// attachEntry adds the due-work entry of the task's status (the table above). Genesis
// restores the entries with it; the node slots and exposures come with their own state.
func (k Keeper) attachEntry(ctx context.Context, job types.Job, t types.Task) error {
	switch t.Status {
	case types.TASK_STATUS_PENDING:
		if queued(job, t) {
			return k.enqueue(ctx, job, t)
		}
	case types.TASK_STATUS_ASSIGNED:
		return k.AckDeadlines.Set(ctx, collections.Join(t.AckDeadlineHeight, t.Id))
	case types.TASK_STATUS_RUNNING:
		if err := k.NodeRunning.Set(ctx, collections.Join(t.NodeId, t.Id)); err != nil {
			return err
		}
		return k.RunDeadlines.Set(ctx, collections.Join(t.RunDeadline, t.Id))
	case types.TASK_STATUS_COMMITTED:
		if awaitsAuditDraw(job, t) {
			return k.AuditDraws.Set(ctx, collections.Join(auditDrawHeight(t), t.Id))
		}
		if t.RevealDeadlineHeight != 0 {
			return k.RevealDeadlines.Set(ctx, collections.Join(t.RevealDeadlineHeight, t.Id))
		}
	case types.TASK_STATUS_VERIFIED:
		return k.SettleQueue.Set(ctx, collections.Join(t.SettleHeight, t.Id))
	}
	return nil
}

// releaseEntry removes the due-work entry of the task's status, wherever it is (an entry
// an EndBlock step popped is already gone; removing it again is harmless).
func (k Keeper) releaseEntry(ctx context.Context, job types.Job, t types.Task) error {
	switch t.Status {
	case types.TASK_STATUS_PENDING:
		return k.dequeue(ctx, job, t)
	case types.TASK_STATUS_ASSIGNED:
		return k.AckDeadlines.Remove(ctx, collections.Join(t.AckDeadlineHeight, t.Id))
	case types.TASK_STATUS_RUNNING:
		if err := k.NodeRunning.Remove(ctx, collections.Join(t.NodeId, t.Id)); err != nil {
			return err
		}
		return k.RunDeadlines.Remove(ctx, collections.Join(t.RunDeadline, t.Id))
	case types.TASK_STATUS_COMMITTED:
		if awaitsAuditDraw(job, t) {
			return k.AuditDraws.Remove(ctx, collections.Join(auditDrawHeight(t), t.Id))
		}
		return k.RevealDeadlines.Remove(ctx, collections.Join(t.RevealDeadlineHeight, t.Id))
	case types.TASK_STATUS_VERIFIED:
		return k.SettleQueue.Remove(ctx, collections.Join(t.SettleHeight, t.Id))
	}
	return nil
}

// auditDrawHeight: the audit of a commitment is drawn from the beacon's value for the
// block after it, which the beacon serves from the block after that at the earliest
// (later when that block's drand round is late: drawAudit moves it on).
func auditDrawHeight(t types.Task) int64 {
	if t.AuditDrawHeight != 0 {
		return t.AuditDrawHeight
	}
	return t.CommitHeight + 2
}

// hold is what a task holds of its node and its provider's collateral.
type hold struct {
	node              uint64
	gpus, tasks, open int64
	devices           []uint32 // on a node with MIG, while it holds the node
	provider          string
	exposure          sdkmath.Int
}

func holdOf(job types.Job, t types.Task) hold {
	if t.NodeId == 0 {
		return hold{}
	}
	h := hold{node: t.NodeId, provider: t.Provider}
	if holdsNode(t.Status) {
		h.gpus = int64(job.Spec.Requirements.GPUs())
		h.devices = t.Devices
	}
	if inFlight(t.Status) {
		h.tasks = 1
	}
	if holdsExposure(t.Status) {
		h.open = 1
	}
	if holdsExposure(t.Status) && !t.Exposure.IsNil() && t.Exposure.IsPositive() {
		h.exposure = t.Exposure
	}
	return h
}

// moveHoldings moves the node usage and the exposure (the run's and a pending failure
// report's) from what old holds to what new holds: the difference on the same node, and
// the net change of each provider's exposure.
func (k Keeper) moveHoldings(ctx context.Context, job types.Job, old, new types.Task, known *types.NodeSlot) error {
	a, b := holdOf(job, old), holdOf(job, new)
	if a.node == b.node {
		release, take := a.devices, b.devices
		if slices.Equal(release, take) {
			release, take = nil, nil
		}
		if dg, dt, do := b.gpus-a.gpus, b.tasks-a.tasks, b.open-a.open; a.node != 0 && (dg != 0 || dt != 0 || do != 0 || len(release)+len(take) > 0) {
			if err := k.adjustSlot(ctx, a.node, known, dg, dt, do, release, take); err != nil {
				return err
			}
		}
	} else {
		if a.node != 0 && (a.gpus != 0 || a.tasks != 0 || a.open != 0) {
			if err := k.adjustSlot(ctx, a.node, known, -a.gpus, -a.tasks, -a.open, a.devices, nil); err != nil {
				return err
			}
		}
		if b.node != 0 && (b.gpus != 0 || b.tasks != 0 || b.open != 0) {
			if err := k.adjustSlot(ctx, b.node, known, b.gpus, b.tasks, b.open, nil, b.devices); err != nil {
				return err
			}
		}
	}
	// the run's exposure and a pending failure report's, netted per provider: a move
	// that does not raise a provider's exposure never meets its cap (a report holds
	// collateral in place of the run's; refused, it left a provider above its cap only
	// the choice to abandon the task and be slashed for it)
	fa, ea := failureHold(old)
	fb, eb := failureHold(new)
	var moves exposureMoves
	moves.add(a.provider, a.exposure, true)
	moves.add(fa, ea, true)
	moves.add(b.provider, b.exposure, false)
	moves.add(fb, eb, false)
	return moves.apply(ctx, k)
}

// exposureMove is a provider's net exposure change in a transition.
type exposureMove struct {
	provider string
	delta    sdkmath.Int
}

// exposureMoves are the net exposure changes of a transition's providers, in the order
// they first appear (never a map's).
type exposureMoves []exposureMove

func (m *exposureMoves) add(provider string, v sdkmath.Int, release bool) {
	if provider == "" || v.IsNil() || v.IsZero() {
		return
	}
	if release {
		v = v.Neg()
	}
	for i := range *m {
		if (*m)[i].provider == provider {
			(*m)[i].delta = (*m)[i].delta.Add(v)
			return
		}
	}
	*m = append(*m, exposureMove{provider, v})
}

// apply releases first, then adds (an add meets the cap).
func (m exposureMoves) apply(ctx context.Context, k Keeper) error {
	for _, mv := range m {
		if mv.delta.IsNegative() {
			if err := k.releaseExposure(ctx, mv.provider, mv.delta.Neg()); err != nil {
				return err
			}
		}
	}
	for _, mv := range m {
		if mv.delta.IsPositive() {
			if err := k.addExposure(ctx, mv.provider, mv.delta); err != nil {
				return err
			}
		}
	}
	return nil
}

// finishTask puts a task in a final status: what the provider was not paid of the task's
// reservation returns (a primary's to the owner, another role's to the verification
// budget), the job's counters move, and the job may finish. A caller that finishes a
// member of a verification group outside its group's decision then calls afterMemberLeft.
// set, if any, changes more of the task's fields in the same transition.
func (k Keeper) finishTask(ctx context.Context, p types.Params, job *types.Job, t *types.Task, status types.TaskStatus, node uint64, reason string, set ...func(*types.Task)) error {
	if !isFinal(status) {
		return fmt.Errorf("market: finish task %d as %s: not a final status", t.Id, status)
	}
	// A task won in an auction that ends before its ack was ended by its owner (cancelled),
	// its job's deadline (expired) or the chain (its block work failed): not by its
	// provider, whose one fault here, never acking, lapses the task and forfeits the
	// deposit before the task gets here. The won bid's deposit, held until that ack,
	// returns now: left held, it was lost when the job was pruned with its bids, and an
	// owner that cancelled between the close and the acks cost each winner its deposit.
	if t.Status == types.TASK_STATUS_ASSIGNED && t.BidNode != 0 {
		if err := k.settleBidDeposit(ctx, job, t.BidNode, false); err != nil {
			return err
		}
	}
	// a pending failure report is decided first: its pay comes out of the reservation
	if err := k.settleFailures(ctx, p, job, t, status); err != nil {
		return err
	}
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
	return k.transition(ctx, p, job, t, status, step{
		history: "Task" + statusWord(status), node: node, detail: reason,
		event: &types.EventTaskStatus{TaskId: t.Id, JobId: t.JobId, NodeId: node, Status: status, Reason: reason},
	}, func(t *types.Task) {
		for _, f := range set {
			f(t)
		}
		t.Reason = reason
	})
}

// maybeFinishJob ends a job whose tasks are all final: the rest of its escrow (unspent
// verification budget) returns to the owner and it is scheduled for pruning.
func (k Keeper) maybeFinishJob(ctx context.Context, job *types.Job, p types.Params) error {
	if job.FinishedHeight != 0 || uint64(job.TasksSettled)+uint64(job.TasksFailed) < job.Spec.TotalTasks() || job.OpenTasks > 0 {
		return nil // primaries, or escalations, audits or committees, still open
	}
	if job.Status == types.JOB_STATUS_BIDDING {
		// its deadline passed before the auction closed: the bids end with the job (their
		// deposits back) and so does the close
		if err := k.returnOpenBids(ctx, job, types.BID_STATUS_LOST); err != nil {
			return err
		}
		if err := k.AuctionClose.Remove(ctx, collections.Join(job.AuctionCloseHeight, job.Id)); err != nil {
			return err
		}
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
	if err := k.addHistory(ctx, *job, p, "Job"+enumWord(job.Status.String(), "JOB_STATUS_"), 0, 0, fmt.Sprintf("%d settled, %d failed; %s%s refunded", job.TasksSettled, job.TasksFailed, refunded, p.Denom)); err != nil {
		return err
	}
	return sdkCtx.EventManager().EmitTypedEvent(&types.EventJobFinished{JobId: job.Id, Status: job.Status, Refunded: refunded})
}
