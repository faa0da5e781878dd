package keeper

import (
	"context"
	"errors"
	"math"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/beacon"
	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/internal/collkeys"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/types"
)

// The ASSIGN scheduler (DESIGN.md section 4, x/market). Each block EndBlock examines at most
// max_assign_per_block tasks from the top of the priority queue (tip, deadline, id). For a
// task it gathers up to scheduler_candidates eligible nodes from the scheduling index,
// which orders nodes by (GPU class, load, id): idle nodes from a random starting id, then
// the loaded ones by increasing load, examining at most scheduler_max_scan entries. Two
// candidates are drawn at random (the beacon) and the less loaded wins; ties go to the
// better reputation, then the lower id. A task no node can take waits for the next block;
// one whose deadline can no longer be met expires and is refunded. The cost of one
// assignment is O(log N + max_scan) in the number of nodes N, never a scan of all nodes.
//
// Eligible: active, not jailed, meets the requirements (GPUs free, class, memory, compute
// capability, tensor cores, region, workload), load after the assignment <= theta,
// collateral covers the exposure, quote <= max price, operator != owner, reputation
// eligible, not a node that lost the task before, not a node running a sibling replica.

// assignPending runs the scheduler for one block. It examines at most
// max_assign_per_block tasks: first the AssignQueue in priority order, then the parked
// tasks whose retry height has come (in height order), which are always left at least a
// quarter of the block's examinations. A task no node can take is parked for 1, 2, 4, ...
// up to assign_retry_max_blocks blocks, out of the queue's head: tasks nobody can place
// (requirements nobody meets, free to submit since a cancel refunds) cannot hold back
// the ones behind them; a retried task re-enters in the order it was parked.
func (k Keeper) assignPending(ctx sdk.Context, p types.Params) error {
	limit := int(p.MaxAssignPerBlock)
	retryShare := max(limit/4, 1)
	fresh, err := collkeys.CollectKeys(ctx, k.AssignQueue, nil, limit)
	if err != nil {
		return err
	}
	retryRange := new(collections.Range[collections.Pair[int64, uint64]]).
		EndInclusive(collections.Join(ctx.BlockHeight(), uint64(math.MaxUint64)))
	due, err := collkeys.CollectKeys(ctx, k.AssignRetryAt, retryRange, limit)
	if err != nil {
		return err
	}
	if len(fresh) == 0 && len(due) == 0 {
		return nil
	}
	// fresh tasks first, leaving the retries their share (or more, if fresh ones are few)
	nFresh := min(len(fresh), max(limit-min(len(due), retryShare), 0))
	nDue := min(len(due), limit-nFresh)
	gp, err := k.gfl.GetParams(ctx)
	if err != nil {
		return err
	}
	ids := make([]uint64, 0, nFresh+nDue)
	for _, key := range fresh[:nFresh] {
		ids = append(ids, key.K3())
	}
	for _, key := range due[:nDue] {
		ids = append(ids, key.K2())
	}
	for _, id := range ids {
		_ = blockhook.Apply(ctx, "market: assign", func(ctx sdk.Context) error {
			return k.tryAssign(ctx, p, gp, id)
		})
	}
	return nil
}

// park takes a pending task no node could take out of the queue's head until a later
// block: 1, 2, 4, ... blocks after each failed try, at most assign_retry_max_blocks.
func (k Keeper) park(ctx sdk.Context, p types.Params, job types.Job, t types.Task) error {
	tries := uint32(0)
	if r, err := k.AssignRetries.Get(ctx, t.Id); err == nil {
		tries = r.K2()
	} else if !errors.Is(err, collections.ErrNotFound) {
		return err
	}
	if err := k.dequeue(ctx, job, t); err != nil {
		return err
	}
	wait := int64(p.AssignRetryMaxBlocks)
	if tries < 32 {
		wait = min(wait, int64(1)<<tries)
	}
	at := ctx.BlockHeight() + wait
	if err := k.AssignRetries.Set(ctx, t.Id, collections.Join(at, tries+1)); err != nil {
		return err
	}
	return k.AssignRetryAt.Set(ctx, collections.Join(at, t.Id))
}

func (k Keeper) tryAssign(ctx sdk.Context, p types.Params, gp gfltypes.Params, taskID uint64) error {
	t, err := k.Tasks.Get(ctx, taskID)
	if err != nil {
		return err
	}
	job, err := k.Jobs.Get(ctx, t.JobId)
	if err != nil {
		return err
	}
	if t.Status != types.TASK_STATUS_PENDING {
		// a stale entry: drop it, wherever it is
		if err := k.AssignQueue.Remove(ctx, queueKey(job, taskID)); err != nil {
			return err
		}
		return k.unpark(ctx, taskID)
	}
	if ctx.BlockTime().Add(job.Spec.MaxDuration).After(job.Spec.Deadline) {
		if err := k.detach(ctx, &job, &t); err != nil {
			return err
		}
		if err := k.finishTask(ctx, &job, &t, p, types.TASK_STATUS_EXPIRED, "the deadline can no longer be met"); err != nil {
			return err
		}
		if err := k.memberGone(ctx, p, &job, t); err != nil {
			return err
		}
		return k.Jobs.Set(ctx, job.Id, job)
	}
	slot, price, found, err := k.pickNode(ctx, p, gp, job, t)
	if err != nil {
		return err
	}
	if !found {
		return k.park(ctx, p, job, t)
	}
	if err := k.detach(ctx, &job, &t); err != nil {
		return err
	}
	if err := k.assign(ctx, p, &job, &t, slot, price, 0); err != nil {
		return err
	}
	return k.Jobs.Set(ctx, job.Id, job)
}

// assign gives a pending, detached task to a node at a price.
func (k Keeper) assign(ctx context.Context, p types.Params, job *types.Job, t *types.Task, slot types.NodeSlot, price sdkmath.Int, bidNode uint64) error {
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	exposure := exposureOf(p, taskValue(*job, t.Role, price))
	if err := k.collateral.AddExposure(ctx, k.mustAcc(slot.Operator), exposure); err != nil {
		return err
	}
	if err := k.adjustSlot(ctx, slot.NodeId, int64(job.Spec.Requirements.GPUs()), 1); err != nil {
		return err
	}
	t.Status = types.TASK_STATUS_ASSIGNED
	t.NodeId = slot.NodeId
	t.Provider = slot.Operator
	t.Price = price
	t.Exposure = exposure
	t.BidNode = bidNode
	t.AssignedHeight = sdkCtx.BlockHeight()
	t.AckDeadlineHeight = sdkCtx.BlockHeight() + int64(p.AckTimeoutBlocks)
	if err := k.enqueue(ctx, *job, *t); err != nil {
		return err
	}
	if err := k.Tasks.Set(ctx, t.Id, *t); err != nil {
		return err
	}
	k.addHistory(ctx, job, p, "TaskAssigned", t.Id, slot.NodeId, "price "+price.String()+p.Denom)
	return sdkCtx.EventManager().EmitTypedEvent(&types.EventTaskAssigned{
		TaskId: t.Id, JobId: t.JobId, NodeId: slot.NodeId, Provider: slot.Operator, Price: price, Reassignment: t.Reassignments > 0,
	})
}

type candidate struct {
	slot  types.NodeSlot
	score sdkmath.LegacyDec
	price sdkmath.Int
}

// pickNode finds the node for a task: power of two choices among the eligible candidates.
func (k Keeper) pickNode(ctx context.Context, p types.Params, gp gfltypes.Params, job types.Job, t types.Task) (types.NodeSlot, sdkmath.Int, bool, error) {
	d, found, err := k.draw(ctx, p, gp, job, t)
	if err != nil || !found {
		return types.NodeSlot{}, sdkmath.Int{}, false, err
	}
	return d.best.slot, d.best.price, true, nil
}

// drawn is one scheduling draw: the eligible candidates gathered, the two drawn, the kept one.
type drawn struct {
	pool       []candidate
	a, b, best candidate
}

// draw gathers a task's candidates from the index (a random start, the beacon), draws two
// of them and keeps the better.
func (k Keeper) draw(ctx context.Context, p types.Params, gp gfltypes.Params, job types.Job, t types.Task) (drawn, bool, error) {
	excluded, err := k.excludedNodes(ctx, job, t)
	if err != nil {
		return drawn{}, false, err
	}
	classes := job.Spec.Requirements.AllowedClasses
	if len(classes) == 0 {
		for _, c := range gp.GpuClasses {
			classes = append(classes, c.Name)
		}
	}
	seed := k.drawSeed(ctx, t.Id, uint64(t.Reassignments))
	maxID, err := k.MaxSlot.Get(ctx)
	if err != nil && !errors.Is(err, collections.ErrNotFound) {
		return drawn{}, false, err
	}
	start := beacon.Below(seed, maxID+1)
	var pool []candidate
	budget := int(p.SchedulerMaxScan)
	for _, class := range classes {
		found, err := k.gather(ctx, p, job, t.Role, excluded, class, start, maxID, int(p.SchedulerCandidates), &budget)
		if err != nil {
			return drawn{}, false, err
		}
		pool = append(pool, found...)
		if budget <= 0 {
			break
		}
	}
	if len(pool) == 0 {
		return drawn{}, false, nil
	}
	n := uint64(len(pool))
	a := beacon.Below(beacon.Derive(seed[:], "a"), n)
	b := a
	if n > 1 {
		b = (a + 1 + beacon.Below(beacon.Derive(seed[:], "b"), n-1)) % n
	}
	d := drawn{pool: pool, a: pool[a], b: pool[b], best: pool[a]}
	if better(d.b, d.best) {
		d.best = d.b
	}
	return d, true, nil
}

// better: lower load, then higher reputation, then lower id.
func better(x, y candidate) bool {
	lx, ly := loadPPM(x.slot.GpusUsed, x.slot.Gpus), loadPPM(y.slot.GpusUsed, y.slot.Gpus)
	if lx != ly {
		return lx < ly
	}
	if !x.score.Equal(y.score) {
		return x.score.GT(y.score)
	}
	return x.slot.NodeId < y.slot.NodeId
}

// gather collects up to want eligible nodes of a class: idle nodes from the id start,
// idle nodes below start, then loaded nodes by increasing load. budget counts the index
// entries examined, shared by every class of the task.
//
// Opening a store iterator costs a scan of the block's unsorted writes (the SDK's cache
// store), far more than a read: so the first idle nodes are looked up by id (start,
// start+1, ...; at most 2 x want reads) and the index is walked only from where that
// stopped. The probed ids are exactly the first entries of the first idle span, so the
// candidates are the same as the index walk alone would give.
func (k Keeper) gather(ctx context.Context, p types.Params, job types.Job, role types.TaskRole, excluded map[uint64]bool, class string, start, maxID uint64, want int, budget *int) ([]candidate, error) {
	type span struct {
		from, to collections.Triple[string, uint32, uint64]
	}
	idle, loaded, err := k.classCount(ctx, class)
	if err != nil {
		return nil, err
	}
	var out []candidate
	next := start
	if idle > 0 {
		for probes := 0; probes < 2*want && len(out) < want && *budget > 0 && next <= maxID; probes++ {
			slot, err := k.Slots.Get(ctx, next)
			next++
			if errors.Is(err, collections.ErrNotFound) {
				continue
			} else if err != nil {
				return nil, err
			}
			if !slot.Active || slot.GpuClass != class || loadPPM(slot.GpusUsed, slot.Gpus) != 0 {
				continue // not an entry of this span of the index
			}
			*budget--
			c, ok, err := k.eligible(ctx, p, job, role, slot, excluded)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, c)
			}
		}
		if len(out) >= want || *budget <= 0 {
			return out, nil
		}
	}
	// only the spans with nodes in them: an iterator costs far more than a counter
	var spans []span
	if idle > 0 {
		if next <= maxID {
			spans = append(spans, span{collections.Join3(class, uint32(0), next), collections.Join3(class, uint32(0), uint64(math.MaxUint64))})
		}
		spans = append(spans, span{collections.Join3(class, uint32(0), uint64(0)), collections.Join3(class, uint32(0), start)})
	}
	if loaded > 0 {
		spans = append(spans, span{collections.Join3(class, uint32(1), uint64(0)), collections.Join3(class, p.LoadThresholdPpm, uint64(math.MaxUint64))})
	}
	for _, sp := range spans {
		rng := new(collections.Range[collections.Triple[string, uint32, uint64]]).StartInclusive(sp.from).EndExclusive(sp.to)
		it, err := k.SchedIndex.Iterate(ctx, rng)
		if err != nil {
			return nil, err
		}
		for ; it.Valid() && len(out) < want && *budget > 0; it.Next() {
			*budget--
			key, err := it.Key()
			if err != nil {
				_ = it.Close()
				return nil, err
			}
			slot, err := k.Slots.Get(ctx, key.K3())
			if err != nil {
				_ = it.Close()
				return nil, err
			}
			c, ok, err := k.eligible(ctx, p, job, role, slot, excluded)
			if err != nil {
				_ = it.Close()
				return nil, err
			}
			if ok {
				out = append(out, c)
			}
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
		if len(out) >= want || *budget <= 0 {
			break
		}
	}
	return out, nil
}

// eligible applies every filter of the design to one node for one job, and returns the
// node's quote and reputation.
func (k Keeper) eligible(ctx context.Context, p types.Params, job types.Job, role types.TaskRole, s types.NodeSlot, excluded map[uint64]bool) (candidate, bool, error) {
	req := job.Spec.Requirements
	need := req.GPUs()
	switch {
	case !s.Active, excluded[s.NodeId], s.Operator == job.Owner:
		return candidate{}, false, nil
	case s.GpusUsed+need > s.Gpus || loadPPM(s.GpusUsed+need, s.Gpus) > p.LoadThresholdPpm:
		return candidate{}, false, nil
	case !types.MeetsRequirements(s, req, job.Spec.Workload):
		return candidate{}, false, nil
	}
	price := types.Quote(s.AskPerGpuHour, need, job.Spec.MaxDuration)
	if price.GT(job.Spec.MaxPricePerTask.Amount) || !price.IsPositive() {
		return candidate{}, false, nil
	}
	score, ok, err := k.wiring.reputation.Reputation(ctx, s.NodeId)
	if err != nil || !ok {
		return candidate{}, false, err
	}
	op, err := k.address("operator", s.Operator)
	if err != nil {
		return candidate{}, false, err
	}
	if ok, err := k.collateral.CanAddExposure(ctx, op, exposureOf(p, taskValue(job, role, price))); err != nil || !ok {
		return candidate{}, false, err
	}
	return candidate{slot: s, score: score, price: price}, true, nil
}

// excludedNodes: the nodes that lost this task before and the nodes holding a sibling
// replica of its shard (replicas must run on different nodes).
func (k Keeper) excludedNodes(ctx context.Context, job types.Job, t types.Task) (map[uint64]bool, error) {
	ex := make(map[uint64]bool, len(t.ExcludedNodes)+2)
	for _, n := range t.ExcludedNodes {
		ex[n] = true
	}
	// A single-replica primary that never lapsed has no sibling yet (an audit is drawn
	// only after its commitment; escalations and committees only after reveals).
	if job.Spec.Replicas == 1 && t.Role == types.TASK_ROLE_PRIMARY && t.Reassignments == 0 {
		return ex, nil
	}
	siblings, err := k.siblings(ctx, t)
	if err != nil {
		return nil, err
	}
	for _, s := range siblings {
		if s.NodeId != 0 {
			ex[s.NodeId] = true
		}
		for _, n := range s.ExcludedNodes {
			// a node that lost one of the shard's tasks stays away from the rest
			ex[n] = ex[n] || s.Role == t.Role
		}
	}
	return ex, nil
}

// siblings are the other tasks of a task's shard: replicas, escalations, audits and
// committee members, none of which may run on the same node.
func (k Keeper) siblings(ctx context.Context, t types.Task) ([]types.Task, error) {
	all, err := k.shardTasks(ctx, t.JobId, t.Index)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, s := range all {
		if s.Id != t.Id {
			out = append(out, s)
		}
	}
	return out, nil
}

// drawSeed draws the scheduler's randomness for a task from the previous block.
func (k Keeper) drawSeed(ctx context.Context, taskID, attempt uint64) [32]byte {
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	if seed, err := k.gfl.Seed(ctx, sdkCtx.BlockHeight()-1, types.DomainAssign, taskID, attempt); err == nil {
		return seed
	}
	return beacon.Derive(sdkCtx.HeaderHash(), types.DomainAssign, taskID, attempt)
}

// classCount is the number of indexed nodes of a class that are idle and loaded.
func (k Keeper) classCount(ctx context.Context, class string) (idle, loaded uint64, err error) {
	c, err := k.ClassNodes.Get(ctx, class)
	if errors.Is(err, collections.ErrNotFound) {
		return 0, 0, nil
	} else if err != nil {
		return 0, 0, err
	}
	return c.K1(), c.K2(), nil
}

// unpark drops a task's retry entry, if it has one.
func (k Keeper) unpark(ctx context.Context, taskID uint64) error {
	r, err := k.AssignRetries.Get(ctx, taskID)
	if errors.Is(err, collections.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if err := k.AssignRetryAt.Remove(ctx, collections.Join(r.K1(), taskID)); err != nil {
		return err
	}
	return k.AssignRetries.Remove(ctx, taskID)
}

// SlotFromNode is the market's view of an x/gfl node; usage counters are the caller's.
func SlotFromNode(n gfltypes.Node) types.NodeSlot {
	s := types.NodeSlot{
		NodeId: n.Id, Operator: n.Operator, GpuClass: n.GpuClass, Region: n.Region, Gpus: uint32(len(n.Gpus)),
		Workloads: n.Workloads, AskPerGpuHour: n.AskPerGpuHour.Amount, Active: n.Schedulable(), PowerGflops: n.PowerGflops,
		TensorCores: len(n.Gpus) > 0, MigCapable: len(n.Gpus) > 0,
	}
	for i, g := range n.Gpus {
		if i == 0 || g.MemoryMib < s.MinMemoryMib {
			s.MinMemoryMib = g.MemoryMib
		}
		if i == 0 || types.CompareComputeCapability(g.ComputeCapability, s.ComputeCapability) < 0 {
			s.ComputeCapability = g.ComputeCapability
		}
		s.TensorCores = s.TensorCores && g.TensorCores
		s.MigCapable = s.MigCapable && g.MigCapable
	}
	return s
}
