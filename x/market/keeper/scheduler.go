package keeper

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/beacon"
	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/internal/collkeys"
	"github.com/flopsnet/flops/internal/unitstore"
	"github.com/flopsnet/flops/x/market/types"
)

// The ASSIGN scheduler (DESIGN.md section 4, x/market). Each block EndBlock examines the
// tasks at the top of the priority queue (tip, deadline, id) as far as its work budget
// (assign_gas_per_block) goes, at most max_assign_per_block. For a task it draws two
// eligible nodes uniformly from the members of its GPU classes, from the beacon, examining
// at most scheduler_max_scan of them, and keeps the less loaded; a tie goes to the better
// reputation, then to the first drawn (draw). Only when sampling finds none does it walk
// the scheduling index, which orders nodes by (GPU class, load, id), from a random id. A
// task no node can take waits; one whose deadline can no longer be met expires and is
// refunded. The cost of one assignment is O(log N + max_scan) in the number of nodes N,
// never a scan of all nodes.
//
// Eligible: active, not jailed, meets the requirements (GPUs free, class, memory, compute
// capability, tensor cores, region, workload), load after the assignment <= theta,
// collateral covers the exposure, quote <= max price, operator != owner, reputation
// eligible, not a node that lost the task before, not a node running a sibling replica.

// assignPending runs the scheduler for one block within its work budget
// (assign_gas_per_block: what the examinations cost, not how many they are, sets the
// pace; max_assign_per_block only caps the tasks examined). The queue holds groups (a
// job's pending tasks of one role, queue.go): the groups whose parking has ended come
// back to the queue first; then the queued groups are taken in priority order and their
// waiting tasks examined oldest first; the tasks parked alone whose retry height has come
// are always left at least a quarter of the examinations and of the budget, and the
// groups go on with what they leave.
//
// A task that excluded no node and found none parks its whole group for 1, 2, 4, ... up
// to assign_retry_max_blocks blocks, out of the queue's head: every task of the group
// needs the same hardware at the same price and can only exclude more nodes, so none of
// them could be placed either. A group of any size nobody can take (requirements nobody
// meets, free to submit since a cancel refunds) thus costs one examination per retry and
// cannot hold back the groups behind it. A task that found no node because of the nodes
// it excludes (those that lost it, its siblings' nodes, its audited provider's) is parked
// alone the same way, and its group goes on. A task whose assignment fails (not: finds no
// node) goes to the retries (blockwork.go).
//
// Each job is read at most once per block (sched): its spec never changes, its record is
// kept as the last assignment wrote it; the GPU classes a job may use are narrowed once
// per block to those with nodes, so the cost of examining a task does not depend on the
// length of the job's lists.
func (k Keeper) assignPending(ctx sdk.Context, p types.Params, r *blockhook.Runner) error {
	limit := int(p.MaxAssignPerBlock)
	retryShare := max(limit/4, 1)
	var due []collections.Pair[int64, uint64]
	var back []collections.Triple[int64, uint64, int32]
	sb := newSched()
	if err := r.Budget.Run(ctx, "market: assign due", func(c sdk.Context) error {
		groupRange := new(collections.Range[collections.Triple[int64, uint64, int32]]).
			EndInclusive(collections.Join3(c.BlockHeight(), uint64(math.MaxUint64), int32(math.MaxInt32)))
		var err error
		if back, err = collkeys.CollectKeys(c, k.GroupRetryAt, groupRange, limit); err != nil {
			return err
		}
		retryRange := new(collections.Range[collections.Pair[int64, uint64]]).
			EndInclusive(collections.Join(c.BlockHeight(), uint64(math.MaxUint64)))
		due, err = collkeys.CollectKeys(c, k.AssignRetryAt, retryRange, limit)
		return err
	}); err != nil {
		return err
	}
	// the parked groups whose retry has come rejoin the queue, one budgeted item each (a
	// requeue reads the job's spec for its priority: its cost grows with the spec); those
	// the budget leaves stay due for the next block
	for _, key := range back {
		if err := r.Budget.Run(ctx, "market: requeue group", func(c sdk.Context) error {
			return k.requeueGroup(c, collections.Join(key.K2(), key.K3()))
		}); err != nil {
			return err
		}
	}
	// The queued groups first, leaving the tasks parked alone their share of the
	// examinations and of the work budget (or more, if the groups' tasks are few); then
	// those; then the groups again with what is left.
	w := &queueWalk{k: k, p: p, r: r, sb: sb}
	groups := func(budget int, gasCap uint64) error {
		w.budget, w.gasCap = budget, gasCap
		for !w.capped(0) {
			// the next groups and their waiting tasks, read before this round writes anything
			var work []groupWork
			if err := r.Budget.Run(ctx, "market: assign groups", func(c sdk.Context) error {
				var err error
				work, err = k.nextGroups(c, w.after, budget-w.used)
				return err
			}); err != nil {
				return err
			}
			if len(work) == 0 {
				return nil
			}
			if err := w.run(ctx, work); err != nil {
				return err
			}
		}
		return nil
	}
	gasCap := r.Budget.Limit()
	if len(due) > 0 {
		gasCap -= gasCap / 4
	}
	if err := groups(max(limit-min(len(due), retryShare), 0), gasCap); err != nil {
		return err
	}
	for _, key := range due[:min(len(due), limit-w.used)] {
		if _, err := k.examine(ctx, p, r, sb, key.K2(), true); err != nil {
			return err
		}
	}
	if len(due) > 0 {
		return groups(limit, r.Budget.Limit())
	}
	return nil
}

// assignBatch is how many examinations of the queued groups one budget unit holds. A
// unit is a branch of the block's state, written back when it succeeds: per examination
// it cost about a fifth of an assignment (BenchmarkEndBlockAssign), shared now by
// assignBatch of them. A unit with a failure in it is dropped and its examinations run
// again one unit each, so that the failure is the failing task's alone, as before.
const assignBatch = 16

// queueWalk examines the tasks of the queued groups, in order, within the block's work
// budget and examination cap: batched (assignBatch per unit) while the budget left holds
// several batches at the dearest examination seen, one per unit otherwise and after a
// failure. The cursor (group wi, task ii of it) is the walk's place; a batch that is
// dropped puts it back.
type queueWalk struct {
	k  Keeper
	p  types.Params
	r  *blockhook.Runner
	sb *sched

	budget int    // examinations allowed
	gasCap uint64 // the budget's gas this walk may use
	used   int    // examinations made (and empty groups passed)
	after  *collections.Quad[uint64, int64, uint64, int32]

	work   []groupWork
	wi, ii int
	placed bool // a task of the current group was placed

	dearest uint64 // the most gas one examination (or a batch's average) took
}

// walkCursor is the part of a walk a dropped batch puts back.
type walkCursor struct {
	used   int
	after  *collections.Quad[uint64, int64, uint64, int32]
	wi, ii int
	placed bool
}

func (w *queueWalk) cursor() walkCursor {
	return walkCursor{used: w.used, after: w.after, wi: w.wi, ii: w.ii, placed: w.placed}
}

func (w *queueWalk) restore(c walkCursor) {
	w.used, w.after, w.wi, w.ii, w.placed = c.used, c.after, c.wi, c.ii, c.placed
}

// capped: the walk may examine nothing more (pending is the gas of the unit running).
func (w *queueWalk) capped(pending uint64) bool {
	return w.used >= w.budget || w.r.Budget.Used()+pending >= w.gasCap
}

// run walks one round of groups.
func (w *queueWalk) run(ctx sdk.Context, work []groupWork) error {
	w.work, w.wi, w.ii, w.placed = work, 0, 0, false
	for w.wi < len(w.work) && !w.capped(0) {
		steps := 1
		if w.dearest > 0 && w.r.Budget.Remaining() >= 4*assignBatch*w.dearest {
			steps = assignBatch
		}
		if steps > 1 {
			before, spentBefore := w.cursor(), w.r.Budget.Used()
			err := w.r.Budget.Run(ctx, "market: assign", func(c sdk.Context) error {
				unit := unitstore.New(c) // converted once for the batch (tryAssign), its stores opened once
				for n := 0; n < steps && w.wi < len(w.work) && !w.capped(c.GasMeter().GasConsumed()); n++ {
					if err := w.step(c, unit); err != nil {
						return err
					}
				}
				return nil
			})
			switch {
			case err == nil:
				if n := w.used - before.used; n > 0 {
					w.dearest = max(w.dearest, (w.r.Budget.Used()-spentBefore)/uint64(n))
				}
				continue
			case errors.Is(err, blockhook.ErrBudgetSpent):
				w.restore(before)
				clear(w.sb.jobs)
				return err
			}
			// a failure in the batch: its examinations again, one unit each
			w.restore(before)
			clear(w.sb.jobs)
		}
		for n := 0; n < steps && w.wi < len(w.work) && !w.capped(0); n++ {
			spentBefore := w.r.Budget.Used()
			if err := w.step(ctx, nil); err != nil {
				return err
			}
			w.dearest = max(w.dearest, w.r.Budget.Used()-spentBefore)
		}
	}
	return nil
}

// step makes the walk's next examination (or passes an empty group), in a batch's unit
// (unit: the batch's ctx as a context.Context; its errors drop the batch) or, when unit
// is nil, in units of its own (examine).
func (w *queueWalk) step(ctx sdk.Context, unit context.Context) error {
	inUnit := unit != nil
	g := w.work[w.wi]
	if w.ii == 0 {
		w.after = &g.key
		if len(g.ids) == 0 {
			w.used++
			w.wi++
			return nil
		}
	}
	id := g.ids[w.ii]
	w.used++
	w.ii++
	var res examined
	if inUnit {
		job, r, err := w.k.tryAssign(unit, w.p, w.sb, id, false)
		if err != nil {
			return err
		}
		w.sb.keepJob(job)
		res = r
	} else {
		r, err := w.k.examine(ctx, w.p, w.r, w.sb, id, false)
		if err != nil {
			return err
		}
		res = r
	}
	w.placed = w.placed || res == assigned
	pending := uint64(0) // the gas of the unit still running: a batch's
	if inUnit {
		pending = ctx.GasMeter().GasConsumed()
	}
	if res != groupParked && w.ii < len(g.ids) && !w.capped(pending) {
		return nil
	}
	// the group's turn ends: a group that placed a task starts its back-off again
	if w.placed && g.tries != 0 {
		reset := func(c sdk.Context) error { return w.k.resetTries(c, collections.Join(g.key.K3(), g.key.K4())) }
		if inUnit {
			if err := reset(ctx); err != nil {
				return err
			}
		} else if err := w.r.Budget.Run(ctx, "market: assign group", reset); err != nil {
			return err
		}
	}
	w.wi++
	w.ii = 0
	w.placed = false
	return nil
}

// groupWork is a queued group and the waiting tasks the scheduler will examine of it.
type groupWork struct {
	key   collections.Quad[uint64, int64, uint64, int32]
	tries uint32
	ids   []uint64
}

// nextGroups reads the queued groups after the given one (from the head: nil) and their
// oldest waiting tasks, n tasks in all.
func (k Keeper) nextGroups(ctx context.Context, after *collections.Quad[uint64, int64, uint64, int32], n int) ([]groupWork, error) {
	var rng collections.Ranger[collections.Quad[uint64, int64, uint64, int32]]
	if after != nil {
		rng = new(collections.Range[collections.Quad[uint64, int64, uint64, int32]]).StartExclusive(*after)
	}
	groups, err := collkeys.CollectKeys(ctx, k.AssignQueue, rng, n)
	if err != nil {
		return nil, err
	}
	var out []groupWork
	for _, key := range groups {
		if n <= 0 {
			break
		}
		s, found, err := k.getGroup(ctx, collections.Join(key.K3(), key.K4()))
		if err != nil {
			return nil, err
		}
		var ids []uint64
		if found {
			if ids, err = k.waitingOf(ctx, key.K3(), types.TaskRole(key.K4()), s, n); err != nil {
				return nil, err
			}
		}
		if len(ids) == 0 {
			// a queued group has a waiting task (the due-work invariant); one that has
			// none is taken out rather than examined every block
			if err := k.AssignQueue.Remove(ctx, key); err != nil {
				return nil, err
			}
		}
		n -= max(len(ids), 1)
		out = append(out, groupWork{key: key, tries: s.tries, ids: ids})
	}
	return out, nil
}

// examined is what examining a task did.
type examined int

const (
	untouched   examined = iota // failed (handed to the retries) or stale
	assigned                    // given to a node
	expired                     // its deadline can no longer be met
	parkedAlone                 // parked on its own
	groupParked                 // parked with its group
	waiting                     // parked for a block: its draw's beacon value is not known yet
)

// examine runs tryAssign on one task within the block's budget; a task whose examination
// fails is handed to the retries.
func (k Keeper) examine(ctx sdk.Context, p types.Params, r *blockhook.Runner, sb *sched, id uint64, alone bool) (examined, error) {
	var res examined
	var job *types.Job
	err := r.Budget.Run(ctx, "market: assign", func(c sdk.Context) error {
		var err error
		job, res, err = k.tryAssign(unitstore.New(c), p, sb, id, alone)
		return err
	})
	switch {
	case errors.Is(err, blockhook.ErrBudgetSpent):
		return untouched, err
	case err != nil:
		// the job's record as cached may be ahead of the store now: read it again
		clear(sb.jobs)
		return untouched, r.Fail(ctx, blockhook.Item{Kind: kindAssign, ID: id}, err, func(c sdk.Context) error { return k.dropFromQueue(c, id) })
	default:
		sb.keepJob(job)
	}
	return res, nil
}

// dropFromQueue takes a pending task out of the scheduler's queue and parking (its
// assignment failed; the retries own it now).
func (k Keeper) dropFromQueue(ctx sdk.Context, taskID uint64) error {
	t, err := k.Tasks.Get(ctx, taskID)
	if err != nil {
		return err
	}
	spec, err := k.JobSpecs.Get(ctx, t.JobId)
	if err != nil {
		return err
	}
	return k.dequeue(ctx, types.Job{Id: t.JobId, Spec: spec}, t)
}

// sched is what the scheduler keeps for one block: the jobs as last written by this
// block's assignments and, per job, its allowed GPU classes that have nodes.
type sched struct {
	// allClasses: the names of x/gfl's GPU classes, for the jobs that name none (read when
	// first needed)
	allClasses []string
	jobs       map[uint64]types.Job
	classes    map[uint64][]string
	hasNodes   map[string]bool // per GPU class: nodes indexed
	// per GPU class: its members (ClassSize). An assignment, an expiry or a parking never
	// adds or removes a member (only a node's activation, deactivation or change of class
	// does, none of which the scheduler makes), so the sizes read once hold for the block.
	sizes map[string]uint64
}

func newSched() *sched {
	return &sched{
		jobs: map[uint64]types.Job{}, classes: map[uint64][]string{}, hasNodes: map[string]bool{},
		sizes: map[string]uint64{},
	}
}

// classSize is a class's member count, read once per block.
func (s *sched) classSize(ctx context.Context, k Keeper, class string) (uint64, error) {
	if n, ok := s.sizes[class]; ok {
		return n, nil
	}
	n, err := k.ClassSize.Get(ctx, class)
	if err != nil && !errors.Is(err, collections.ErrNotFound) {
		return 0, err
	}
	s.sizes[class] = n
	return n, nil
}

// parkUnplaced parks a pending task no node could take on its own: 1, 2, 4, ... blocks
// after each failed try, at most assign_retry_max_blocks.
func (k Keeper) parkUnplaced(ctx sdk.Context, p types.Params, job types.Job, t types.Task) error {
	tries := uint32(0)
	if r, err := k.AssignRetries.Get(ctx, t.Id); err == nil {
		tries = r.K2()
	} else if !errors.Is(err, collections.ErrNotFound) {
		return err
	}
	return k.park(ctx, job, t, ctx.BlockHeight()+backoff(p, tries), tries+1)
}

// tryAssign examines one pending task: expired if its deadline can no longer be met,
// assigned to the node drawn, or parked (with its group when it excluded no node and is
// examined in its group; alone otherwise). It returns the job as it wrote it (nil when it
// wrote none). sb is the block's scheduler cache (nil: none, a retried task, examined
// alone). ctx is a context.Context, converted once by the caller: each conversion of an
// sdk.Context (904 bytes) to the interface copies it to the heap, and an examination
// makes a dozen calls that take one.
func (k Keeper) tryAssign(ctx context.Context, p types.Params, sb *sched, taskID uint64, alone bool) (*types.Job, examined, error) {
	t, err := k.Tasks.Get(ctx, taskID)
	if err != nil {
		return nil, untouched, err
	}
	if sb == nil {
		alone = true
		sb = newSched()
	}
	job, cached := sb.jobs[t.JobId]
	if !cached {
		if job, err = k.loadJob(ctx, t.JobId); err != nil {
			return nil, untouched, err
		}
		sb.keepJob(&job)
	}
	if t.Status != types.TASK_STATUS_PENDING {
		// a stale entry (never left by the core; kept as a guard): drop it, wherever it is
		return nil, untouched, k.dequeue(ctx, job, t)
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	if sdkCtx.BlockTime().Add(job.Spec.MaxDuration).After(taskDeadline(job, t)) {
		if err := k.finishTask(ctx, p, &job, &t, types.TASK_STATUS_EXPIRED, t.NodeId, "the deadline can no longer be met"); err != nil {
			return nil, untouched, err
		}
		if err := k.afterMemberLeft(ctx, p, &job, t); err != nil {
			return nil, untouched, err
		}
		return &job, expired, nil
	}
	seed, ready, err := k.drawSeed(ctx, &t)
	if err != nil {
		return nil, untouched, err
	}
	if !ready {
		return nil, waiting, k.waitForBeacon(sdkCtx, job, t)
	}
	classes, err := sb.classesOf(ctx, k, job)
	if err != nil {
		return nil, untouched, err
	}
	slot, price, found, err := k.pickNode(ctx, p, sb, classes, job, t, seed)
	if err != nil {
		return nil, untouched, err
	}
	if !found {
		if !alone {
			// a task that excluded no node found none: neither would another of its
			// group, whose exclusions can only be more
			ex, err := k.excludedNodes(ctx, job, t)
			if err != nil {
				return nil, untouched, err
			}
			if ex.none() {
				return nil, groupParked, k.parkGroup(ctx, p, job, t.Role)
			}
		}
		return nil, parkedAlone, k.parkUnplaced(sdkCtx, p, job, t)
	}
	if err := k.assign(ctx, p, &job, &t, slot, price, 0, true); err != nil {
		return nil, untouched, err
	}
	return &job, assigned, nil
}

// classesOf is, once per block per job, the job's allowed GPU classes (every class of the
// table when it names none) that have nodes indexed.
func (s *sched) classesOf(ctx context.Context, k Keeper, job types.Job) ([]string, error) {
	if c, ok := s.classes[job.Id]; ok {
		return c, nil
	}
	allowed := job.Spec.Requirements.AllowedClasses
	if len(allowed) == 0 {
		if s.allClasses == nil {
			gp, err := k.gfl.GetParams(ctx)
			if err != nil {
				return nil, err
			}
			s.allClasses = make([]string, 0, len(gp.GpuClasses))
			for _, c := range gp.GpuClasses {
				s.allClasses = append(s.allClasses, c.Name)
			}
		}
		allowed = s.allClasses
	}
	// out stays nil while every class is kept, and the result is then allowed itself (read,
	// never changed); the first class dropped makes it a list of its own
	var out []string
	for i, class := range allowed {
		has, ok := s.hasNodes[class]
		if !ok {
			// assignments move nodes between idle and loaded, never in or out of a class
			idle, loaded, err := k.classCount(ctx, class)
			if err != nil {
				return nil, err
			}
			has = idle+loaded > 0
			s.hasNodes[class] = has
		}
		switch {
		case !has && out == nil:
			out = append(make([]string, 0, len(allowed)-1), allowed[:i]...)
		case has && out != nil:
			out = append(out, class)
		}
	}
	if out == nil {
		out = allowed
	}
	if s.keeps(job) {
		s.classes[job.Id] = out
	}
	return out, nil
}

// keeps says whether the block's scheduler keeps what it learnt of a job (its record, its
// classes) for the job's next task in the block: a job of one task has none.
func (s *sched) keeps(job types.Job) bool { return job.Spec.TotalTasks() > 1 }

// keepJob keeps a job's record as this block last wrote it, for the job's next task.
func (s *sched) keepJob(job *types.Job) {
	if job != nil && s.keeps(*job) {
		s.jobs[job.Id] = *job
	}
}

// assign gives a pending task to a node at a price: the node's GPUs and the provider's
// exposure (exposure_factor x the task's value) are taken by the transition. slot is the
// node's slot as stored now; jobAsStored says job is its record as stored (the
// scheduler's: read in this block, or as this block last wrote it).
func (k Keeper) assign(ctx context.Context, p types.Params, job *types.Job, t *types.Task, slot types.NodeSlot, price sdkmath.Int, bidNode uint64, jobAsStored bool) error {
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	exposure := exposureOf(p, taskValue(*job, t.Role, price))
	h := sdkCtx.BlockHeight()
	var devices []uint32
	var share uint64
	if len(slot.Devices) > 0 {
		// the exact devices (whole GPUs or MIG instances) it runs on: its worker pins these
		var ok bool
		if devices, ok = types.FitDevices(slot, job.Spec.Requirements, true); !ok {
			return fmt.Errorf("market: node %d has no free devices for task %d", slot.NodeId, t.Id)
		}
		share, _ = types.DevicesShare(slot, devices)
	}
	if err := k.transition(ctx, p, job, t, types.TASK_STATUS_ASSIGNED, step{
		history: "TaskAssigned", node: slot.NodeId, detail: "price " + price.String() + p.Denom, slot: &slot, jobAsStored: jobAsStored,
	}, func(t *types.Task) {
		t.NodeId = slot.NodeId
		t.Provider = slot.Operator
		t.Price = price
		t.Exposure = exposure
		t.BidNode = bidNode
		t.AssignedHeight = h
		t.AckDeadlineHeight = h + int64(p.AckTimeoutBlocks)
		t.Devices = devices
		t.DeviceShare = uint32(share) // at most 840 a device of a node's few
		// a pending failure report now has a run to decide it (the scheduler places such a
		// task away from the reporting operator's nodes)
		if i := pendingFailure(*t); i >= 0 {
			t.Failures[i].Rerun = true
		}
	}); err != nil {
		return err
	}
	ev, err := (&types.EventTaskAssigned{
		TaskId: t.Id, JobId: t.JobId, NodeId: slot.NodeId, Provider: slot.Operator, Price: price, Reassignment: t.Reassignments > 0,
	}).Event()
	if err != nil {
		return err
	}
	sdkCtx.EventManager().EmitEvent(ev)
	return nil
}

type candidate struct {
	slot  types.NodeSlot
	score sdkmath.LegacyDec
	price sdkmath.Int
}

// pickNode finds the node for a task: power of two choices among the eligible candidates.
func (k Keeper) pickNode(ctx context.Context, p types.Params, sb *sched, classes []string, job types.Job, t types.Task, seed [32]byte) (types.NodeSlot, sdkmath.Int, bool, error) {
	d, found, err := k.draw(ctx, p, sb, classes, job, t, seed)
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

// draw gathers a task's candidates, draws two of them and keeps the better.
//
// Candidates are drawn uniformly from the schedulable members of the task's classes by
// position (MemberChunks), from the beacon: every eligible node is equally likely to be
// drawn, whatever the history of node ids (an operator that registered and deactivated
// thousands of nodes in front of its own gains nothing), and the two drawn are compared by
// load, then reputation; a tie keeps the first drawn, itself random. When the members fit
// in scheduler_max_scan they are examined in a random order (without replacement) until
// two eligible ones are found; otherwise up to that many are sampled (with replacement)
// until two are found. Only when sampling finds none (eligible nodes are rarer than one
// in scheduler_max_scan) does the scheduler fall back to walking the load-ordered index
// from a random node id, which finds a rare eligible node but favours nodes after gaps in
// the ids.
//
// The sampled pair is compared before its collateral is asked about: a candidate passes
// every other filter to be drawn, and only the better of the two must also show that its
// operator's collateral covers the task's exposure. One that cannot is dropped, the next
// candidate of the same random order takes its place, and the two are compared again, so
// the node kept always passes every filter. The loser's collateral is never read: one
// collateral check per assignment instead of two (the operator's record and exposure
// read, the exposure compared). A drawn node short of collateral can thus spare the
// other one a comparison with a third: that favours no one, since both were drawn
// uniformly, and an operator whose nodes are short gains nothing by it (they are never
// kept).
func (k Keeper) draw(ctx context.Context, p types.Params, sb *sched, classes []string, job types.Job, t types.Task, seed [32]byte) (drawn, bool, error) {
	excluded, err := k.excludedNodes(ctx, job, t)
	if err != nil {
		return drawn{}, false, err
	}
	s, err := k.newSampler(ctx, p, sb, classes, t.Role, excluded, seed)
	if err != nil {
		return drawn{}, false, err
	}
	// two candidates are enough: a pool of more, uniform and distinct, from which the
	// pair is then drawn at random, gives the same two as its first two do
	want := min(int(p.SchedulerCandidates), 2)
	var pool []candidate
	for {
		for len(pool) < want {
			c, found, err := s.next(&p, &job)
			if err != nil {
				return drawn{}, false, err
			}
			if !found {
				break
			}
			pool = append(pool, c)
		}
		if len(pool) == 0 {
			break
		}
		d := pick(pool, seed)
		covered, err := k.covered(ctx, p, job, t.Role, d.best)
		if err != nil {
			return drawn{}, false, err
		}
		if covered {
			return d, true, nil
		}
		pool = slices.DeleteFunc(pool, func(c candidate) bool { return c.slot.NodeId == d.best.slot.NodeId })
	}
	if s.budget != 0 {
		return drawn{}, false, nil
	}
	// sampling spent its scan and found none: the walk has a scan of its own (before, it
	// shared the spent one, so it never ran, and the last free nodes of a busy network
	// were found only by luck while their tasks backed off)
	budget := int(p.SchedulerMaxScan)
	maxID, err := k.MaxSlot.Get(ctx)
	if err != nil && !errors.Is(err, collections.ErrNotFound) {
		return drawn{}, false, err
	}
	start := beacon.Below(seed, maxID+1)
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
	return pick(pool, seed), true, nil
}

// pick draws two of the pool from the beacon (one when it holds one) and keeps the better.
func pick(pool []candidate, seed [32]byte) drawn {
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
	return d
}

// sampler draws members of a task's classes uniformly (see draw), one candidate at a time.
type sampler struct {
	k        Keeper
	ctx      context.Context
	role     types.TaskRole
	excluded exclusion
	seed     [32]byte
	classes  []string
	sizes    []uint64
	total    uint64
	budget   int  // scheduler_max_scan less the members examined
	shuffled bool // every member fits the scan: they are examined in a random order
	moved    map[uint64]uint64
	seen     map[uint64]bool
	i        uint64 // the draws made
}

func (k Keeper) newSampler(ctx context.Context, p types.Params, sb *sched, classes []string, role types.TaskRole, excluded exclusion, seed [32]byte) (sampler, error) {
	s := sampler{
		k: k, ctx: ctx, role: role, excluded: excluded, seed: seed, classes: classes,
		sizes: make([]uint64, len(classes)), budget: int(p.SchedulerMaxScan), seen: map[uint64]bool{},
	}
	for i, c := range classes {
		n, err := sb.classSize(ctx, k, c)
		if err != nil {
			return sampler{}, err
		}
		s.sizes[i] = n
		s.total += n
	}
	s.shuffled = s.total <= uint64(s.budget)
	if s.shuffled {
		s.moved = map[uint64]uint64{}
	}
	return s, nil
}

// next is the next member drawn that passes every filter but the collateral check
// (candidate); found is false once the scan is spent or, shuffled, every member was
// examined.
//
// Shuffled, the members are examined in an order drawn from the beacon (a Fisher-Yates
// shuffle, drawn as it goes): the first eligible members of a uniformly random order are
// a uniformly random choice of the eligible ones, as the pool of all of them would give,
// and the draw examines two or three members instead of all of them (up to
// scheduler_max_scan) whenever most are eligible. A task that no member can take still
// examines every one, so it finds none only when there is none. The shuffle is kept
// sparse (the positions moved so far): its cost follows the members examined, not the
// class's size (scheduler_max_scan may be 100,000). Otherwise members are sampled with
// replacement, one position per draw, until the scan is spent.
func (s *sampler) next(p *types.Params, job *types.Job) (candidate, bool, error) {
	for {
		var r uint64
		if s.shuffled {
			if s.i >= s.total {
				return candidate{}, false, nil
			}
			j := s.i + beacon.Below(beacon.Derive(s.seed[:], "order", s.i), s.total-s.i)
			r = s.at(j)
			s.moved[j] = s.at(s.i) // position i is never drawn again
		} else {
			if s.budget <= 0 {
				return candidate{}, false, nil
			}
			r = beacon.Below(beacon.Derive(s.seed[:], "member", s.i), s.total)
		}
		s.i++
		s.budget--
		c, ok, err := s.look(p, job, r)
		if err != nil || ok {
			return c, ok, err
		}
	}
}

// at is the member at position i of the shuffle drawn so far.
func (s *sampler) at(i uint64) uint64 {
	if v, ok := s.moved[i]; ok {
		return v
	}
	return i
}

// look examines the member at position r of the classes' members.
func (s *sampler) look(p *types.Params, job *types.Job, r uint64) (candidate, bool, error) {
	for i, n := range s.sizes {
		if r >= n {
			r -= n
			continue
		}
		node, err := s.k.memberAt(s.ctx, s.classes[i], r)
		if err != nil || s.seen[node] {
			return candidate{}, false, err // (a member drawn before is not looked at again)
		}
		s.seen[node] = true
		slot, err := s.k.Slots.Get(s.ctx, node)
		if err != nil {
			return candidate{}, false, err
		}
		return s.k.candidate(s.ctx, *p, *job, s.role, slot, s.excluded)
	}
	return candidate{}, false, nil
}

// better: lower load, then higher reputation (a tie keeps the first drawn).
func better(x, y candidate) bool {
	lx, ly := loadPPM(x.slot.GpusUsed, x.slot.Gpus), loadPPM(y.slot.GpusUsed, y.slot.Gpus)
	if lx != ly {
		return lx < ly
	}
	return x.score.GT(y.score)
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
func (k Keeper) gather(ctx context.Context, p types.Params, job types.Job, role types.TaskRole, excluded exclusion, class string, start, maxID uint64, want int, budget *int) ([]candidate, error) {
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

// eligible applies every filter of the design to one node for one job (candidate, then
// covered), and returns the node's quote and reputation.
func (k Keeper) eligible(ctx context.Context, p types.Params, job types.Job, role types.TaskRole, s types.NodeSlot, excluded exclusion) (candidate, bool, error) {
	c, ok, err := k.candidate(ctx, p, job, role, s, excluded)
	if err != nil || !ok {
		return candidate{}, false, err
	}
	if ok, err := k.covered(ctx, p, job, role, c); err != nil || !ok {
		return candidate{}, false, err
	}
	return c, true, nil
}

// candidate applies every filter of the design to one node for one job but the
// collateral check (covered), and returns the node's quote and reputation.
func (k Keeper) candidate(ctx context.Context, p types.Params, job types.Job, role types.TaskRole, s types.NodeSlot, excluded exclusion) (candidate, bool, error) {
	req := job.Spec.Requirements
	need := req.GPUs()
	switch {
	case !s.Active, excluded.excludes(s), s.Operator == job.Owner:
		return candidate{}, false, nil
	case s.GpusUsed+need > s.Gpus || loadPPM(s.GpusUsed+need, s.Gpus) > p.LoadThresholdPpm:
		return candidate{}, false, nil
	case !types.MeetsRequirements(s, job.Spec):
		return candidate{}, false, nil
	}
	// the node's ask for the run, plus what revealing will cost its provider in gas
	quote := types.Quote(s.AskPerGpuHour, need, job.Spec.MaxDuration)
	if len(s.Devices) > 0 {
		devices, ok := types.FitDevices(s, req, true)
		if !ok {
			return candidate{}, false, nil
		}
		quote = types.QuoteDevices(s, devices, job.Spec.MaxDuration)
	}
	price := quote.Add(sdkmath.NewIntFromUint64(job.RevealCost))
	if price.GT(job.Spec.MaxPricePerTask.Amount) || !price.IsPositive() {
		return candidate{}, false, nil
	}
	score, ok, err := k.wiring.reputation.Reputation(ctx, s.NodeId)
	if err != nil || !ok {
		return candidate{}, false, err
	}
	return candidate{slot: s, score: score, price: price}, true, nil
}

// covered: the candidate's operator has the collateral for the exposure the task at its
// price would add.
func (k Keeper) covered(ctx context.Context, p types.Params, job types.Job, role types.TaskRole, c candidate) (bool, error) {
	// the address codec's memo (its last 8,192 addresses) spares the decoding of an
	// operator met again; a per-block map in front of it cost more than it saved (a big
	// network's draws rarely meet one operator twice in a block)
	op, err := k.address("operator", c.slot.Operator)
	if err != nil {
		return false, err
	}
	return k.collateral.CanAddExposure(ctx, op, exposureOf(p, taskValue(job, role, c.price)))
}

// exclusion is what a task may not run on: nodes that lost it before, and the nodes and
// operators of its shard's other tasks. Replicas, audits, escalations and committee
// members are kept apart by operator, not only by node: one operator's nodes are one
// party, and a party that audits itself, or sits on the committee of its own dispute,
// verifies nothing.
type exclusion struct {
	nodes     map[uint64]bool
	operators map[string]bool
}

// excludes: the slot may not take the task.
func (e exclusion) excludes(s types.NodeSlot) bool {
	return e.nodes[s.NodeId] || e.operators[s.Operator]
}

// none: nothing is excluded (every task of the job's role sees the same nodes).
func (e exclusion) none() bool { return len(e.nodes) == 0 && len(e.operators) == 0 }

// excludedNodes: the nodes that lost this task before, and the nodes and operators
// holding a sibling task of its shard (replicas must run on different nodes of different
// operators).
func (k Keeper) excludedNodes(ctx context.Context, job types.Job, t types.Task) (exclusion, error) {
	// the maps are made when something goes in them: most tasks (a single-replica
	// primary's first draw) exclude nothing, and a lookup in a nil map finds nothing
	var ex exclusion
	if len(t.ExcludedNodes) > 0 {
		ex.nodes = make(map[uint64]bool, len(t.ExcludedNodes)+2)
	}
	for _, n := range t.ExcludedNodes {
		ex.nodes[n] = true
	}
	// a failure report is confirmed or refuted by another operator only
	if len(t.Failures) > 0 {
		ex.operators = map[string]bool{}
	}
	for _, f := range t.Failures {
		ex.operators[f.Provider] = true
	}
	// A single-replica primary that never lapsed has no sibling yet (an audit is drawn
	// only after its commitment; escalations and committees only after reveals).
	if job.Spec.Replicas == 1 && t.Role == types.TASK_ROLE_PRIMARY && t.Reassignments == 0 {
		return ex, nil
	}
	siblings, err := k.siblings(ctx, job, t)
	if err != nil {
		return exclusion{}, err
	}
	if ex.nodes == nil {
		ex.nodes = map[uint64]bool{}
	}
	if ex.operators == nil {
		ex.operators = map[string]bool{}
	}
	for _, s := range siblings {
		if s.NodeId != 0 {
			ex.nodes[s.NodeId] = true
		}
		if s.Provider != "" {
			ex.operators[s.Provider] = true
		}
		for _, n := range s.ExcludedNodes {
			// a node that lost one of the shard's tasks stays away from the rest
			ex.nodes[n] = ex.nodes[n] || s.Role == t.Role
		}
	}
	return ex, nil
}

// siblings are the other tasks of a task's shard: replicas, escalations, audits and
// committee members, none of which may run on the same node.
func (k Keeper) siblings(ctx context.Context, job types.Job, t types.Task) ([]types.Task, error) {
	var all []types.Task
	var err error
	if t.Role == types.TASK_ROLE_PRIMARY {
		// the shard's first primary is found from this one's id and replica
		all, err = k.shardTasksFrom(ctx, job, t.Index, t.Id-uint64(t.Replica))
	} else {
		all, err = k.shardTasks(ctx, job, t.Index)
	}
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

// drawSeed is the randomness of a pending task's draw of a node (x/gfl DrawSeed): with
// the drand beacon on, the value bound to the block the task became pending in, a round
// nobody knew when the task was created or given back, so no proposer can steer a task
// (an audit, a committee seat, a tie-break or a primary) to a node it favours; not ready
// until that value is on chain (or fell back, after drand.wait_blocks). With drand off,
// the last committed block's hash. A task whose block can no longer get a value binds to
// the current block (written here) and waits.
func (k Keeper) drawSeed(ctx context.Context, t *types.Task) ([32]byte, bool, error) {
	seed, err := k.gfl.DrawSeed(ctx, t.PendingHeight, types.DomainAssign, t.Id, uint64(t.Reassignments))
	switch {
	case err == nil:
		return seed, true, nil
	case errors.Is(err, beacon.ErrUnavailable):
		return seed, false, nil
	case errors.Is(err, beacon.ErrRebind):
		// PendingHeight is in no index: the task is saved as it is
		t.PendingHeight = sdk.UnwrapSDKContext(ctx).BlockHeight()
		return seed, false, k.Tasks.Set(ctx, t.Id, *t)
	}
	return seed, false, err
}

// waitForBeacon parks a pending task whose draw waits for the beacon until the next block,
// alone (its group goes on: its other tasks may have their values) and without counting
// a failed try.
func (k Keeper) waitForBeacon(ctx sdk.Context, job types.Job, t types.Task) error {
	tries := uint32(0)
	if r, err := k.AssignRetries.Get(ctx, t.Id); err == nil {
		tries = r.K2()
	} else if !errors.Is(err, collections.ErrNotFound) {
		return err
	}
	return k.park(ctx, job, t, ctx.BlockHeight()+1, tries)
}

// seedOf is the beacon's most recent value for domain and ids (x/gfl RecentSeed: fixed
// before this block), or the current header's hash before the first block has one.
func (k Keeper) seedOf(ctx context.Context, domain string, ids ...uint64) [32]byte {
	if seed, err := k.gfl.RecentSeed(ctx, domain, ids...); err == nil {
		return seed
	}
	return beacon.Derive(sdk.UnwrapSDKContext(ctx).HeaderHash(), domain, ids...)
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
