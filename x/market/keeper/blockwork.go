package keeper

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// The market's block work (EndBlock). Two budgets of gas, both params: the due work
// (queue_gas_per_block) and the scheduler (assign_gas_per_block). Every unit of work
// runs through its budget atomically (internal/blockhook): a unit the budget cuts short
// is not written and waits for the next block, in its queue. Items that are big by
// nature run in parts of a bounded size from a cursor: a job's expiry and cancellation
// (sweepChunk tasks a part), a node's lapsed heartbeat (lapseChunk tasks), a job's pruning
// (pruneChunk tasks). The order: retries of failed items, pool claims past their reveal
// deadline, auction closes, ack timeouts, lapsed heartbeats, run deadlines, reveal
// deadlines, audit draws, settlements, job deadlines, cancellations, prunes; then the
// scheduler. max_timeouts_per_block still caps the queue entries taken per block.
//
// An item that fails (an error or a panic: nothing of it is written) leaves its queue for
// the retries, due again 1, 2, 4 and 8 blocks later; after blockhook.MaxAttempts failures
// it is resolved by its kind's rule (the resolve* functions below, each saying what it
// does), so that no escrow, deposit, exposure or GPU stays held by an item that cannot be
// processed.

// Item kinds of the market's block work.
const (
	kindAuction   = types.ItemAuction
	kindAck       = types.ItemAck
	kindHeartbeat = types.ItemHeartbeat
	kindRun       = types.ItemRun
	kindReveal    = types.ItemReveal
	kindAudit     = types.ItemAudit
	kindSettle    = types.ItemSettle
	kindDeadline  = types.ItemDeadline
	kindCancel    = types.ItemCancel
	kindPrune     = types.ItemPrune
	kindUnit      = types.ItemUnit
	kindAssign    = types.ItemAssign
	kindPoolPrune = types.ItemPoolPrune
)

// The sizes of the parts of big items: small enough that a part is a small fraction of a
// block's budget (TestBlockWorkPartsFitTheBudget measures them).
const (
	sweepChunk = 32
	lapseChunk = 16
	pruneChunk = 128
	// cancelInline tasks are cancelled in the MsgCancelJob itself; the rest by the block
	// work.
	cancelInline = 64
)

// Sweep kinds of SweepCursors.
const (
	sweepExpire = types.SweepExpire
	sweepCancel = types.SweepCancel
)

// EndBlocker runs the market's block work within its budgets.
func (k Keeper) EndBlocker(goCtx context.Context) error {
	ctx := sdk.UnwrapSDKContext(goCtx)
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	if err := k.sortBlockWrites(ctx); err != nil {
		return err
	}
	qb, ab := blockhook.NewBudget(p.QueueGasPerBlock), blockhook.NewBudget(p.AssignGasPerBlock)
	defer func() {
		k.wiring.lastWork = BlockWork{Height: ctx.BlockHeight(), QueueGas: qb.Used(), QueueLimit: qb.Limit(), AssignGas: ab.Used(), AssignLimit: ab.Limit()}
	}()
	queue := blockhook.NewRunner(types.ModuleName, qb, k.Retries, k.kinds(p)...)
	if err := k.runDueWork(ctx, p, queue); err != nil && !errors.Is(err, blockhook.ErrBudgetSpent) {
		return err
	}
	assign := blockhook.NewRunner(types.ModuleName, ab, k.Retries, k.kinds(p)...)
	if err := k.assignPending(ctx, p, assign); err != nil && !errors.Is(err, blockhook.ErrBudgetSpent) {
		return err
	}
	// last: the block's moves of the queue (its txs' and this EndBlocker's) into its counts
	return k.foldQueueCounts(ctx)
}

// sortBlockWrites has the SDK's cache store of the block sort the market's writes of the
// block's transactions into its sorted index at once, before EndBlock opens its
// iterators. The store keeps its writes unsorted until an iterator opens; when they are
// many (a block of 2,000 submissions leaves about 16,000), an iterator's opening sorts
// them all but moves only those in its range (and about a thousand more) into the index,
// so each of EndBlock's dozen queue iterators sorted most of the block's writes again.
// An iterator over the whole store moves them all, once (opened and closed: it reads
// nothing). It changes no state and charges no budget (the block's context, not a unit's):
// BenchmarkEndBlockAssignSameBlock.
func (k Keeper) sortBlockWrites(ctx sdk.Context) error {
	it, err := k.storeService.OpenKVStore(ctx).Iterator(nil, nil)
	if err != nil {
		return err
	}
	return it.Close()
}

// runDueWork takes the due queues in order until the budget or the entry cap runs out.
func (k Keeper) runDueWork(ctx sdk.Context, p types.Params, r *blockhook.Runner) error {
	left := int(p.MaxTimeoutsPerBlock)
	if err := r.Retry(ctx, left); err != nil {
		return err
	}
	h := ctx.BlockHeight()
	byHeight := new(collections.Range[collections.Pair[int64, uint64]]).EndInclusive(collections.Join(h, uint64(math.MaxUint64)))
	byTime := new(collections.Range[collections.Pair[time.Time, uint64]]).EndInclusive(collections.Join(ctx.BlockTime(), uint64(math.MaxUint64)))
	byID := func(kind string) func(collections.Pair[int64, uint64]) blockhook.Item {
		return func(key collections.Pair[int64, uint64]) blockhook.Item {
			return blockhook.Item{Kind: kind, ID: key.K2()}
		}
	}
	byTimeID := func(kind string) func(collections.Pair[time.Time, uint64]) blockhook.Item {
		return func(key collections.Pair[time.Time, uint64]) blockhook.Item {
			return blockhook.Item{Kind: kind, ID: key.K2()}
		}
	}
	units := new(collections.Range[collections.Triple[int64, uint64, uint64]]).
		EndInclusive(collections.Join3(h, uint64(math.MaxUint64), uint64(math.MaxUint64)))
	steps := []func(limit int) (int, error){
		func(n int) (int, error) {
			return blockhook.Queue(ctx, r, kindUnit, k.UnitDeadlines, units, func(key collections.Triple[int64, uint64, uint64]) blockhook.Item {
				return blockhook.Item{Kind: kindUnit, ID: key.K2(), Sub: key.K3()}
			}, n)
		},
		func(n int) (int, error) {
			return blockhook.Queue(ctx, r, kindAuction, k.AuctionClose, byHeight, byID(kindAuction), n)
		},
		func(n int) (int, error) {
			return blockhook.Queue(ctx, r, kindAck, k.AckDeadlines, byHeight, byID(kindAck), n)
		},
		func(n int) (int, error) {
			return blockhook.Queue(ctx, r, kindHeartbeat, k.HeartbeatDue, byHeight, byID(kindHeartbeat), n)
		},
		func(n int) (int, error) {
			return blockhook.Queue(ctx, r, kindRun, k.RunDeadlines, byTime, byTimeID(kindRun), n)
		},
		func(n int) (int, error) {
			return blockhook.Queue(ctx, r, kindReveal, k.RevealDeadlines, byHeight, byID(kindReveal), n)
		},
		func(n int) (int, error) {
			return blockhook.Queue(ctx, r, kindAudit, k.AuditDraws, byHeight, byID(kindAudit), n)
		},
		func(n int) (int, error) {
			return blockhook.Queue(ctx, r, kindSettle, k.SettleQueue, byHeight, byID(kindSettle), n)
		},
		func(n int) (int, error) {
			return blockhook.Queue(ctx, r, kindDeadline, k.JobDeadlines, byTime, byTimeID(kindDeadline), n)
		},
		func(n int) (int, error) {
			return blockhook.Queue(ctx, r, kindCancel, k.CancelSweeps, byHeight, byID(kindCancel), n)
		},
		func(n int) (int, error) {
			return blockhook.Queue(ctx, r, kindPrune, k.PruneQueue, byHeight, byID(kindPrune), n)
		},
		func(n int) (int, error) {
			return blockhook.Queue(ctx, r, kindPoolPrune, k.PoolPruneQueue, byHeight, byID(kindPoolPrune), n)
		},
	}
	for _, step := range steps {
		if left <= 0 {
			return nil
		}
		n, err := step(left)
		left -= n
		if err != nil {
			return err
		}
	}
	return nil
}

// kinds are the market's block work items: what each does, and its rule when it keeps
// failing.
func (k Keeper) kinds(p types.Params) []blockhook.Kind {
	once := func(fn func(ctx sdk.Context, id uint64) error) blockhook.Handler {
		return func(ctx sdk.Context, it blockhook.Item) (bool, error) { return true, fn(ctx, it.ID) }
	}
	lapseKind := func(name string, want types.TaskStatus, reason string, ppm uint32, sr sstypes.SlashReason) blockhook.Kind {
		return blockhook.Kind{
			Name: name,
			Do: once(func(ctx sdk.Context, id uint64) error {
				return k.lapseIf(ctx, p, id, want, reason, ppm, sr)
			}),
			Resolve: func(ctx sdk.Context, it blockhook.Item) (string, error) { return k.resolveTask(ctx, p, it.ID, want) },
		}
	}
	return []blockhook.Kind{
		{Name: kindAuction, Do: once(func(ctx sdk.Context, id uint64) error { return k.closeAuction(ctx, p, id) }),
			Resolve: func(ctx sdk.Context, it blockhook.Item) (string, error) { return k.resolveAuction(ctx, p, it.ID) }},
		lapseKind(kindAck, types.TASK_STATUS_ASSIGNED, fmt.Sprintf("not acked within %d blocks", p.AckTimeoutBlocks), p.AbandonSlashPpm, sstypes.SLASH_REASON_ABANDONED_TASK),
		{Name: kindHeartbeat, Do: func(ctx sdk.Context, it blockhook.Item) (bool, error) { return k.heartbeatLapsed(ctx, p, it.ID) },
			Resolve: func(ctx sdk.Context, it blockhook.Item) (string, error) { return k.resolveHeartbeat(ctx, it.ID) }},
		lapseKind(kindRun, types.TASK_STATUS_RUNNING, "no result by the run deadline", p.AbandonSlashPpm, sstypes.SLASH_REASON_ABANDONED_TASK),
		lapseKind(kindReveal, types.TASK_STATUS_COMMITTED, "commitment never revealed", p.MissedRevealSlashPpm, sstypes.SLASH_REASON_MISSED_REVEAL),
		{Name: kindAudit, Do: once(func(ctx sdk.Context, id uint64) error { return k.drawAudit(ctx, p, id) }),
			Resolve: func(ctx sdk.Context, it blockhook.Item) (string, error) { return k.resolveAudit(ctx, p, it.ID) }},
		{Name: kindSettle, Do: once(func(ctx sdk.Context, id uint64) error { return k.settle(ctx, p, id) }),
			Resolve: func(ctx sdk.Context, it blockhook.Item) (string, error) { return k.resolveSettle(ctx, p, it.ID) }},
		{Name: kindDeadline, Do: func(ctx sdk.Context, it blockhook.Item) (bool, error) { return k.expireJobPart(ctx, p, it.ID) },
			Resolve: func(sdk.Context, blockhook.Item) (string, error) {
				return "the sweep stops: the job's pending tasks expire when the scheduler next examines them, its assigned ones lapse at their ack deadline", nil
			}},
		{Name: kindCancel, Do: func(ctx sdk.Context, it blockhook.Item) (bool, error) {
			return k.cancelJobPart(ctx, p, it.ID, sweepChunk)
		},
			Resolve: func(sdk.Context, blockhook.Item) (string, error) {
				return "the sweep stops: the job's remaining tasks end by its deadline's expiry", nil
			}},
		{Name: kindPrune, Do: func(ctx sdk.Context, it blockhook.Item) (bool, error) { return k.prunePart(ctx, it.ID) },
			Resolve: func(sdk.Context, blockhook.Item) (string, error) {
				return "the finished job's records are kept (storage only: nothing is held)", nil
			}},
		{Name: kindPoolPrune, Do: once(func(ctx sdk.Context, id uint64) error { return k.prunePool(ctx, p, id) }),
			Resolve: func(sdk.Context, blockhook.Item) (string, error) {
				return "the closed pool's records are kept (storage only: nothing is held)", nil
			}},
		{Name: kindUnit, Do: func(ctx sdk.Context, it blockhook.Item) (bool, error) {
			return true, k.lapseUnit(ctx, p, it.ID, it.Sub)
		},
			Resolve: func(ctx sdk.Context, it blockhook.Item) (string, error) { return k.resolveUnit(ctx, p, it.ID, it.Sub) }},
		{Name: kindAssign, Do: func(ctx sdk.Context, it blockhook.Item) (bool, error) {
			_, _, err := k.tryAssign(ctx, p, nil, it.ID, true)
			return true, err
		},
			Resolve: func(ctx sdk.Context, it blockhook.Item) (string, error) {
				return k.resolveTask(ctx, p, it.ID, types.TASK_STATUS_PENDING)
			}},
	}
}

// resolveTask ends a task whose lapse (or assignment) keeps failing, without the slash
// and the hooks that may be what fails: FAILED (EXPIRED for a pending one), its
// reservation returned to the owner (a primary's) or to the verification budget, its
// node's GPUs and its provider's exposure released.
func (k Keeper) resolveTask(ctx sdk.Context, p types.Params, id uint64, want types.TaskStatus) (string, error) {
	t, err := k.Tasks.Get(ctx, id)
	if errors.Is(err, collections.ErrNotFound) {
		return "the task is gone", nil
	} else if err != nil {
		return "", err
	}
	if t.Status != want {
		return "the task moved on", nil
	}
	job, err := k.loadJob(ctx, t.JobId)
	if err != nil {
		return "", err
	}
	status, node := types.TASK_STATUS_FAILED, t.NodeId
	if want == types.TASK_STATUS_PENDING {
		status = types.TASK_STATUS_EXPIRED
	}
	if err := k.finishTask(ctx, p, &job, &t, status, node, "ended after its block work failed repeatedly (no slash)"); err != nil {
		return "", err
	}
	if err := k.afterMemberLeft(ctx, p, &job, t); err != nil {
		return "", err
	}
	return fmt.Sprintf("task %s without a slash: its reservation refunded, its node and exposure released", status), nil
}

// resolveSettle pays a verified task whose settlement keeps failing without the work
// report and the reputation event (which may be what fails): the provider is paid, the
// rest refunded, the exposure released. If the provider cannot be paid either (the bank
// refuses its account), the task ends FAILED without a slash: its reservation goes back
// to the owner (or the verification budget) and its exposure is released, so that no
// escrow stays locked behind an account that cannot receive.
func (k Keeper) resolveSettle(ctx sdk.Context, p types.Params, id uint64) (string, error) {
	t, err := k.Tasks.Get(ctx, id)
	if errors.Is(err, collections.ErrNotFound) {
		return "the task is gone", nil
	} else if err != nil {
		return "", err
	}
	if t.Status != types.TASK_STATUS_VERIFIED {
		return "the task moved on", nil
	}
	paid := blockhook.Apply(ctx, "market: settle without reports", func(ctx sdk.Context) error {
		job, err := k.loadJob(ctx, t.JobId)
		if err != nil {
			return err
		}
		t := t
		if err := k.pay(ctx, &job, &t, p, settlementGross(p, job, t)); err != nil {
			return err
		}
		return k.finishTask(ctx, p, &job, &t, types.TASK_STATUS_SETTLED, t.NodeId, "settled without its work report and reputation event")
	})
	if paid == nil {
		return "paid without its work report and reputation event", nil
	}
	job, err := k.loadJob(ctx, t.JobId)
	if err != nil {
		return "", err
	}
	if err := k.finishTask(ctx, p, &job, &t, types.TASK_STATUS_FAILED, t.NodeId, "its provider could not be paid: "+paid.Error()); err != nil {
		return "", err
	}
	if err := k.afterMemberLeft(ctx, p, &job, t); err != nil {
		return "", err
	}
	return "the provider could not be paid: the reservation refunded, the exposure released", nil
}

// resolveAudit lets a committed task whose audit draw keeps failing go on unaudited: its
// group's reveals open.
func (k Keeper) resolveAudit(ctx sdk.Context, p types.Params, id uint64) (string, error) {
	t, err := k.Tasks.Get(ctx, id)
	if err != nil {
		return "", err
	}
	if t.Status != types.TASK_STATUS_COMMITTED || t.Audited {
		return "the task moved on", nil
	}
	job, err := k.loadJob(ctx, t.JobId)
	if err != nil {
		return "", err
	}
	if err := k.transition(ctx, p, &job, &t, types.TASK_STATUS_COMMITTED, step{}, func(t *types.Task) { t.Audited = true }); err != nil {
		return "", err
	}
	return "no audit drawn: the task's reveals open", k.afterGroupChange(ctx, p, &job, t)
}

// resolveAuction ends an auction whose close keeps failing: every open bid's deposit
// returns and the tasks go to the scheduler at the job's max price.
func (k Keeper) resolveAuction(ctx sdk.Context, p types.Params, id uint64) (string, error) {
	job, err := k.loadJob(ctx, id)
	if err != nil {
		return "", err
	}
	if job.Status != types.JOB_STATUS_BIDDING {
		return "the auction ended", nil
	}
	if err := k.returnOpenBids(ctx, &job, types.BID_STATUS_LOST); err != nil {
		return "", err
	}
	job.Status = types.JOB_STATUS_ACTIVE
	pending, err := k.pendingTasks(ctx, job)
	if err != nil {
		return "", err
	}
	for i := range pending {
		if err := k.transition(ctx, p, &job, &pending[i], types.TASK_STATUS_PENDING, step{}, nil); err != nil {
			return "", err
		}
	}
	return "bids returned; the tasks go to the scheduler", k.saveJob(ctx, job)
}

// resolveHeartbeat forgets a node's lapsed heartbeat whose handling keeps failing: its
// running tasks lapse at their own run deadlines.
func (k Keeper) resolveHeartbeat(ctx sdk.Context, node uint64) (string, error) {
	return "the node's running tasks lapse at their run deadlines", k.Heartbeats.Remove(ctx, node)
}

// resolveUnit releases a pool claim whose lapse keeps failing, without the slash: the
// claimer's exposure is released and the unit is raced again (refunded in a closed pool).
func (k Keeper) resolveUnit(ctx sdk.Context, p types.Params, poolID, unitID uint64) (string, error) {
	u, err := k.Units.Get(ctx, collections.Join(poolID, unitID))
	if errors.Is(err, collections.ErrNotFound) {
		return "the unit is gone", nil
	} else if err != nil {
		return "", err
	}
	if u.Status != types.UNIT_STATUS_COMMITTED {
		return "the unit moved on", nil
	}
	pool, err := k.Pools.Get(ctx, poolID)
	if err != nil {
		return "", err
	}
	to := types.UNIT_STATUS_OPEN
	if pool.Status != types.POOL_STATUS_OPEN {
		if err := k.payOut(ctx, pool.Owner, p.Denom, pool.Spec.UnitPrice.Amount); err != nil {
			return "", err
		}
		pool.Escrow = pool.Escrow.Sub(pool.Spec.UnitPrice.Amount)
		pool.OpenUnits--
		to = types.UNIT_STATUS_CANCELLED
	}
	if err := k.moveUnit(ctx, pool, &u, to, func(u *types.Unit) {
		u.ExcludedNodes = append(u.ExcludedNodes, u.NodeId)
		u.NodeId, u.Provider, u.Commitment, u.CommitHeight, u.RevealDeadlineHeight = 0, "", nil, 0, 0
		u.Exposure = sdkmath.ZeroInt()
	}); err != nil {
		return "", err
	}
	return "claim released without a slash", nil
}
