package keeper

import (
	"context"
	"math"
	"strconv"
	"strings"

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

// assignPending runs the scheduler for one block.
func (k Keeper) assignPending(ctx sdk.Context, p types.Params) error {
	keys, err := collkeys.CollectKeys(ctx, k.AssignQueue, nil, int(p.MaxAssignPerBlock))
	if err != nil || len(keys) == 0 {
		return err
	}
	gp, err := k.gfl.GetParams(ctx)
	if err != nil {
		return err
	}
	for _, key := range keys {
		_ = blockhook.Apply(ctx, "market: assign", func(ctx sdk.Context) error {
			return k.tryAssign(ctx, p, gp, key.K3())
		})
	}
	return nil
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
		return k.AssignQueue.Remove(ctx, queueKey(job, taskID))
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
	if err != nil || !found {
		return err
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
	if err := k.collateral.AddExposure(ctx, sdk.MustAccAddressFromBech32(slot.Operator), price); err != nil {
		return err
	}
	if err := k.adjustSlot(ctx, slot.NodeId, int64(job.Spec.Requirements.GPUs()), 1); err != nil {
		return err
	}
	t.Status = types.TASK_STATUS_ASSIGNED
	t.NodeId = slot.NodeId
	t.Provider = slot.Operator
	t.Price = price
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
	excluded, err := k.excludedNodes(ctx, t)
	if err != nil {
		return types.NodeSlot{}, sdkmath.Int{}, false, err
	}
	classes := job.Spec.Requirements.AllowedClasses
	if len(classes) == 0 {
		for _, c := range gp.GpuClasses {
			classes = append(classes, c.Name)
		}
	}
	seed := k.drawSeed(ctx, t.Id, uint64(t.Reassignments))
	maxID, err := k.maxNodeID(ctx)
	if err != nil {
		return types.NodeSlot{}, sdkmath.Int{}, false, err
	}
	start := beacon.Below(seed, maxID+1)
	var pool []candidate
	budget := int(p.SchedulerMaxScan)
	for _, class := range classes {
		found, err := k.gather(ctx, p, job, excluded, class, start, int(p.SchedulerCandidates), &budget)
		if err != nil {
			return types.NodeSlot{}, sdkmath.Int{}, false, err
		}
		pool = append(pool, found...)
		if budget <= 0 {
			break
		}
	}
	if len(pool) == 0 {
		return types.NodeSlot{}, sdkmath.Int{}, false, nil
	}
	n := uint64(len(pool))
	a := beacon.Below(beacon.Derive(seed[:], "a"), n)
	b := a
	if n > 1 {
		b = (a + 1 + beacon.Below(beacon.Derive(seed[:], "b"), n-1)) % n
	}
	best := pool[a]
	if better(pool[b], best) {
		best = pool[b]
	}
	return best.slot, best.price, true, nil
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
func (k Keeper) gather(ctx context.Context, p types.Params, job types.Job, excluded map[uint64]bool, class string, start uint64, want int, budget *int) ([]candidate, error) {
	type span struct {
		from, to collections.Triple[string, uint32, uint64]
	}
	spans := []span{
		{collections.Join3(class, uint32(0), start), collections.Join3(class, uint32(0), uint64(math.MaxUint64))},
		{collections.Join3(class, uint32(0), uint64(0)), collections.Join3(class, uint32(0), start)},
		{collections.Join3(class, uint32(1), uint64(0)), collections.Join3(class, p.LoadThresholdPpm, uint64(math.MaxUint64))},
	}
	var out []candidate
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
			c, ok, err := k.eligible(ctx, p, job, slot, excluded)
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
func (k Keeper) eligible(ctx context.Context, p types.Params, job types.Job, s types.NodeSlot, excluded map[uint64]bool) (candidate, bool, error) {
	req := job.Spec.Requirements
	need := req.GPUs()
	switch {
	case !s.Active, excluded[s.NodeId], s.Operator == job.Owner:
		return candidate{}, false, nil
	case s.GpusUsed+need > s.Gpus || loadPPM(s.GpusUsed+need, s.Gpus) > p.LoadThresholdPpm:
		return candidate{}, false, nil
	case !meetsRequirements(s, req, job.Spec.Workload):
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
	if ok, err := k.collateral.CanAddExposure(ctx, op, price); err != nil || !ok {
		return candidate{}, false, err
	}
	return candidate{slot: s, score: score, price: price}, true, nil
}

// meetsRequirements checks the hardware, region and workload a job asks for.
func meetsRequirements(s types.NodeSlot, r types.Requirements, w gfltypes.WorkloadClass) bool {
	if r.MinMemoryMib > s.MinMemoryMib || (r.TensorCores && !s.TensorCores) || (r.Region != "" && r.Region != s.Region) {
		return false
	}
	if r.MinComputeCapability != "" && compareCC(s.ComputeCapability, r.MinComputeCapability) < 0 {
		return false
	}
	if len(r.AllowedClasses) > 0 {
		ok := false
		for _, c := range r.AllowedClasses {
			ok = ok || c == s.GpuClass
		}
		if !ok {
			return false
		}
	}
	for _, x := range s.Workloads {
		if x == w {
			return true
		}
	}
	return false
}

// compareCC compares "major.minor" compute capabilities.
func compareCC(a, b string) int {
	pa, pb := parseCC(a), parseCC(b)
	switch {
	case pa[0] != pb[0]:
		return pa[0] - pb[0]
	default:
		return pa[1] - pb[1]
	}
}

func parseCC(s string) [2]int {
	maj, min, _ := strings.Cut(s, ".")
	a, _ := strconv.Atoi(maj)
	b, _ := strconv.Atoi(min)
	return [2]int{a, b}
}

// excludedNodes: the nodes that lost this task before and the nodes holding a sibling
// replica of its shard (replicas must run on different nodes).
func (k Keeper) excludedNodes(ctx context.Context, t types.Task) (map[uint64]bool, error) {
	ex := make(map[uint64]bool, len(t.ExcludedNodes)+2)
	for _, n := range t.ExcludedNodes {
		ex[n] = true
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

// maxNodeID is the highest node id with a slot (0 if none).
func (k Keeper) maxNodeID(ctx context.Context) (uint64, error) {
	it, err := k.Slots.Iterate(ctx, new(collections.Range[uint64]).Descending())
	if err != nil {
		return 0, err
	}
	defer func() { _ = it.Close() }()
	if !it.Valid() {
		return 0, nil
	}
	return it.Key()
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
		if i == 0 || compareCC(g.ComputeCapability, s.ComputeCapability) < 0 {
			s.ComputeCapability = g.ComputeCapability
		}
		s.TensorCores = s.TensorCores && g.TensorCores
		s.MigCapable = s.MigCapable && g.MigCapable
	}
	return s
}
