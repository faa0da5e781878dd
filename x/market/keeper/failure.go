package keeper

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/sdkint"
	"github.com/flopsnet/flops/internal/validate"
	"github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// Failure is a result (x/market/README.md, "Failure is a result"). A provider whose run
// of a primary task failed on the job's side of the contract (the command exited
// non-zero, an input did not match, the image could not be pulled, out of memory, past
// max_duration) reports it with the reason, the exit code and the root of the captured
// logs. The chain does not take the provider's word for it: the task goes back to the
// queue, away from every node of the reporting operator, and its next run decides.
//
//   - Another operator's node reports failure too (the task's next run, or another replica
//     of the same shard whose own report waits to be confirmed): CONFIRMED. The task fails (the job's
//     fault); both providers are paid the confirmed time, the shorter of their two
//     times, at their agreed prices, together never more than the replica's
//     reservation; nobody is slashed.
//   - The task settles (another node produced a verified result): the report is REFUTED.
//     Its provider is slashed failure_penalty_multiple x the task's value (not a share
//     of its whole bond: see refuteFailure), burned (neither the owner nor the refuting
//     provider gains: a job that fails on some nodes only could otherwise farm slashes),
//     and is not paid.
//     A NONE job's result is verified by nothing (any node could make one up to get an
//     honest report refuted), and NONE is never slashed for correctness: its report is
//     UNCONFIRMED instead, as below, and holds no collateral of its own while pending.
//   - The task ends otherwise (expired, out of reassignments, a wrong result) after another
//     operator's node was given it: the report is UNCONFIRMED and treated as an abandoned
//     task (abandon_slash_ppm, at most failure_penalty_multiple x the task's value,
//     burned).
//   - The task ends before any other operator's node was given it (none eligible and free
//     until its deadline): UNDECIDED, neither paid nor slashed. Nothing shows the report
//     false, and a client can shape a job that only one operator's nodes can run (a region,
//     class, runtime or disk that only they offer): slashing the report then would let
//     that client burn an honest provider's collateral with failing jobs at no cost.
//   - The owner cancels first: CANCELLED; the provider is paid its time, as a cancelled
//     running task is.
//
// A pending report reserves failure_penalty_multiple x the task's value of its
// provider's collateral, and gives the task its own deadline (the later of the job's and
// the report + max_duration + verification_timeout), so that the job's deadline cannot
// leave an honest report unconfirmed.

// Failure is what a provider says about a failed run.
type Failure struct {
	Reason   types.FailureReason
	ExitCode int32
	LogRoot  []byte
	Detail   string
}

func (f Failure) validate() error {
	if err := validate.Size("log_root", len(f.LogRoot), sha256.Size); err != nil {
		return err
	}
	if err := validate.Size("detail", len(f.Detail), types.MaxFailureDetailLen); err != nil {
		return err
	}
	if _, ok := types.FailureReason_name[int32(f.Reason)]; !ok || f.Reason == types.FAILURE_REASON_UNSPECIFIED {
		return errorsmod.Wrapf(types.ErrInvalidFailure, "reason %s: must be one of exit, input, image, out-of-memory, timeout", f.Reason)
	}
	if len(f.LogRoot) != sha256.Size {
		return errorsmod.Wrapf(types.ErrInvalidFailure, "log_root is %d bytes, must be 32", len(f.LogRoot))
	}
	if !types.PrintableLine(f.Detail) {
		return errorsmod.Wrapf(types.ErrInvalidFailure, "detail must be printable UTF-8 on one line")
	}
	return nil
}

// pendingFailure is the index of the task's report waiting for confirmation, or -1.
func pendingFailure(t types.Task) int {
	for i, f := range t.Failures {
		if f.Status == types.FAILURE_STATUS_PENDING {
			return i
		}
	}
	return -1
}

// ReportFailure records a running primary's failure report: it confirms another
// operator's pending report of the task (the task fails, both are paid the confirmed
// time), or it waits for the task's next run elsewhere (the task is queued again).
func (k Keeper) ReportFailure(ctx context.Context, provider sdk.AccAddress, id uint64, f Failure) (types.FailureStatus, error) {
	if err := f.validate(); err != nil {
		return 0, err
	}
	t, job, err := k.providerTask(ctx, provider, id, types.TASK_STATUS_RUNNING)
	if err != nil {
		return 0, err
	}
	if t.Role != types.TASK_ROLE_PRIMARY {
		return 0, errorsmod.Wrapf(types.ErrInvalidFailure, "task %d is a %s: only a job's replicas report failure; a verification task reruns work that already produced a result", id, t.Role)
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	now := sdkCtx.BlockTime()
	if now.After(t.RunDeadline) {
		return 0, errorsmod.Wrapf(types.ErrDeadlinePassed, "task %d: run deadline %s", id, t.RunDeadline)
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return 0, err
	}
	prev := pendingFailure(t)
	if prev >= 0 && t.Failures[prev].Provider == t.Provider {
		// never assigned so (the scheduler keeps a report's operator away): a guard
		return 0, errorsmod.Wrapf(types.ErrInvalidFailure, "task %d: %s cannot confirm its own report", id, t.Provider)
	}
	report := types.FailureReport{
		Provider: t.Provider, NodeId: t.NodeId, Reason: f.Reason, ExitCode: f.ExitCode, LogRoot: f.LogRoot, Detail: f.Detail,
		Height: sdkCtx.BlockHeight(), TimeUsed: max(now.Sub(t.StartedTime), 0), Price: t.Price,
		Exposure: sdkmath.ZeroInt(), Status: types.FAILURE_STATUS_PENDING, Paid: sdkmath.ZeroInt(), RerunSlashed: sdkmath.ZeroInt(),
	}
	if prev >= 0 {
		return types.FAILURE_STATUS_CONFIRMED, k.confirmFailure(ctx, p, &job, &t, prev, report)
	}
	// a replica of the same shard waiting for its own confirmation, reported by another
	// operator and not yet placed again: the two reports confirm each other
	if sib, i, found, err := k.pendingSibling(ctx, job, t); err != nil {
		return 0, err
	} else if found {
		return types.FAILURE_STATUS_CONFIRMED, k.confirmSiblings(ctx, p, &job, &sib, i, &t, report)
	}
	// waiting for its confirmation, the report holds collateral in place of the run's:
	// what a refuted report is slashed at least. A NONE job's report is never refuted
	// (settleFailures), so it holds none
	if job.Spec.Verification != types.VERIFICATION_CLASS_NONE {
		report.Exposure = exposureOfFailure(p, taskValue(job, t.Role, t.Price))
	}
	from := t.NodeId
	deadline := now.Add(job.Spec.MaxDuration + p.VerificationTimeout)
	if d := taskDeadline(job, t); d.After(deadline) {
		deadline = d
	}
	if err := k.transition(ctx, p, &job, &t, types.TASK_STATUS_PENDING, step{history: "TaskFailureReported", node: from, detail: failureWords(report) + "; the task runs again on another operator's node to confirm it"}, func(t *types.Task) {
		t.ExcludedNodes = append(t.ExcludedNodes, from)
		t.Failures = append(t.Failures, report)
		t.Deadline = deadline
		t.NodeId, t.Provider, t.Price, t.Exposure, t.BidNode = 0, "", sdkmath.ZeroInt(), sdkmath.ZeroInt(), 0
		t.Commitment, t.CommitHeight, t.RevealDeadlineHeight, t.AckDeadlineHeight = nil, 0, 0, 0
		t.Progress, t.ProgressHeight = "", 0
	}); err != nil {
		return 0, err
	}
	return types.FAILURE_STATUS_PENDING, k.emitFailure(ctx, t, report)
}

// confirmFailure ends a task two operators reported failed: each is paid the confirmed
// time (the shorter of the two), the first report first, together at most what the
// replica reserved; the task fails without a slash.
func (k Keeper) confirmFailure(ctx context.Context, p types.Params, job *types.Job, t *types.Task, prev int, report types.FailureReport) error {
	confirmed := min(t.Failures[prev].TimeUsed, report.TimeUsed)
	t.Failures = append(t.Failures, report)
	var paid []string
	for _, i := range []int{prev, len(t.Failures) - 1} {
		r := &t.Failures[i]
		if err := k.payReport(ctx, p, job, t, r, confirmed, types.FAILURE_STATUS_CONFIRMED); err != nil {
			return err
		}
		paid = append(paid, fmt.Sprintf("%s%s to node %d", r.Paid, p.Denom, r.NodeId))
	}
	first := t.Failures[prev]
	reason := fmt.Sprintf("failed on two operators' nodes (%d, %d): %s; %s of confirmed time paid (%s)",
		first.NodeId, report.NodeId, failureWords(report), confirmed.Round(time.Second), strings.Join(paid, ", "))
	if err := k.finishTask(ctx, p, job, t, types.TASK_STATUS_FAILED, t.NodeId, reason); err != nil {
		return err
	}
	return k.afterMemberLeft(ctx, p, job, *t)
}

// payReport pays a report's provider its price for ran (types.TimePrice), at most what
// is left of the replica's reservation, decides the report with status and emits it.
func (k Keeper) payReport(ctx context.Context, p types.Params, job *types.Job, t *types.Task, r *types.FailureReport, ran time.Duration, status types.FailureStatus) error {
	owed := types.TimePrice(r.Price, ran, job.Spec.MaxDuration, p.BillingGranularity)
	if left := t.Reserved.Sub(t.Paid); owed.GT(left) {
		owed = left
	}
	if err := k.payTo(ctx, job, t, p, r.Provider, owed); err != nil {
		return err
	}
	r.Paid = owed
	if err := k.decideFailure(ctx, r, status); err != nil {
		return err
	}
	return k.emitFailure(ctx, *t, *r)
}

// confirmByVerification confirms a task's pending failure report when the verification
// of the result that followed it decided that the job fails (its majority, the given
// members, answered FailedRoot): the report is paid as confirmFailure pays, for the
// shorter of its run and the quickest of those members' runs, out of the task's
// reservation. Without it the report of a job that fails, refuted by a made-up result
// that then lost, ended unconfirmed and its honest provider was slashed.
func (k Keeper) confirmByVerification(ctx context.Context, p types.Params, job *types.Job, t *types.Task, majority []types.Task) error {
	i := pendingFailure(*t)
	if i < 0 {
		return nil
	}
	r := &t.Failures[i]
	confirmed := r.TimeUsed
	for _, m := range majority {
		confirmed = min(confirmed, max(m.CommitTime.Sub(m.StartedTime), 0))
	}
	if err := k.payReport(ctx, p, job, t, r, confirmed, types.FAILURE_STATUS_CONFIRMED); err != nil {
		return err
	}
	return k.addHistory(ctx, *job, p, "FailureConfirmed", t.Id, r.NodeId, fmt.Sprintf(
		"node %d's failure report: the verification of the result that followed it found that the job fails; %s of confirmed time paid (%s%s)",
		r.NodeId, confirmed.Round(time.Second), r.Paid, p.Denom))
}

// confirmedFailedReplicas counts a shard's primary replicas that ended in a confirmed
// failure: each is a vote that the job fails when the shard's results are compared
// (decideShard).
func confirmedFailedReplicas(shard []types.Task) int {
	return countFunc(shard, func(t types.Task) bool {
		return t.Role == types.TASK_ROLE_PRIMARY && t.Status == types.TASK_STATUS_FAILED &&
			slices.ContainsFunc(t.Failures, func(f types.FailureReport) bool { return f.Status == types.FAILURE_STATUS_CONFIRMED })
	})
}

// countFunc counts the elements of s for which f holds.
func countFunc[T any](s []T, f func(T) bool) int {
	n := 0
	for _, v := range s {
		if f(v) {
			n++
		}
	}
	return n
}

// refuteFailure slashes a provider whose failure report, or failed-run answer, another
// run refuted: amount (failure_penalty_multiple x the task's value, rounded up to a whole
// ppm of its collateral), burned whole (a job that fails on some runs only must not farm
// collateral for its owner), and a failed verification on its node's record. Not a share
// of the whole bond as well: such a job makes honest providers' reports refuted, and with
// abandon_slash_ppm of the bond as a floor, a client burned a large provider's collateral
// for the price of one task each time; 2x the value still costs a false report more than
// it could gain (the run's pay) and more than giving the task up (abandoned).
func (k Keeper) refuteFailure(ctx context.Context, provider string, node uint64, amount sdkmath.Int, jobID, taskID uint64) error {
	// slash's exposure floor with no fraction of its own: the least fraction of the
	// collateral (bonded and unbonding) that reaches amount
	ev := sstypes.SlashEvidence{NodeId: node, JobId: jobID, TaskId: taskID}
	if err := k.slash(ctx, provider, 0, amount, sstypes.SLASH_REASON_FALSE_FAILURE, "", nil, nil, ev); err != nil {
		return err
	}
	return k.nodeHook(ctx, node, func() error { return k.hooks().AfterTaskVerified(ctx, node, false) })
}

// pendingSibling finds another primary replica of the task's shard whose failure report,
// from another operator, waits for its confirmation before the replica is placed again.
func (k Keeper) pendingSibling(ctx context.Context, job types.Job, t types.Task) (types.Task, int, bool, error) {
	siblings, err := k.siblings(ctx, job, t)
	if err != nil {
		return types.Task{}, 0, false, err
	}
	for _, s := range siblings {
		if s.Role != types.TASK_ROLE_PRIMARY || s.Status != types.TASK_STATUS_PENDING {
			continue
		}
		if i := pendingFailure(s); i >= 0 && s.Failures[i].Provider != t.Provider {
			return s, i, true, nil
		}
	}
	return types.Task{}, 0, false, nil
}

// confirmSiblings ends two replicas of one shard that two operators reported failed:
// each report is paid the confirmed time (the shorter of the two) from its own replica's
// reservation, and both replicas fail without a slash.
func (k Keeper) confirmSiblings(ctx context.Context, p types.Params, job *types.Job, sib *types.Task, i int, t *types.Task, report types.FailureReport) error {
	confirmed := min(sib.Failures[i].TimeUsed, report.TimeUsed)
	first := &sib.Failures[i]
	if err := k.payReport(ctx, p, job, sib, first, confirmed, types.FAILURE_STATUS_CONFIRMED); err != nil {
		return err
	}
	t.Failures = append(t.Failures, report)
	if err := k.payReport(ctx, p, job, t, &t.Failures[len(t.Failures)-1], confirmed, types.FAILURE_STATUS_CONFIRMED); err != nil {
		return err
	}
	reason := fmt.Sprintf("failed on two operators' nodes (%d, %d; replicas %d and %d): %s; %s of confirmed time paid to each",
		first.NodeId, report.NodeId, sib.Id, t.Id, failureWords(report), confirmed.Round(time.Second))
	if err := k.finishTask(ctx, p, job, sib, types.TASK_STATUS_FAILED, 0, reason); err != nil {
		return err
	}
	if err := k.finishTask(ctx, p, job, t, types.TASK_STATUS_FAILED, t.NodeId, reason); err != nil {
		return err
	}
	if err := k.afterMemberLeft(ctx, p, job, *sib); err != nil {
		return err
	}
	return k.afterMemberLeft(ctx, p, job, *t)
}

// settleFailures decides the pending failure report of a task that becomes final with
// the given status (finishTask calls it before the task's reservation is refunded):
// SETTLED refutes it (a NONE job's result leaves it unconfirmed: nothing verified it),
// CANCELLED pays its time, any other end leaves it unconfirmed, or
// undecided when no other operator's node was given the task.
func (k Keeper) settleFailures(ctx context.Context, p types.Params, job *types.Job, t *types.Task, status types.TaskStatus) error {
	i := pendingFailure(*t)
	if i < 0 {
		return nil
	}
	r := &t.Failures[i]
	ev := sstypes.SlashEvidence{NodeId: r.NodeId, JobId: t.JobId, TaskId: t.Id}
	unverified := job.Spec.Verification == types.VERIFICATION_CLASS_NONE
	switch {
	case status == types.TASK_STATUS_SETTLED && !unverified:
		if err := k.decideFailure(ctx, r, types.FAILURE_STATUS_REFUTED); err != nil {
			return err
		}
		if err := k.refuteFailure(ctx, r.Provider, r.NodeId, r.Exposure, t.JobId, t.Id); err != nil {
			return err
		}
		if err := k.addHistory(ctx, *job, p, "FailureRefuted", t.Id, r.NodeId, fmt.Sprintf("node %d's failure report: the task settled on node %d; its provider is slashed", r.NodeId, t.NodeId)); err != nil {
			return err
		}
	case status == types.TASK_STATUS_CANCELLED:
		return k.payReport(ctx, p, job, t, r, r.TimeUsed, types.FAILURE_STATUS_CANCELLED)
	case !r.Rerun:
		if err := k.decideFailure(ctx, r, types.FAILURE_STATUS_UNDECIDED); err != nil {
			return err
		}
		if err := k.addHistory(ctx, *job, p, "FailureUndecided", t.Id, r.NodeId, fmt.Sprintf("node %d's failure report: no other operator's node was given the task before it ended; neither paid nor slashed", r.NodeId)); err != nil {
			return err
		}
	default:
		if err := k.decideFailure(ctx, r, types.FAILURE_STATUS_UNCONFIRMED); err != nil {
			return err
		}
		detail := fmt.Sprintf("node %d's failure report: no other run decided it; treated as an abandoned task", r.NodeId)
		if status == types.TASK_STATUS_SETTLED {
			// a NONE job's result is nobody's evidence: it could be made up (nothing
			// checks it), and a slash for a wrong report would be a correctness slash
			detail = fmt.Sprintf("node %d's failure report: the task settled on node %d with a result the job does not verify (NONE), which neither confirms nor refutes it; treated as an abandoned task", r.NodeId, t.NodeId)
		}
		if err := k.slashUnconfirmed(ctx, p, *job, *t, r, status, ev); err != nil {
			return err
		}
		if err := k.addHistory(ctx, *job, p, "FailureUnconfirmed", t.Id, r.NodeId, detail); err != nil {
			return err
		}
	}
	return k.emitFailure(ctx, *t, *r)
}

// addRerunSlashed adds to the task's pending failure report what the provider of a run
// given the task since (another operator's: the scheduler keeps the report's away) was
// slashed for that run. An unconfirmed report is slashed at most that much
// (settleFailures).
func addRerunSlashed(t *types.Task, provider string, amount sdkmath.Int) {
	i := pendingFailure(*t)
	if i < 0 || provider == t.Failures[i].Provider || !amount.IsPositive() {
		return
	}
	r := &t.Failures[i]
	r.RerunSlashed = sdkint.OrZero(r.RerunSlashed).Add(amount)
}

// slashUnconfirmed slashes an unconfirmed report as an abandoned task (abandoned):
// abandon_slash_ppm of its provider's collateral, at most failure_penalty_multiple x the
// task's value, burned, with a lapse in its reputation; but never more than giving the
// task up cost the runs that left the report undecided (rerun_slashed: their lapses,
// missed reveals, wrong results), or, for a NONE job's settled result, than giving it up
// would have cost the provider that settled it (abandon_slash_ppm of its bonded
// collateral, at most failure_penalty_multiple x its value). Otherwise a client whose own
// node (under another account, with a small bond) is the only other one its failing job
// can run on has that node lapse the rerun, or settle a made-up result of a NONE job, and
// burns abandon_slash_ppm of the honest reporter's bond, however large, for as much of
// its own small one or for nothing. A
// false report still costs its provider as much as the honest run it put to work, so it
// is no free way out of a task (MsgReleaseTask costs abandon_slash_ppm). A report no run
// was slashed for (the task ended while its rerun ran) costs nothing. A report recorded
// before rerun_slashed existed has none: the rate, at most the value's multiple.
func (k Keeper) slashUnconfirmed(ctx context.Context, p types.Params, job types.Job, t types.Task, r *types.FailureReport, status types.TaskStatus, ev sstypes.SlashEvidence) error {
	limit := r.RerunSlashed
	if status == types.TASK_STATUS_SETTLED {
		settler, err := k.acc(t.Provider)
		if err != nil {
			return err
		}
		c, err := k.collateral.GetCollateral(ctx, settler)
		if err != nil {
			return err
		}
		if limit, err = sstypes.PPMOf(c.Bonded, uint64(p.AbandonSlashPpm)); err != nil {
			return err
		}
		limit = sdkmath.MinInt(limit, jobLimit(p, taskValue(job, t.Role, t.Price)))
	}
	if !limit.IsNil() && !limit.IsPositive() {
		return nil
	}
	if _, err := k.abandoned(ctx, p, r.Provider, p.AbandonSlashPpm, taskValue(job, t.Role, r.Price), limit, sstypes.SLASH_REASON_ABANDONED_TASK, ev); err != nil {
		return err
	}
	return k.nodeHook(ctx, r.NodeId, func() error { return k.hooks().AfterTaskLapsed(ctx, r.NodeId, "failure report unconfirmed") })
}

// decideFailure gives a report its final status; the exposure a pending one holds is
// released here (the task's transition that follows no longer sees it pending). A report
// that confirms another never held any: the task's run did.
func (k Keeper) decideFailure(ctx context.Context, r *types.FailureReport, status types.FailureStatus) error {
	if r.Status == types.FAILURE_STATUS_PENDING && !r.Exposure.IsNil() && r.Exposure.IsPositive() {
		if err := k.releaseExposure(ctx, r.Provider, r.Exposure); err != nil {
			return err
		}
	}
	r.Status = status
	return nil
}

// nodeHook calls a reputation hook for a reporting node unless the node was deleted
// since its report (a record for it would then outlive it).
func (k Keeper) nodeHook(ctx context.Context, node uint64, fn func() error) error {
	if has, err := k.Slots.Has(ctx, node); err != nil || !has {
		return err
	}
	return fn()
}

// exposureOfFailure is the collateral a pending failure report of the given task value
// reserves: what a refuted report is slashed at least.
func exposureOfFailure(p types.Params, value sdkmath.Int) sdkmath.Int {
	return value.MulRaw(int64(p.FailurePenaltyMultiple))
}

// failureHold is the exposure a task's pending failure report holds.
func failureHold(t types.Task) (string, sdkmath.Int) {
	if i := pendingFailure(t); i >= 0 && !t.Failures[i].Exposure.IsNil() && t.Failures[i].Exposure.IsPositive() {
		return t.Failures[i].Provider, t.Failures[i].Exposure
	}
	return "", sdkmath.Int{}
}

func (k Keeper) emitFailure(ctx context.Context, t types.Task, r types.FailureReport) error {
	paid := ""
	if !r.Paid.IsNil() && r.Paid.IsPositive() {
		paid = r.Paid.String()
	}
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventFailureReport{
		TaskId: t.Id, JobId: t.JobId, NodeId: r.NodeId, Provider: r.Provider, Reason: r.Reason, ExitCode: r.ExitCode,
		LogRoot: r.LogRoot, Status: r.Status, Paid: paid,
	})
}

// failureWords says a report in words for the job's history.
func failureWords(r types.FailureReport) string {
	w := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(r.Reason.String(), "FAILURE_REASON_"), "_", " "))
	if r.Reason == types.FAILURE_REASON_EXIT {
		w = fmt.Sprintf("exit code %d", r.ExitCode)
	}
	s := fmt.Sprintf("%s on node %d after %s (logs %s)", w, r.NodeId, r.TimeUsed.Round(time.Second), hex.EncodeToString(r.LogRoot))
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	return s
}
