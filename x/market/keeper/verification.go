package keeper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/beacon"
	"github.com/flopsnet/flops/internal/validate"
	"github.com/flopsnet/flops/x/gfl/pocp"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// Verification (DESIGN.md section 4; the security argument is in x/market/README.md).
//
// Tasks are verified in groups whose members must all commit before any of them may
// reveal, so that nobody can copy a result it has seen:
//   - EXACT jobs: the shard's compared tasks, i.e. its replicas, tie-breaking escalation
//     replicas and its audit. When every live member has revealed, the group is decided:
//     with an audit, agreement verifies the task and disagreement opens a dispute; with
//     replicas, a strict majority of equal result roots is verified and the minority is
//     slashed for a wrong result (rewarding the majority), and a tie adds one escalation
//     replica (paid from the verification budget), at most max_tie_escalations times;
//     an unbreakable tie fails every member without a slash and refunds the owner.
//   - a dispute's committee: committee_size fresh nodes re-run the shard; a strict
//     majority of the committee decides.
//   - BUILTIN_GEMM and NONE jobs: no group; a GEMM reveal must open the entries sampled
//     from the block after its commitment (x/gfl/pocp), a NONE reveal is accepted.
//
// A single-replica EXACT task is audited with its provider's probability (100% for its
// first audit_warmup_tasks settled tasks, then max(audit_floor, 1 - reputation), and always
// at or above audit_value_threshold), drawn from the hash of the block after its commitment:
// randomness that did not exist when it committed. The audit is one more member of its
// group, so the task's reveal waits for the auditor's commitment.
//
// Verified tasks settle at the end of their challenge window, in which the owner may
// challenge a result with challenge_bond: a committee decides; a lost challenge forfeits the
// bond to the provider and the committee's majority.

// isCompared: a task whose result root is compared within its shard.
func isCompared(r types.TaskRole) bool {
	return r == types.TASK_ROLE_PRIMARY || r == types.TASK_ROLE_ESCALATION || r == types.TASK_ROLE_AUDIT
}

// shardTasks returns every task of a job's shard, in id order: its primary replicas,
// whose ids follow from the job's first task id (a job's tasks are numbered at
// submission shard by shard: first + index x replicas + replica), then the tasks added to
// the shard since (escalations, audits, committee members), which alone the ByShard index
// holds (a primary's entry cost every submitted task a write).
func (k Keeper) shardTasks(ctx context.Context, job types.Job, index uint32) ([]types.Task, error) {
	if job.FirstTaskId == 0 {
		return nil, fmt.Errorf("market: job %d has no primaries on record", job.Id)
	}
	return k.shardTasksFrom(ctx, job, index, job.FirstTaskId+job.Spec.PrimaryOffset(index, 0))
}

// shardTasksFrom is shardTasks for the shard whose first primary replica has id from.
func (k Keeper) shardTasksFrom(ctx context.Context, job types.Job, index uint32, from uint64) ([]types.Task, error) {
	out := make([]types.Task, 0, job.Spec.Replicas)
	for r := range job.Spec.Replicas {
		t, err := k.Tasks.Get(ctx, from+uint64(r))
		if err != nil {
			return nil, fmt.Errorf("market: job %d shard %d replica %d (task %d): %w", job.Id, index, r, from+uint64(r), err)
		}
		if t.JobId != job.Id || t.Index != index || t.Replica != r || t.Role != types.TASK_ROLE_PRIMARY {
			return nil, fmt.Errorf("market: task %d is not job %d shard %d's primary replica %d", t.Id, job.Id, index, r)
		}
		out = append(out, t)
	}
	it, err := k.Tasks.Indexes.ByShard.MatchExact(ctx, collections.Join(job.Id, index))
	if err != nil {
		return nil, err
	}
	defer func() { _ = it.Close() }()
	for ; it.Valid(); it.Next() {
		id, err := it.PrimaryKey()
		if err != nil {
			return nil, err
		}
		t, err := k.Tasks.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// group returns the live members of a task's verification group (itself included), or
// nil when the task is verified alone (BUILTIN_GEMM, NONE).
func (k Keeper) group(ctx context.Context, job types.Job, t types.Task) ([]types.Task, error) {
	if t.Role == types.TASK_ROLE_COMMITTEE {
		d, err := k.Disputes.Get(ctx, t.DisputeId)
		if err != nil {
			return nil, err
		}
		var out []types.Task
		for _, id := range d.Committee {
			m, err := k.Tasks.Get(ctx, id)
			if err != nil {
				return nil, err
			}
			if !isFinal(m.Status) {
				out = append(out, m)
			}
		}
		return out, nil
	}
	if job.Spec.Verification != types.VERIFICATION_CLASS_EXACT {
		return nil, nil
	}
	all, err := k.shardTasks(ctx, job, t.Index)
	if err != nil {
		return nil, err
	}
	var out []types.Task
	for _, m := range all {
		if isCompared(m.Role) && !isFinal(m.Status) {
			out = append(out, m)
		}
	}
	return out, nil
}

// afterGroupChange opens the group's reveals once nobody in it is still working, and
// decides it once every live member has revealed. Called whenever a member commits,
// reveals or leaves the group for good. The job is saved.
func (k Keeper) afterGroupChange(ctx context.Context, p types.Params, job *types.Job, t types.Task) error {
	if err := k.groupChanged(ctx, p, job, t); err != nil {
		return err
	}
	return k.saveJob(ctx, *job)
}

func (k Keeper) groupChanged(ctx context.Context, p types.Params, job *types.Job, t types.Task) error {
	members, err := k.group(ctx, *job, t)
	if err != nil || len(members) == 0 {
		return err
	}
	working, committed, revealed := 0, 0, 0
	for _, m := range members {
		switch {
		case awaitsAuditDraw(*job, m):
			working++ // its audit is not drawn yet
		case m.Status == types.TASK_STATUS_COMMITTED:
			committed++
		case m.Status == types.TASK_STATUS_REVEALED && (m.DisputeId == 0 || m.Role == types.TASK_ROLE_COMMITTEE):
			revealed++ // (a committee member's dispute id is the dispute it decides)
		case m.Status == types.TASK_STATUS_REVEALED, m.Status == types.TASK_STATUS_VERIFIED:
			// waiting for a dispute, or decided
		default:
			working++
		}
	}
	if working > 0 {
		return nil
	}
	if committed > 0 {
		return k.openReveals(ctx, p, job, members)
	}
	if revealed == len(members) {
		if t.Role == types.TASK_ROLE_COMMITTEE {
			return k.decideDispute(ctx, p, job, t.DisputeId, members)
		}
		return k.decideShard(ctx, p, job, members)
	}
	return nil
}

// openReveals gives every committed member of a group its reveal deadline.
func (k Keeper) openReveals(ctx context.Context, p types.Params, job *types.Job, members []types.Task) error {
	h := sdk.UnwrapSDKContext(ctx).BlockHeight()
	for _, m := range members {
		if m.Status != types.TASK_STATUS_COMMITTED || m.RevealDeadlineHeight != 0 {
			continue
		}
		if err := k.transition(ctx, p, job, &m, types.TASK_STATUS_COMMITTED, step{}, func(m *types.Task) {
			m.RevealDeadlineHeight = h + int64(p.RevealTimeoutBlocks)
		}); err != nil {
			return err
		}
	}
	return nil
}

// verify accepts a task: VERIFIED, settling at the end of a new challenge window.
func (k Keeper) verify(ctx context.Context, p types.Params, job *types.Job, t *types.Task) error {
	settle := sdk.UnwrapSDKContext(ctx).BlockHeight() + int64(p.ChallengeWindowBlocks)
	if err := k.transition(ctx, p, job, t, types.TASK_STATUS_VERIFIED, step{}, func(t *types.Task) { t.SettleHeight = settle }); err != nil {
		return err
	}
	if counts, err := k.counts(ctx, *job, *t); err != nil {
		return err
	} else if counts {
		if err := k.hooks().AfterTaskVerified(ctx, t.NodeId, true); err != nil {
			return err
		}
	}
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventTaskStatus{TaskId: t.Id, JobId: t.JobId, NodeId: t.NodeId, Status: t.Status})
}

// wrongResult fails a task whose result lost verification: slashed for a wrong result, the
// owner compensated (at most the task's value), the given verifiers rewarded, its escrow refunded.
//
// A task resumed from another provider's checkpoint (a reassignment hands the last one
// over) is the exception: the checkpoint's author is slashed instead, and the provider
// that resumed from it is neither paid nor slashed nor marked down: a planted checkpoint
// cannot get an honest successor slashed.
//
// owed is what the disagreement cost the owner (the escalations or the committee it pays
// for), shared by every result the same decision finds wrong: the owner's compensation
// comes out of it, and never exceeds it.
func (k Keeper) wrongResult(ctx context.Context, p types.Params, job *types.Job, t *types.Task, verifiers []sdk.AccAddress, reason string, owed *sdkmath.Int) error {
	if types.IsFailedRoot(t.ResultRoot) {
		// A verification task that answered that the job fails, outvoted by a result: a
		// failure report refuted, slashed as one (max(abandon_slash_ppm, failure_penalty_
		// multiple x its value), burned: a job that fails on some runs only must not
		// farm its verifiers' collateral for its owner) and not paid.
		if err := k.refuteFailure(ctx, t.Provider, t.NodeId, exposureOfFailure(p, taskValue(*job, t.Role, t.Price)), t.JobId, t.Id); err != nil {
			return err
		}
		return k.finishTask(ctx, p, job, t, types.TASK_STATUS_FAILED, t.NodeId, reason+"; it answered that the job failed, which the others' results refute")
	}
	if a := t.Checkpoint.Author; a != "" && a != t.Provider {
		ev := sstypes.SlashEvidence{JobId: t.JobId, TaskId: t.Id}
		took, err := k.slashed(ctx, a, p.WrongResultSlashPpm, t.Exposure, sstypes.SLASH_REASON_WRONG_RESULT, job.Owner, owed, verifiers, ev)
		if err != nil {
			return err
		}
		addRerunSlashed(t, a, took)
		return k.finishTask(ctx, p, job, t, types.TASK_STATUS_FAILED, t.NodeId,
			reason+fmt.Sprintf("; resumed from the checkpoint of %s (height %d), which is slashed instead", a, t.Checkpoint.Height))
	}
	ev := sstypes.SlashEvidence{NodeId: t.NodeId, JobId: t.JobId, TaskId: t.Id}
	took, err := k.slashed(ctx, t.Provider, p.WrongResultSlashPpm, t.Exposure, sstypes.SLASH_REASON_WRONG_RESULT, job.Owner, owed, verifiers, ev)
	if err != nil {
		return err
	}
	addRerunSlashed(t, t.Provider, took)
	if err := k.hooks().AfterTaskVerified(ctx, t.NodeId, false); err != nil {
		return err
	}
	return k.finishTask(ctx, p, job, t, types.TASK_STATUS_FAILED, t.NodeId, reason)
}

// decideShard compares the result roots of a shard's revealed group.
func (k Keeper) decideShard(ctx context.Context, p types.Params, job *types.Job, members []types.Task) error {
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	var audit *types.Task
	for i := range members {
		if members[i].Role == types.TASK_ROLE_AUDIT {
			audit = &members[i]
		}
	}
	if audit == nil && job.Spec.Replicas == 1 {
		// a single-replica shard whose audit was drawn but ended without a result (never
		// placed by its own deadline, or failed): the result cannot be verified, so it is
		// not paid, and nobody is slashed
		all, err := k.shardTasks(ctx, *job, members[0].Index)
		if err != nil {
			return err
		}
		for _, m := range all {
			if m.Role == types.TASK_ROLE_AUDIT && isFinal(m.Status) && m.Status != types.TASK_STATUS_SETTLED && m.DisputeId == 0 {
				for i := range members {
					if err := k.finishTask(ctx, p, job, &members[i], types.TASK_STATUS_FAILED, members[i].NodeId,
						fmt.Sprintf("its audit (task %d) could not run: an unverified result is not paid, and nobody is slashed", m.Id)); err != nil {
						return err
					}
				}
				return nil
			}
		}
	}
	if audit != nil && len(members) == 2 {
		target := &members[0]
		if target == audit {
			target = &members[1]
		}
		if bytes.Equal(target.ResultRoot, audit.ResultRoot) {
			if err := k.verify(ctx, p, job, target); err != nil {
				return err
			}
			return k.verify(ctx, p, job, audit)
		}
		_, err := k.openDispute(ctx, p, job, target, audit, nil, sdkmath.ZeroInt())
		return err
	}

	// Replicas: a strict majority of equal roots. A replica that ended in a confirmed
	// failure (two operators' runs of it failed) votes FailedRoot: without its vote a
	// replica that committed a made-up result beside it was the shard's one live member,
	// verified and paid alone for a job that fails.
	// The shard's tasks are read only when a primary replica has left the group (the
	// common decision, every replica live, reads nothing more) or for a tie.
	failed := string(types.FailedRoot())
	var all []types.Task
	shard := func() ([]types.Task, error) {
		var err error
		if all == nil {
			all, err = k.shardTasks(ctx, *job, members[0].Index)
		}
		return all, err
	}
	gone := 0
	if live := countFunc(members, func(m types.Task) bool { return m.Role == types.TASK_ROLE_PRIMARY }); live < int(job.Spec.Replicas) {
		tasks, err := shard()
		if err != nil {
			return err
		}
		gone = confirmedFailedReplicas(tasks)
	}
	votes := map[string][]int{}
	var order []string
	for i, m := range members {
		key := string(m.ResultRoot)
		if _, seen := votes[key]; !seen {
			order = append(order, key)
		}
		votes[key] = append(votes[key], i)
	}
	if _, seen := votes[failed]; gone > 0 && !seen {
		order = append(order, failed)
	}
	count := func(key string) int {
		if key == failed {
			return len(votes[key]) + gone
		}
		return len(votes[key])
	}
	best := order[0]
	for _, key := range order[1:] {
		if count(key) > count(best) {
			best = key
		}
	}
	ev := types.EventVerified{JobId: job.Id, Index: members[0].Index}
	if 2*count(best) > len(members)+gone {
		var winnerAddrs []string
		for _, i := range votes[best] {
			ev.Majority = append(ev.Majority, members[i].Id)
			winnerAddrs = append(winnerAddrs, members[i].Provider)
		}
		winners, err := k.accs(winnerAddrs...)
		if err != nil {
			return err
		}
		// what the disagreement cost the owner: the escalations it pays for (a replica's
		// own reservation comes back to it when its result is wrong)
		owed := sdkmath.ZeroInt()
		var majority []types.Task
		for _, i := range votes[best] {
			majority = append(majority, members[i])
			if members[i].Role == types.TASK_ROLE_ESCALATION {
				owed = owed.Add(members[i].Price)
			}
		}
		for i := range members {
			m := &members[i]
			if string(m.ResultRoot) == best {
				if err := k.verify(ctx, p, job, m); err != nil {
					return err
				}
				continue
			}
			ev.Minority = append(ev.Minority, m.Id)
			if best == failed {
				if err := k.confirmByVerification(ctx, p, job, m, majority); err != nil {
					return err
				}
			}
			if err := k.wrongResult(ctx, p, job, m, winners, "result root in the minority of its replicas", &owed); err != nil {
				return err
			}
		}
		return sdkCtx.EventManager().EmitTypedEvent(&ev)
	}

	// A tie: one more replica, if the budget and the bound allow.
	tasks, err := shard()
	if err != nil {
		return err
	}
	escalations := uint32(0)
	for _, m := range tasks {
		if m.Role == types.TASK_ROLE_ESCALATION {
			escalations++
		}
	}
	reserve := job.Spec.Reserved()
	if escalations < p.MaxTieEscalations && job.VerificationLeft.GTE(reserve) {
		if _, err := k.newTask(ctx, p, job, members[0].Index, types.TASK_ROLE_ESCALATION, reserve, 0, nil); err != nil {
			return err
		}
		ev.Escalated = true
		if err := k.addHistory(ctx, *job, p, "TieEscalated", 0, 0, fmt.Sprintf("shard %d: %d replicas disagree; one more added", members[0].Index, len(members))); err != nil {
			return err
		}
		return sdkCtx.EventManager().EmitTypedEvent(&ev)
	}
	for i := range members {
		m := &members[i]
		if err := k.finishTask(ctx, p, job, m, types.TASK_STATUS_FAILED, m.NodeId, "replicas tied and no escalation is left: no result can be trusted"); err != nil {
			return err
		}
	}
	return sdkCtx.EventManager().EmitTypedEvent(&ev)
}

// afterMemberLeft re-examines a task's verification group after the task became final
// outside a decision (failed after its reassignments, expired, cancelled): the others may
// now reveal or be decided. The job is saved.
func (k Keeper) afterMemberLeft(ctx context.Context, p types.Params, job *types.Job, t types.Task) error {
	if !isCompared(t.Role) && t.Role != types.TASK_ROLE_COMMITTEE {
		return nil
	}
	all, err := k.shardTasks(ctx, *job, t.Index)
	if err != nil {
		return err
	}
	for _, m := range all {
		if !isFinal(m.Status) && (m.Role == t.Role || (isCompared(m.Role) && isCompared(t.Role))) {
			if m.Role == types.TASK_ROLE_COMMITTEE && m.DisputeId != t.DisputeId {
				continue // another dispute's committee
			}
			return k.afterGroupChange(ctx, p, job, m)
		}
	}
	if t.Role == types.TASK_ROLE_COMMITTEE {
		// the last member left undecided: nobody is left to decide the dispute
		if err := k.expireDispute(ctx, p, job, t.DisputeId); err != nil {
			return err
		}
		return k.saveJob(ctx, *job)
	}
	return nil
}

// expireDispute ends a dispute whose committee could not form or finish by its deadline
// (every member left undecided: never placed by its deadline, or failed, expired or timed
// out), by the documented rule (x/market/README.md, "When verification cannot run"):
// nobody is slashed; the two disputed results of an audit are not paid (both tasks fail,
// their prices return to the owner, their exposure is released); a challenged result keeps
// the verification it had before the challenge and settles, and the challenger's bond
// returns to it.
func (k Keeper) expireDispute(ctx context.Context, p types.Params, job *types.Job, id uint64) error {
	d, err := k.Disputes.Get(ctx, id)
	if err != nil || d.Status != types.DISPUTE_STATUS_OPEN {
		return err
	}
	d.Status = types.DISPUTE_STATUS_EXPIRED
	target, err := k.Tasks.Get(ctx, d.TargetTask)
	if err != nil {
		return err
	}
	const reason = "its dispute expired without a committee decision: an unverified result is not paid, and nobody is slashed"
	switch d.Kind {
	case types.DISPUTE_KIND_AUDIT:
		auditor, err := k.Tasks.Get(ctx, d.AuditorTask)
		if err != nil {
			return err
		}
		for _, t := range []*types.Task{&target, &auditor} {
			if isFinal(t.Status) {
				continue
			}
			if err := k.finishTask(ctx, p, job, t, types.TASK_STATUS_FAILED, t.NodeId, reason); err != nil {
				return err
			}
		}
	case types.DISPUTE_KIND_CHALLENGE:
		if !isFinal(target.Status) {
			if err := k.verify(ctx, p, job, &target); err != nil {
				return err
			}
		}
		provider, err := k.acc(target.Provider)
		if err != nil {
			return err
		}
		if err := k.settleBond(ctx, p, job, &d, provider, nil); err != nil {
			return err
		}
	}
	if err := k.Disputes.Set(ctx, d.Id, d); err != nil {
		return err
	}
	if err := k.addHistory(ctx, *job, p, "DisputeExpired", d.TargetTask, target.NodeId, fmt.Sprintf("dispute %d: no committee decision by %s", d.Id, d.Deadline.UTC().Format(time.RFC3339))); err != nil {
		return err
	}
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventDispute{DisputeId: d.Id, Kind: d.Kind, TargetTask: d.TargetTask, Status: d.Status})
}

// newTask adds a task to a job's shard: an escalation, an audit or a committee member. Its
// reservation comes out of the job's verification budget.
func (k Keeper) newTask(ctx context.Context, p types.Params, job *types.Job, index uint32, role types.TaskRole, reserve sdkmath.Int, dispute uint64, exclude []uint64) (types.Task, error) {
	if job.VerificationLeft.LT(reserve) {
		return types.Task{}, fmt.Errorf("market: job %d verification budget %s below %s", job.Id, job.VerificationLeft, reserve)
	}
	_, id, err := k.takeIDs(ctx, 0, 1)
	if err != nil {
		return types.Task{}, err
	}
	all, err := k.shardTasks(ctx, *job, index)
	if err != nil {
		return types.Task{}, err
	}
	t := types.Task{
		Id: id, JobId: job.Id, Index: index, Replica: uint32(len(all)), Status: types.TASK_STATUS_PENDING, Role: role,
		Price: sdkmath.ZeroInt(), Exposure: sdkmath.ZeroInt(), Paid: sdkmath.ZeroInt(), Reserved: reserve, DisputeId: dispute, ExcludedNodes: exclude,
		Deadline: verificationDeadline(ctx, p, *job), PendingHeight: sdk.UnwrapSDKContext(ctx).BlockHeight(),
	}
	job.VerificationLeft = job.VerificationLeft.Sub(reserve)
	if err := k.insertTask(ctx, job, t); err != nil {
		return t, err
	}
	if err := k.addHistory(ctx, *job, p, "Task"+roleWord(role), id, 0, fmt.Sprintf("shard %d", index)); err != nil {
		return types.Task{}, err
	}
	return t, nil
}

// verificationDeadline is the deadline of a verification task created now: its own, not
// the job's, so that the timing of the provider it verifies cannot run it out.
func verificationDeadline(ctx context.Context, p types.Params, job types.Job) time.Time {
	return sdk.UnwrapSDKContext(ctx).BlockTime().Add(job.Spec.MaxDuration + p.VerificationTimeout)
}

// taskDeadline is when a task must be done by: a verification task's own deadline, else
// the job's.
func taskDeadline(job types.Job, t types.Task) time.Time {
	if !t.Deadline.IsZero() {
		return t.Deadline
	}
	return job.Spec.Deadline
}

func roleWord(r types.TaskRole) string {
	switch r {
	case types.TASK_ROLE_ESCALATION:
		return "Escalation"
	case types.TASK_ROLE_AUDIT:
		return "Audit"
	case types.TASK_ROLE_COMMITTEE:
		return "Committee"
	}
	return "Primary"
}

// AuditProbabilityPPM is the probability that a provider's single-replica EXACT task is
// audited: 1 during its first warm-up tasks and for tasks priced at or above the value
// threshold, otherwise max(audit_floor, 1 - reputation score).
func AuditProbabilityPPM(p types.Params, settledTasks uint64, score sdkmath.LegacyDec, price sdkmath.Int) uint32 {
	if settledTasks < uint64(p.AuditWarmupTasks) || price.GTE(p.AuditValueThreshold) {
		return validate.PPMOne
	}
	prob := p.AuditFloorPpm
	if !score.IsNil() && score.LT(sdkmath.LegacyOneDec()) {
		if byRep := sdkmath.LegacyOneDec().Sub(score).MulInt64(validate.PPMOne).TruncateInt64(); byRep > int64(prob) {
			prob = uint32(byRep)
		}
	}
	return prob
}

// drawAudit decides, from the beacon's value for the block after the commitment, whether
// a committed single-replica EXACT task is audited; then its group may open.
func (k Keeper) drawAudit(ctx sdk.Context, p types.Params, taskID uint64) error {
	t, err := k.Tasks.Get(ctx, taskID)
	if err != nil {
		return err
	}
	if t.Status != types.TASK_STATUS_COMMITTED || t.Audited {
		return nil
	}
	job, err := k.loadJob(ctx, t.JobId)
	if err != nil {
		return err
	}
	provider, err := k.acc(t.Provider)
	if err != nil {
		return err
	}
	settled, err := k.ProviderTasks.Get(ctx, provider)
	if err != nil && !errorsmod.IsOf(err, collections.ErrNotFound) {
		return err
	}
	score, _, err := k.wiring.reputation.Reputation(ctx, t.NodeId)
	if err != nil {
		return err
	}
	prob := AuditProbabilityPPM(p, settled, score, t.Price)
	if pendingFailure(t) >= 0 {
		// this result would refute another operator's failure report (the report's
		// provider slashed, this one paid): it is audited for certain, so that a node
		// that took over a failing task cannot make up a result, refute an honest report
		// and be paid whenever the draw spares it
		prob = validate.PPMOne
	}
	seed, err := k.gfl.Seed(ctx, t.CommitHeight+1, types.DomainAudit, t.Id)
	if errors.Is(err, beacon.ErrUnavailable) {
		// The drand round of the block after the commitment is not on chain yet (or
		// its fallback block not made): draw next block. Nobody can wait it out: the
		// beacon falls back to a block hash after drand.wait_blocks.
		return k.transition(ctx, p, &job, &t, types.TASK_STATUS_COMMITTED, step{}, func(t *types.Task) {
			t.AuditDrawHeight = ctx.BlockHeight() + 1
		})
	}
	if err != nil {
		return err
	}
	ev := types.EventAudit{TaskId: t.Id, ProbabilityPpm: prob, Audited: beacon.Below(seed, validate.PPMOne) < uint64(prob)}
	if ev.Audited {
		reserve := job.Spec.MaxPricePerTask.Amount
		if job.VerificationLeft.GTE(reserve) {
			all, err := k.shardTasks(ctx, job, t.Index)
			if err != nil {
				return err
			}
			var exclude []uint64
			for _, m := range all {
				if m.NodeId != 0 {
					exclude = append(exclude, m.NodeId)
				}
			}
			exclude = append(exclude, t.ExcludedNodes...)
			a, err := k.newTask(ctx, p, &job, t.Index, types.TASK_ROLE_AUDIT, reserve, 0, exclude)
			if err != nil {
				return err
			}
			ev.AuditTask = a.Id
		} else {
			ev.Audited, ev.Reason = false, "verification budget exhausted"
		}
	}
	if err := k.transition(ctx, p, &job, &t, types.TASK_STATUS_COMMITTED, step{}, func(t *types.Task) { t.Audited = true }); err != nil {
		return err
	}
	if err := k.afterGroupChange(ctx, p, &job, t); err != nil {
		return err
	}
	return ctx.EventManager().EmitTypedEvent(&ev)
}

// openDispute convenes a committee over a target task's result: after a disagreeing audit
// (auditor set) or the owner's challenge (challenger and bond set). The committee's
// reservations come out of the verification budget.
func (k Keeper) openDispute(ctx context.Context, p types.Params, job *types.Job, target, auditor *types.Task, challenger sdk.AccAddress, bond sdkmath.Int) (types.Dispute, error) {
	id, err := k.DisputeSeq.Next(ctx)
	if err != nil {
		return types.Dispute{}, err
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	d := types.Dispute{
		Id: id, JobId: job.Id, TargetTask: target.Id, Bond: bond, Status: types.DISPUTE_STATUS_OPEN, Height: sdkCtx.BlockHeight(),
		Deadline: verificationDeadline(ctx, p, *job),
	}
	if auditor != nil {
		d.Kind, d.AuditorTask = types.DISPUTE_KIND_AUDIT, auditor.Id
	} else {
		d.Kind, d.Challenger = types.DISPUTE_KIND_CHALLENGE, challenger.String()
	}
	all, err := k.shardTasks(ctx, *job, target.Index)
	if err != nil {
		return d, err
	}
	var exclude []uint64
	for _, m := range all {
		if m.NodeId != 0 {
			exclude = append(exclude, m.NodeId)
		}
	}
	for i := uint32(0); i < p.CommitteeSize; i++ {
		m, err := k.newTask(ctx, p, job, target.Index, types.TASK_ROLE_COMMITTEE, job.Spec.MaxPricePerTask.Amount, id, exclude)
		if err != nil {
			return d, err
		}
		d.Committee = append(d.Committee, m.Id)
	}
	for _, t := range []*types.Task{target, auditor} {
		if t == nil {
			continue
		}
		// a verified target's settlement waits for the dispute
		if err := k.transition(ctx, p, job, t, types.TASK_STATUS_REVEALED, step{}, func(t *types.Task) {
			t.DisputeId = id
			t.SettleHeight = 0
		}); err != nil {
			return d, err
		}
	}
	if err := k.Disputes.Set(ctx, id, d); err != nil {
		return d, err
	}
	if err := k.addHistory(ctx, *job, p, "DisputeOpened", target.Id, target.NodeId, fmt.Sprintf("dispute %d (%s): a committee of %d re-runs shard %d", id, d.Kind, p.CommitteeSize, target.Index)); err != nil {
		return types.Dispute{}, err
	}
	return d, sdkCtx.EventManager().EmitTypedEvent(&types.EventDispute{DisputeId: id, Kind: d.Kind, TargetTask: target.Id, Status: d.Status})
}

// decideDispute applies the committee's strict majority (of committee_size).
func (k Keeper) decideDispute(ctx context.Context, p types.Params, job *types.Job, disputeID uint64, committee []types.Task) error {
	d, err := k.Disputes.Get(ctx, disputeID)
	if err != nil || d.Status != types.DISPUTE_STATUS_OPEN {
		return err
	}
	votes := map[string]int{}
	var decided []byte
	for _, m := range committee {
		votes[string(m.ResultRoot)]++
		if 2*votes[string(m.ResultRoot)] > int(p.CommitteeSize) {
			decided = m.ResultRoot
		}
	}
	target, err := k.Tasks.Get(ctx, d.TargetTask)
	if err != nil {
		return err
	}
	var auditor types.Task
	if d.Kind == types.DISPUTE_KIND_AUDIT {
		if auditor, err = k.Tasks.Get(ctx, d.AuditorTask); err != nil {
			return err
		}
	}
	// what the dispute cost the owner: the committee members it pays (the majority); when
	// they found that the job fails, they confirm a disputed party's failure report
	owed := sdkmath.ZeroInt()
	var failedRuns []types.Task
	for _, m := range committee {
		if decided != nil && bytes.Equal(m.ResultRoot, decided) {
			owed = owed.Add(m.Price)
			if types.IsFailedRoot(decided) {
				failedRuns = append(failedRuns, m)
			}
		}
	}
	var majority []sdk.AccAddress
	for i := range committee {
		m := &committee[i]
		if decided == nil || bytes.Equal(m.ResultRoot, decided) {
			if bytes.Equal(m.ResultRoot, decided) {
				a, err := k.acc(m.Provider)
				if err != nil {
					return err
				}
				majority = append(majority, a)
			}
			if err := k.verify(ctx, p, job, m); err != nil {
				return err
			}
			continue
		}
		if err := k.wrongResult(ctx, p, job, m, nil, fmt.Sprintf("committee member out of the majority of dispute %d", d.Id), &owed); err != nil {
			return err
		}
	}
	targetRight := decided != nil && bytes.Equal(target.ResultRoot, decided)
	switch {
	case decided == nil:
		d.Status = types.DISPUTE_STATUS_INCONCLUSIVE
	case targetRight:
		d.Status = types.DISPUTE_STATUS_UPHELD
	default:
		d.Status = types.DISPUTE_STATUS_OVERTURNED
	}
	d.DecidedRoot = decided
	switch d.Kind {
	case types.DISPUTE_KIND_AUDIT:
		auditorRight := decided != nil && bytes.Equal(auditor.ResultRoot, decided)
		auditorAddr, err := k.acc(auditor.Provider)
		if err != nil {
			return err
		}
		if err := k.settleParty(ctx, p, job, &target, decided == nil || targetRight, append(majority, auditorAddr), d.Id, failedRuns, &owed); err != nil {
			return err
		}
		if err := k.settleParty(ctx, p, job, &auditor, decided == nil || auditorRight, majority, d.Id, failedRuns, &owed); err != nil {
			return err
		}
	case types.DISPUTE_KIND_CHALLENGE:
		if err := k.settleParty(ctx, p, job, &target, d.Status != types.DISPUTE_STATUS_OVERTURNED, majority, d.Id, failedRuns, &owed); err != nil {
			return err
		}
		provider, err := k.acc(target.Provider)
		if err != nil {
			return err
		}
		if err := k.settleBond(ctx, p, job, &d, provider, majority); err != nil {
			return err
		}
	}
	if err := k.Disputes.Set(ctx, d.Id, d); err != nil {
		return err
	}
	if err := k.addHistory(ctx, *job, p, "Dispute"+disputeWord(d.Status), d.TargetTask, target.NodeId, fmt.Sprintf("dispute %d", d.Id)); err != nil {
		return err
	}
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventDispute{DisputeId: d.Id, Kind: d.Kind, TargetTask: d.TargetTask, Status: d.Status})
}

func disputeWord(s types.DisputeStatus) string {
	switch s {
	case types.DISPUTE_STATUS_UPHELD:
		return "Upheld"
	case types.DISPUTE_STATUS_OVERTURNED:
		return "Overturned"
	}
	return "Inconclusive"
}

// settleParty ends a disputed party's wait: verified if right, slashed for a wrong result
// (rewarding the verifiers) if not. failedRuns, the committee's majority when it decided
// that the job fails, confirm the party's pending failure report, if it has one.
func (k Keeper) settleParty(ctx context.Context, p types.Params, job *types.Job, t *types.Task, right bool, verifiers []sdk.AccAddress, dispute uint64, failedRuns []types.Task, owed *sdkmath.Int) error {
	if right {
		return k.verify(ctx, p, job, t)
	}
	if len(failedRuns) > 0 {
		if err := k.confirmByVerification(ctx, p, job, t, failedRuns); err != nil {
			return err
		}
	}
	return k.wrongResult(ctx, p, job, t, verifiers, fmt.Sprintf("overturned by the committee of dispute %d", dispute), owed)
}

// settleBond ends a challenge's bond: returned unless the challenge lost (the committee
// upheld the result), in which case half goes to the provider and half, equally, to the
// committee's majority (the remainder to the provider).
func (k Keeper) settleBond(ctx context.Context, p types.Params, job *types.Job, d *types.Dispute, provider sdk.AccAddress, majority []sdk.AccAddress) error {
	send := func(to sdk.AccAddress, amt sdkmath.Int) error {
		if !amt.IsPositive() {
			return nil
		}
		return k.bankKeeper.SendCoinsFromModuleToAccount(ctx, types.ModuleName, to, sdk.NewCoins(sdk.NewCoin(p.Denom, amt)))
	}
	bond := d.Bond
	d.Bond = sdkmath.ZeroInt()
	if d.Status != types.DISPUTE_STATUS_UPHELD {
		return k.payOut(ctx, job.Owner, p.Denom, bond)
	}
	half := bond.QuoRaw(2)
	each := sdkmath.ZeroInt()
	if len(majority) > 0 {
		each = half.QuoRaw(int64(len(majority)))
	}
	for _, m := range majority {
		if err := send(m, each); err != nil {
			return err
		}
	}
	return send(provider, bond.Sub(each.MulRaw(int64(len(majority)))))
}

// Challenge opens a dispute over a verified task within its challenge window: the owner
// locks challenge_bond and the verification budget funds a committee.
func (k Keeper) Challenge(ctx context.Context, ownerAddr sdk.AccAddress, taskID uint64) (uint64, error) {
	owner, err := k.addressString("owner", ownerAddr)
	if err != nil {
		return 0, err
	}
	t, err := k.GetTask(ctx, taskID)
	if err != nil {
		return 0, err
	}
	job, err := k.GetJob(ctx, t.JobId)
	if err != nil {
		return 0, err
	}
	if job.Owner != owner {
		return 0, errorsmod.Wrapf(types.ErrNotOwner, "job %d belongs to %s", job.Id, job.Owner)
	}
	switch {
	case job.Spec.Verification == types.VERIFICATION_CLASS_NONE:
		return 0, errorsmod.Wrapf(types.ErrNotChallengeable, "job %d has verification NONE: liveness only", job.Id)
	case t.Role != types.TASK_ROLE_PRIMARY && t.Role != types.TASK_ROLE_ESCALATION:
		return 0, errorsmod.Wrapf(types.ErrNotChallengeable, "task %d is a %s task", t.Id, t.Role)
	case t.DisputeId != 0:
		return 0, errorsmod.Wrapf(types.ErrAlreadyDisputed, "task %d: dispute %d", t.Id, t.DisputeId)
	case t.Status != types.TASK_STATUS_VERIFIED:
		return 0, errorsmod.Wrapf(types.ErrInvalidTaskStatus, "task %d is %s: only a verified result in its challenge window can be challenged", t.Id, t.Status)
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return 0, err
	}
	if cost := job.Spec.MaxPricePerTask.Amount.MulRaw(int64(p.CommitteeSize)); job.VerificationLeft.LT(cost) {
		return 0, errorsmod.Wrapf(types.ErrInsufficientFunds, "a committee of %d costs up to %s%s; the job's verification budget has %s%s left", p.CommitteeSize, cost, p.Denom, job.VerificationLeft, p.Denom)
	}
	if err := k.escrowIn(ctx, ownerAddr, sdk.NewCoins(p.ChallengeBond)); err != nil {
		return 0, errorsmod.Wrapf(types.ErrInsufficientFunds, "challenge bond %s: %s", p.ChallengeBond, err)
	}
	d, err := k.openDispute(ctx, p, &job, &t, nil, ownerAddr, p.ChallengeBond.Amount)
	if err != nil {
		return 0, err
	}
	return d.Id, k.saveJob(ctx, job)
}

// GemmPositions are the entries a BUILTIN_GEMM reveal of work committed at commitHeight
// must open: drawn from the beacon's value for the block after the commitment (seeded by
// domain and ids: the task, or the pool and unit); beacon.ErrUnavailable until it is known.
func (k Keeper) GemmPositions(ctx context.Context, c pocp.Challenge, commitHeight int64, domain string, ids ...uint64) ([]pocp.Position, error) {
	gp, err := k.gfl.GetParams(ctx)
	if err != nil {
		return nil, err
	}
	return k.gemmPositions(ctx, gp, c, commitHeight, domain, ids...)
}

func (k Keeper) gemmPositions(ctx context.Context, gp gfltypes.Params, c pocp.Challenge, commitHeight int64, domain string, ids ...uint64) ([]pocp.Position, error) {
	seed, err := k.gfl.Seed(ctx, commitHeight+1, domain, ids...)
	if err != nil {
		return nil, err
	}
	return types.GemmSamplePositions(seed, c, gp.ChallengeSamples), nil
}

// verifyGemm checks a BUILTIN_GEMM reveal like a PoCP reveal: the entries sampled from the
// block after the commitment are recomputed, every Merkle path checked, and gas charged.
func (k Keeper) verifyGemm(ctx context.Context, c pocp.Challenge, root []byte, commitHeight int64, proofs []gfltypes.ChunkProof, domain string, ids ...uint64) error {
	gp, err := k.gfl.GetParams(ctx)
	if err != nil {
		return err
	}
	positions, err := k.gemmPositions(ctx, gp, c, commitHeight, domain, ids...)
	if err != nil {
		return errorsmod.Wrapf(types.ErrRevealNotOpen, "the sampling block %d: %s", commitHeight+1, err)
	}
	sdk.UnwrapSDKContext(ctx).GasMeter().ConsumeGas(pocp.VerifyTerms(c, int(gp.ChallengeSamples))*gp.VerifyGasPerKterm/1000, "gemm reveal verification")
	pp := make([]pocp.ChunkProof, len(proofs))
	for i, pr := range proofs {
		pp[i] = pocp.ChunkProof{Index: pr.Index, Chunk: pr.Chunk, Path: make([][32]byte, len(pr.Path))}
		for j, h := range pr.Path {
			if len(h) != 32 {
				return errorsmod.Wrapf(types.ErrInvalidReveal, "gemm_proofs[%d].path[%d] is %d bytes, must be 32", i, j, len(h))
			}
			copy(pp[i].Path[j][:], h)
		}
	}
	var r [32]byte
	copy(r[:], root)
	if err := pocp.VerifyReveal(c, r, positions, pp); err != nil {
		if errors.Is(err, pocp.ErrWrongEntry) {
			return errorsmod.Wrapf(types.ErrWrongResult, "gemm: %s", err)
		}
		return errorsmod.Wrapf(types.ErrInvalidReveal, "gemm: %s", err)
	}
	return nil
}
