package keeper

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/market/types"
)

// SubmitJob validates the spec, moves the whole budget (every replica's max price and tip,
// plus the verification budget) from the owner into escrow, and creates the job's task
// replicas: queued for the scheduler (ASSIGN) or waiting for the auction to close
// (AUCTION).
func (k Keeper) SubmitJob(ctx context.Context, ownerAddr sdk.AccAddress, spec types.JobSpec) (types.Job, error) {
	owner, err := k.addressString("owner", ownerAddr)
	if err != nil {
		return types.Job{}, err
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return types.Job{}, err
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	if err := spec.Validate(p, sdkCtx.BlockTime()); err != nil {
		return types.Job{}, err
	}
	if spec.Mode == types.ALLOCATION_MODE_AUCTION && spec.TotalTasks() > uint64(p.MaxAuctionTasks) {
		return types.Job{}, errorsmod.Wrapf(types.ErrInvalidJobSpec, "an AUCTION job has task_count x replicas = %d tasks, at most max_auction_tasks %d", spec.TotalTasks(), p.MaxAuctionTasks)
	}
	revealGas, revealCost, err := k.revealPrice(ctx, p, spec.Verification, spec.Builtin)
	if err != nil {
		return types.Job{}, err
	}
	if spec.MaxPricePerTask.Amount.LTE(sdkmath.NewIntFromUint64(revealCost)) {
		return types.Job{}, errorsmod.Wrapf(types.ErrInvalidJobSpec,
			"max_price_per_task %s: must exceed the reveal cost %dudps (reveal_gas %d x reveal_gas_price %s), which every quote includes",
			spec.MaxPricePerTask, revealCost, revealGas, p.RevealGasPrice)
	}
	// the escrow: the bank refuses a budget above the owner's spendable balance and says
	// what there was (no balance read before it: that cost every job a read of the account
	// and all its balances)
	budget := spec.Budget()
	if err := k.escrowIn(ctx, ownerAddr, sdk.NewCoins(sdk.NewCoin(p.Denom, budget))); err != nil {
		return types.Job{}, errorsmod.Wrapf(types.ErrInsufficientFunds, "the job's budget is %s%s, more than %s can spend: %s", budget, p.Denom, owner, err)
	}
	// the job's id and its task ids at once: one read and one write
	id, next, err := k.takeIDs(ctx, 1, spec.TotalTasks())
	if err != nil {
		return types.Job{}, err
	}
	job := types.Job{
		Id: id, Owner: owner, Spec: spec, Status: types.JOB_STATUS_ACTIVE, Escrow: budget,
		SubmittedHeight: sdkCtx.BlockHeight(), SubmittedTime: sdkCtx.BlockTime(), ClearingPrice: sdkmath.ZeroInt(),
		VerificationLeft: spec.VerificationBudget.Amount, RevealGas: revealGas, RevealCost: revealCost, FirstTaskId: next,
	}
	if spec.Runtime == types.RUNTIME_BUILTIN && spec.Image == types.BuiltinGemm {
		seed := k.gemmSeed(ctx, id)
		job.GemmSeed = seed[:]
	}
	if spec.Mode == types.ALLOCATION_MODE_AUCTION {
		job.Status = types.JOB_STATUS_BIDDING
		job.AuctionCloseHeight = sdkCtx.BlockHeight() + int64(p.AuctionWindowBlocks)
		if err := k.AuctionClose.Set(ctx, collections.Join(job.AuctionCloseHeight, id)); err != nil {
			return types.Job{}, err
		}
	}
	tasks := make([]types.Task, 0, int(spec.TaskCount)*int(spec.Replicas))
	for i := uint32(0); i < spec.TaskCount; i++ {
		for r := uint32(0); r < spec.Replicas; r++ {
			tid := next
			next++
			tasks = append(tasks, types.Task{
				Id: tid, JobId: id, Index: i, Replica: r, Status: types.TASK_STATUS_PENDING, Role: types.TASK_ROLE_PRIMARY,
				Price: sdkmath.ZeroInt(), Exposure: sdkmath.ZeroInt(), Paid: sdkmath.ZeroInt(), Reserved: spec.Reserved(),
				PendingHeight: sdk.UnwrapSDKContext(ctx).BlockHeight(),
			})
		}
	}
	if err := k.insertPrimaries(ctx, &job, tasks); err != nil {
		return types.Job{}, err
	}
	if err := k.JobDeadlines.Set(ctx, collections.Join(spec.Deadline, id)); err != nil {
		return types.Job{}, err
	}
	// the history's entry 0, the submission, is not stored: the job's record holds all it
	// says (submittedEntry), and the write was 7% of a submission's gas
	if p.MaxHistoryPerJob > 0 {
		job.HistoryLen = 1
	}
	if err := k.setJobSpec(ctx, &job, spec); err != nil {
		return types.Job{}, err
	}
	if err := k.storeNewJob(ctx, job); err != nil {
		return types.Job{}, err
	}
	ev, err := (&types.EventJobSubmitted{
		JobId: id, Owner: owner, Mode: spec.Mode, Tasks: uint32(spec.TotalTasks()), Escrow: budget,
	}).Event()
	if err != nil {
		return types.Job{}, err
	}
	sdkCtx.EventManager().EmitEvent(ev)
	return job, nil
}

// gemmSeed draws a BUILTIN gemm job's seed from the beacon's most recent value (nobody
// knew it when they signed the job), falling back to the job id alone at the first block.
func (k Keeper) gemmSeed(ctx context.Context, jobID uint64) [32]byte {
	if seed, err := k.gfl.RecentSeed(ctx, types.DomainGemmSeed, jobID); err == nil {
		return seed
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], jobID)
	return sha256.Sum256(append([]byte(types.DomainGemmSeed), b[:]...))
}

// groupKey orders the scheduler's groups: higher tip first, then earlier deadline, then
// older job; a job's roles in their enum order.
func groupKey(job types.Job, role types.TaskRole) collections.Quad[uint64, int64, uint64, int32] {
	tip := job.Spec.PriorityTip.Amount
	inv := uint64(0)
	if tip.IsUint64() {
		inv = math.MaxUint64 - tip.Uint64()
	}
	return collections.Join4(inv, job.Spec.Deadline.Unix(), job.Id, int32(role))
}

// CancelJob cancels a job for its owner. Cancelling is immediate for work not started and
// fair for work in progress:
//   - pending and assigned (not yet acked) tasks are cancelled and their escrow refunded
//     at once;
//   - running tasks are cancelled and their provider paid for the time it ran, pro rata of
//     max_duration (through the usual take), the rest refunded;
//   - committed and revealed tasks are finished work: they settle normally;
//   - open bids are returned.
//
// It returns what was refunded at once; the rest comes back as the remaining tasks end.
func (k Keeper) CancelJob(ctx context.Context, ownerAddr sdk.AccAddress, jobID uint64) (sdkmath.Int, error) {
	owner, err := k.addressString("owner", ownerAddr)
	if err != nil {
		return sdkmath.Int{}, err
	}
	job, err := k.GetJob(ctx, jobID)
	if err != nil {
		return sdkmath.Int{}, err
	}
	if job.Owner != owner {
		return sdkmath.Int{}, errorsmod.Wrapf(types.ErrNotOwner, "job %d belongs to %s", jobID, job.Owner)
	}
	if job.Status != types.JOB_STATUS_ACTIVE && job.Status != types.JOB_STATUS_BIDDING {
		return sdkmath.Int{}, errorsmod.Wrapf(types.ErrInvalidJobStatus, "job %d is %s", jobID, job.Status)
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return sdkmath.Int{}, err
	}
	before := job.Escrow
	if job.Status == types.JOB_STATUS_BIDDING {
		if err := k.returnOpenBids(ctx, &job, types.BID_STATUS_WITHDRAWN); err != nil {
			return sdkmath.Int{}, err
		}
		if err := k.AuctionClose.Remove(ctx, collections.Join(job.AuctionCloseHeight, jobID)); err != nil {
			return sdkmath.Int{}, err
		}
	}
	job.Status = types.JOB_STATUS_CANCELLED
	if err := k.addHistory(ctx, job, p, "JobCancelled", 0, 0, "cancelled by the owner"); err != nil {
		return sdkmath.Int{}, err
	}
	done, err := k.cancelPart(ctx, p, &job, cancelInline)
	if err != nil {
		return sdkmath.Int{}, err
	}
	if !done {
		// a big job: its other tasks are cancelled by the block work, a part a block
		if err := k.CancelSweeps.Set(ctx, collections.Join(sdk.UnwrapSDKContext(ctx).BlockHeight(), jobID)); err != nil {
			return sdkmath.Int{}, err
		}
	}
	if err := k.maybeFinishJob(ctx, &job, p); err != nil {
		return sdkmath.Int{}, err
	}
	if err := k.saveJob(ctx, job); err != nil {
		return sdkmath.Int{}, err
	}
	return before.Sub(job.Escrow), nil
}

// cancelJobPart continues the cancellation of a big job (the block work's "cancel"
// items): up to limit more of its tasks.
func (k Keeper) cancelJobPart(ctx sdk.Context, p types.Params, jobID uint64, limit int) (bool, error) {
	job, err := k.loadJob(ctx, jobID)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return true, nil
	} else if err != nil {
		return false, err
	}
	if job.FinishedHeight != 0 {
		return true, k.SweepCursors.Remove(ctx, collections.Join(sweepCancel, jobID))
	}
	done, err := k.cancelPart(ctx, p, &job, limit)
	if err != nil {
		return false, err
	}
	return done, k.saveJob(ctx, job)
}

// cancelPart cancels up to limit of a cancelled job's tasks after its cursor: pending and
// assigned ones at once (their escrow refunded), running ones with their provider paid
// for the time they ran, pro rata of max_duration; committed and revealed ones are
// finished work and settle normally.
func (k Keeper) cancelPart(ctx context.Context, p types.Params, job *types.Job, limit int) (bool, error) {
	now := sdk.UnwrapSDKContext(ctx).BlockTime()
	return k.sweep(sdk.UnwrapSDKContext(ctx), job, sweepCancel, limit, func(t types.Task) error {
		switch t.Status {
		case types.TASK_STATUS_PENDING, types.TASK_STATUS_ASSIGNED:
			if err := k.finishTask(ctx, p, job, &t, types.TASK_STATUS_CANCELLED, t.NodeId, "cancelled by the owner"); err != nil {
				return err
			}
		case types.TASK_STATUS_RUNNING:
			elapsed := max(now.Sub(t.StartedTime), 0)
			gross := t.Price.Add(job.Spec.PriorityTip.Amount)
			owed := gross.Mul(sdkmath.NewInt(int64(min(elapsed, job.Spec.MaxDuration)))).Quo(sdkmath.NewInt(int64(job.Spec.MaxDuration)))
			if err := k.pay(ctx, job, &t, p, owed); err != nil {
				return err
			}
			if err := k.finishTask(ctx, p, job, &t, types.TASK_STATUS_CANCELLED, t.NodeId, fmt.Sprintf("cancelled by the owner after %s; provider paid %s%s", elapsed, owed, p.Denom)); err != nil {
				return err
			}
		default:
			return nil
		}
		return k.afterMemberLeft(ctx, p, job, t)
	})
}

// primaryIDs is the range of a job's primary task ids, [first, end): they are numbered at
// submission shard by shard (first + index x replicas + replica). Empty for a job whose
// first task id is not known (its primaries were all pruned before the record held it).
func primaryIDs(job types.Job) (uint64, uint64) {
	if job.FirstTaskId == 0 {
		return 0, 0
	}
	return job.FirstTaskId, job.FirstTaskId + job.Spec.TotalTasks()
}

// walkJobTasks calls fn on a job's tasks (the job with its spec) in id order, or in
// reverse, from the id from on (inclusive; 0: from the first, or the last in reverse),
// until fn says stop: first its primaries, read by their ids' range in Tasks (no index
// entry of their own: it cost every submitted task a write), then the tasks added later
// (escalations, audits, committee members, with later ids), which alone the ByJob index
// holds. A pruned task is not there, so it is skipped.
func (k Keeper) walkJobTasks(ctx context.Context, job types.Job, from uint64, reverse bool, fn func(t types.Task) (bool, error)) error {
	first, end := primaryIDs(job)
	primaries := func() (bool, error) {
		lo, hi := first, end
		if from != 0 && !reverse {
			lo = max(lo, from)
		} else if from != 0 {
			hi = min(hi, from+1)
		}
		if lo >= hi {
			return false, nil
		}
		rng := new(collections.Range[uint64]).StartInclusive(lo).EndExclusive(hi)
		if reverse {
			rng = rng.Descending()
		}
		it, err := k.taskValues.Iterate(ctx, rng)
		if err != nil {
			return false, err
		}
		defer func() { _ = it.Close() }()
		for ; it.Valid(); it.Next() {
			t, err := it.Value()
			if err != nil {
				return false, err
			}
			if t.JobId != job.Id || t.Role != types.TASK_ROLE_PRIMARY {
				return false, fmt.Errorf("market: task %d is in job %d's primary ids [%d, %d) but is a %s of job %d", t.Id, job.Id, first, end, t.Role, t.JobId)
			}
			if stop, err := fn(t); stop || err != nil {
				return true, err
			}
		}
		return false, nil
	}
	added := func() (bool, error) {
		rng := collections.NewPrefixedPairRange[uint64, uint64](job.Id)
		switch {
		case from != 0 && reverse:
			rng = rng.EndInclusive(from)
		case from != 0:
			rng = rng.StartInclusive(from)
		}
		if reverse {
			rng = rng.Descending()
		}
		it, err := k.Tasks.Indexes.ByJob.Iterate(ctx, rng)
		if err != nil {
			return false, err
		}
		defer func() { _ = it.Close() }()
		for ; it.Valid(); it.Next() {
			id, err := it.PrimaryKey()
			if err != nil {
				return false, err
			}
			t, err := k.Tasks.Get(ctx, id)
			if err != nil {
				return false, err
			}
			if stop, err := fn(t); stop || err != nil {
				return true, err
			}
		}
		return false, nil
	}
	parts := []func() (bool, error){primaries, added}
	if reverse {
		parts[0], parts[1] = added, primaries
	}
	for _, part := range parts {
		if stop, err := part(); stop || err != nil {
			return err
		}
	}
	return nil
}

// liveJobTaskIDs returns up to n ids of an unfinished job's tasks after the id after, in id
// order, reading no task: its primaries' from their range (an unfinished job has them
// all; the escrow invariant checks it), then the added tasks' from the ByJob index.
func (k Keeper) liveJobTaskIDs(ctx context.Context, job types.Job, after uint64, n int) ([]uint64, error) {
	first, end := primaryIDs(job)
	var ids []uint64
	for id := max(first, after+1); id < end && len(ids) < n; id++ {
		ids = append(ids, id)
	}
	if len(ids) == n {
		return ids, nil
	}
	rng := collections.NewPrefixedPairRange[uint64, uint64](job.Id)
	if after != 0 {
		rng = rng.StartExclusive(after)
	}
	it, err := k.Tasks.Indexes.ByJob.Iterate(ctx, rng)
	if err != nil {
		return nil, err
	}
	defer func() { _ = it.Close() }()
	for ; it.Valid() && len(ids) < n; it.Next() {
		id, err := it.PrimaryKey()
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// jobTasks returns every task of a job (with its spec), in id order.
func (k Keeper) jobTasks(ctx context.Context, job types.Job) ([]types.Task, error) {
	var out []types.Task
	err := k.walkJobTasks(ctx, job, 0, false, func(t types.Task) (bool, error) {
		out = append(out, t)
		return false, nil
	})
	return out, err
}

// revealPrice is the gas a provider pays to reveal one BUILTIN_GEMM task or unit of these
// arguments, and that gas at reveal_gas_price (udps, rounded up); 0, 0 for other
// verification classes, whose reveals carry no proofs.
func (k Keeper) revealPrice(ctx context.Context, p types.Params, v types.VerificationClass, b types.BuiltinArgs) (uint64, uint64, error) {
	if v != types.VERIFICATION_CLASS_BUILTIN_GEMM {
		return 0, 0, nil
	}
	gp, err := k.gfl.GetParams(ctx)
	if err != nil {
		return 0, 0, err
	}
	gas := types.GemmRevealGas(b, gp)
	return gas, types.RevealCost(gas, p.RevealGasPrice), nil
}
