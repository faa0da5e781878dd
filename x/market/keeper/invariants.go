package keeper

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/internal/invariant"
	"github.com/flopsnet/flops/x/market/types"
)

// RegisterInvariants registers x/market's accounting invariants.
func (k Keeper) RegisterInvariants(reg invariant.Registrar) {
	reg.Register(types.ModuleName, "escrow", k.EscrowInvariant)
	reg.Register(types.ModuleName, "slots", k.SlotsInvariant)
	reg.Register(types.ModuleName, "due-work", k.DueWorkInvariant)
	reg.Register(types.ModuleName, "stuck-tasks", k.StuckTasksInvariant)
	reg.Register(types.ModuleName, "job-counts", k.JobCountsInvariant)
	reg.Register(types.ModuleName, "job-specs", k.JobSpecsInvariant)
}

// JobSpecsInvariant: every job's spec is stored as its record says (job_program.go): in
// JobSpecs, with its program there if it is at most programApartBytes, else in
// JobPrograms and not in JobSpecs; and neither holds an entry for a job that has no
// record (a prune that left a spec behind).
func (k Keeper) JobSpecsInvariant(ctx sdk.Context) (string, bool) {
	var problems []string
	jobs := 0
	err := k.Jobs.Walk(ctx, nil, func(id uint64, j types.Job) (bool, error) {
		jobs++
		spec, err := k.JobSpecs.Get(ctx, id)
		if err != nil {
			problems = append(problems, fmt.Sprintf("job %d has no spec (%v)", id, err))
			return false, nil
		}
		prog, err := k.JobPrograms.Get(ctx, id)
		hasProgram := err == nil
		if err != nil && !errors.Is(err, collections.ErrNotFound) {
			return true, err
		}
		switch {
		case j.ProgramApart && !hasProgram:
			problems = append(problems, fmt.Sprintf("job %d keeps its program apart, and JobPrograms has none", id))
		case !j.ProgramApart && hasProgram:
			problems = append(problems, fmt.Sprintf("job %d keeps its program in its spec, and JobPrograms has one", id))
		case j.ProgramApart:
			if hasProgramFields(spec) {
				problems = append(problems, fmt.Sprintf("job %d keeps its program apart, and its spec holds one", id))
			}
			if rest, blank := withoutProgram(prog), (types.JobSpec{}); rest.Size() != blank.Size() {
				problems = append(problems, fmt.Sprintf("job %d's JobPrograms entry holds more than its program", id))
			}
			if !programApart(prog) {
				problems = append(problems, fmt.Sprintf("job %d keeps a program of %d bytes apart (at most %d stay in the spec)", id, programSize(prog), programApartBytes))
			}
		case programApart(spec):
			problems = append(problems, fmt.Sprintf("job %d's spec holds a program of %d bytes (more than %d are kept apart)", id, programSize(spec), programApartBytes))
		}
		return false, nil
	})
	if err != nil {
		return invariant.Format(types.ModuleName, "job-specs", err.Error(), true), true
	}
	// orphans: the keys alone (a spec is not decoded)
	for _, m := range []struct {
		name string
		m    collections.Map[uint64, types.JobSpec]
	}{{"JobSpecs", k.JobSpecs}, {"JobPrograms", k.JobPrograms}} {
		it, err := m.m.Iterate(ctx, nil)
		if err != nil {
			return invariant.Format(types.ModuleName, "job-specs", err.Error(), true), true
		}
		ids, err := it.Keys() // the keys alone, the iterator closed
		if err != nil {
			return invariant.Format(types.ModuleName, "job-specs", err.Error(), true), true
		}
		for _, id := range ids {
			has, err := k.Jobs.Has(ctx, id)
			if err != nil {
				return invariant.Format(types.ModuleName, "job-specs", err.Error(), true), true
			}
			if !has {
				problems = append(problems, fmt.Sprintf("%s holds job %d, which has no record", m.name, id))
			}
		}
	}
	return report("job-specs", fmt.Sprintf("%d jobs", jobs), problems)
}

// hasProgramFields says whether a spec holds any of a program's fields (an empty program
// does not encode to nothing: a spec's coins are always written).
func hasProgramFields(s types.JobSpec) bool {
	return len(s.Command) > 0 || len(s.Env) > 0 || len(s.Inputs) > 0 || len(s.TaskArgs) > 0
}

// programSize is the encoded size of a spec's program.
func programSize(s types.JobSpec) int {
	p := jobProgram(s)
	return p.Size()
}

// JobCountsInvariant: the job counts (the record and the jobs submitted since it was
// written) are the jobs the ByStatus index holds in each status.
func (k Keeper) JobCountsInvariant(ctx sdk.Context) (string, bool) {
	var problems []string
	got, err := k.countJobs(ctx)
	if err == nil {
		var want types.JobCounts
		if want, err = k.indexedJobCounts(ctx); err == nil && got != want {
			problems = append(problems, fmt.Sprintf("counted %v, indexed %v", got, want))
		}
	}
	if err != nil {
		return invariant.Format(types.ModuleName, "job-counts", err.Error(), true), true
	}
	return report("job-counts", "job counts", problems)
}

// EscrowInvariant: the escrow account holds exactly the jobs' escrows, the deposits and
// bonds held and the pools' escrows; every job's escrow is its verification budget left
// plus the unpaid reservations of its unfinished tasks; a won bid holds its deposit only
// while a task it won is assigned and not yet acked; every pool's escrow covers its
// unpaid earnings and its open units.
func (k Keeper) EscrowInvariant(ctx sdk.Context) (string, bool) {
	p, err := k.Params.Get(ctx)
	if err != nil {
		return invariant.Format(types.ModuleName, "escrow", err.Error(), true), true
	}
	var problems []string
	held, err := k.heldEscrow(ctx)
	if err != nil {
		return invariant.Format(types.ModuleName, "escrow", err.Error(), true), true
	}
	bal := k.bankKeeper.GetBalance(ctx, k.accountKeeper.GetModuleAddress(types.ModuleName), p.Denom).Amount
	if !bal.Equal(held) {
		problems = append(problems, fmt.Sprintf("escrow account %s%s != jobs and deposits %s%s", bal, p.Denom, held, p.Denom))
	}
	err = k.Jobs.Walk(ctx, nil, func(id uint64, j types.Job) (bool, error) {
		// the won bids that hold their deposits: each until a task it won is acked, so
		// only while one is still assigned (a won task that ends unacked returns or
		// forfeits it)
		var wonHeld []types.Bid
		if j.Status != types.JOB_STATUS_BIDDING {
			// a bid's deposit is held while its job bids, not after
			bids, err := k.jobBids(ctx, id)
			if err != nil {
				return true, err
			}
			for _, b := range bids {
				switch {
				case b.Status == types.BID_STATUS_OPEN:
					problems = append(problems, fmt.Sprintf("job %d (%s) has node %d's bid open", id, j.Status, b.NodeId))
				case b.Status == types.BID_STATUS_WON && b.Deposit.IsPositive():
					wonHeld = append(wonHeld, b)
				}
			}
		}
		if j.FinishedHeight != 0 {
			if !j.Escrow.IsZero() {
				problems = append(problems, fmt.Sprintf("finished job %d holds %s", id, j.Escrow))
			}
			for _, b := range wonHeld {
				problems = append(problems, fmt.Sprintf("finished job %d holds node %d's won bid deposit %s", id, b.NodeId, b.Deposit))
			}
			return false, nil
		}
		j, err := k.loadJob(ctx, id) // with its spec
		if err != nil {
			return true, err
		}
		tasks, err := k.jobTasks(ctx, j)
		if err != nil {
			return true, err
		}
		// an unfinished job has every primary, at the id its shard and replica say
		primaries := uint64(0)
		for _, t := range tasks {
			if t.Role != types.TASK_ROLE_PRIMARY {
				continue
			}
			if want := j.FirstTaskId + j.Spec.PrimaryOffset(t.Index, t.Replica); t.Id != want {
				problems = append(problems, fmt.Sprintf("job %d's primary (shard %d, replica %d) is task %d, not %d", id, t.Index, t.Replica, t.Id, want))
			}
			primaries++
		}
		if primaries != j.Spec.TotalTasks() {
			problems = append(problems, fmt.Sprintf("job %d has %d primaries, not %d", id, primaries, j.Spec.TotalTasks()))
		}
		for _, b := range wonHeld {
			if !wonTaskAssigned(tasks, b.NodeId) {
				problems = append(problems, fmt.Sprintf("job %d holds node %d's won bid deposit %s with no task of the bid assigned", id, b.NodeId, b.Deposit))
			}
		}
		want := j.VerificationLeft
		open := uint32(0)
		for _, t := range tasks {
			if !isFinal(t.Status) {
				want = want.Add(t.Reserved.Sub(t.Paid))
				open++
			}
		}
		if open != j.OpenTasks {
			problems = append(problems, fmt.Sprintf("job %d counts %d open tasks, it has %d", id, j.OpenTasks, open))
		}
		if !j.Escrow.Equal(want) {
			problems = append(problems, fmt.Sprintf("job %d escrow %s != verification budget left + open reservations = %s", id, j.Escrow, want))
		}
		return false, nil
	})
	if err != nil {
		problems = append(problems, err.Error())
	}
	// a challenge's bond is held while its dispute is open, and the disputed task with it:
	// a finished job's are all settled (a pruned job's disputes are deleted with it)
	err = k.Disputes.Walk(ctx, nil, func(id uint64, d types.Dispute) (bool, error) {
		if !d.Bond.IsPositive() {
			return false, nil
		}
		j, err := k.Jobs.Get(ctx, d.JobId)
		if err != nil {
			problems = append(problems, fmt.Sprintf("dispute %d holds a bond %s for job %d: %v", id, d.Bond, d.JobId, err))
		} else if j.FinishedHeight != 0 {
			problems = append(problems, fmt.Sprintf("finished job %d holds dispute %d's bond %s", d.JobId, id, d.Bond))
		}
		return false, nil
	})
	if err != nil {
		problems = append(problems, err.Error())
	}
	err = k.Pools.Walk(ctx, nil, func(id uint64, pl types.Pool) (bool, error) {
		// the walk that reads every pool also checks its layout: the record without its
		// command and environment, its spec stored (poolRecord)
		if len(pl.Spec.Command) > 0 || len(pl.Spec.Env) > 0 {
			problems = append(problems, fmt.Sprintf("pool %d's record holds its command or environment", id))
		}
		if has, err := k.PoolSpecs.Has(ctx, id); err != nil || !has {
			problems = append(problems, fmt.Sprintf("pool %d has no spec (%v)", id, err))
		}
		owed := pl.Unpaid.Add(pl.Spec.UnitPrice.Amount.MulRaw(int64(pl.OpenUnits)))
		switch {
		case pl.Escrow.LT(owed):
			problems = append(problems, fmt.Sprintf("pool %d escrow %s below unpaid credits + open units %s", id, pl.Escrow, owed))
		case pl.Status == types.POOL_STATUS_CLOSED && !pl.Escrow.Equal(owed):
			problems = append(problems, fmt.Sprintf("closed pool %d escrow %s != unpaid credits + claimed units %s", id, pl.Escrow, owed))
		}
		unpaid := sdkmath.ZeroInt()
		if err := k.PoolEarnings.Walk(ctx, collections.NewPrefixedPairRange[uint64, sdk.AccAddress](id), func(_ collections.Pair[uint64, sdk.AccAddress], e types.PoolEarning) (bool, error) {
			unpaid = unpaid.Add(e.Amount)
			return false, nil
		}); err != nil {
			return true, err
		}
		if !unpaid.Equal(pl.Unpaid) {
			problems = append(problems, fmt.Sprintf("pool %d unpaid %s != its members' credits %s", id, pl.Unpaid, unpaid))
		}
		return false, nil
	})
	if err != nil {
		problems = append(problems, err.Error())
	}
	return report("escrow", fmt.Sprintf("escrow account %s%s", bal, p.Denom), problems)
}

// SlotsInvariant: each node's GPUs in use, in-flight tasks and open (unsettled) tasks match
// its tasks; on a node with MIG, the devices in use are exactly those its tasks hold, each
// held by one task, as many as the task's GPUs, whole GPUs unless it may share, on
// different cards unless it may take several slices of one; and the scheduling index
// holds exactly the active nodes at their current load, counted by class and by region.
func (k Keeper) SlotsInvariant(ctx sdk.Context) (string, bool) {
	var problems []string
	perRegion := map[string]uint64{}
	err := k.Slots.Walk(ctx, nil, func(id uint64, s types.NodeSlot) (bool, error) {
		if s.Active {
			perRegion[s.Region]++
		}
		var gpus, tasks, open uint32
		held := types.NodeSlot{Devices: s.Devices} // the devices its tasks hold
		op, err := k.address("operator", s.Operator)
		if err != nil {
			return true, err
		}
		it, err := k.Tasks.Indexes.ByProviderNode.MatchExact(ctx, collections.Join(op, id))
		if err != nil {
			return true, err
		}
		for ; it.Valid(); it.Next() {
			tid, err := it.PrimaryKey()
			if err != nil {
				_ = it.Close()
				return true, err
			}
			t, err := k.Tasks.Get(ctx, tid)
			if err != nil {
				_ = it.Close()
				return true, err
			}
			job, err := k.loadJob(ctx, t.JobId)
			if err != nil {
				_ = it.Close()
				return true, err
			}
			if holdsNode(t.Status) {
				gpus += job.Spec.Requirements.GPUs()
				var found []string
				held.DevicesUsed, found = devicesProblems(s, held, job, t)
				problems = append(problems, found...)
			}
			if inFlight(t.Status) {
				tasks++
			}
			if holdsExposure(t.Status) {
				open++
			}
		}
		_ = it.Close()
		if gpus != s.GpusUsed || tasks != s.Tasks || open != s.OpenTasks {
			problems = append(problems, fmt.Sprintf("node %d: slot says %d GPUs / %d tasks / %d open, its tasks %d / %d / %d", id, s.GpusUsed, s.Tasks, s.OpenTasks, gpus, tasks, open))
		}
		for i := range s.Devices {
			if s.DeviceUsed(i) != held.DeviceUsed(i) {
				problems = append(problems, fmt.Sprintf("node %d: device %d in use %v, held by a task %v", id, i, s.DeviceUsed(i), held.DeviceUsed(i)))
			}
		}
		if len(s.DevicesUsed) > (len(s.Devices)+7)/8 {
			problems = append(problems, fmt.Sprintf("node %d: %d bytes of devices in use for %d devices", id, len(s.DevicesUsed), len(s.Devices)))
		}
		has, err := k.SchedIndex.Has(ctx, indexKey(s))
		if err != nil {
			return true, err
		}
		if has != s.Active {
			problems = append(problems, fmt.Sprintf("node %d: active %v but indexed %v", id, s.Active, has))
		}
		return false, nil
	})
	if err != nil {
		problems = append(problems, err.Error())
	}
	indexed := 0
	type group struct {
		class string
		idle  bool
	}
	perClass := map[group]uint64{}
	if err := k.SchedIndex.Walk(ctx, nil, func(key collections.Triple[string, uint32, uint64]) (bool, error) {
		indexed++
		perClass[group{key.K1(), key.K2() == 0}]++
		return false, nil
	}); err != nil {
		problems = append(problems, err.Error())
	}
	counted := 0
	if err := k.ClassNodes.Walk(ctx, nil, func(class string, c collections.Pair[uint64, uint64]) (bool, error) {
		for _, g := range []struct {
			idle bool
			n    uint64
		}{{true, c.K1()}, {false, c.K2()}} {
			if g.n > 0 {
				counted++
			}
			if perClass[group{class, g.idle}] != g.n {
				problems = append(problems, fmt.Sprintf("class %q idle=%v: counter %d, index %d", class, g.idle, g.n, perClass[group{class, g.idle}]))
			}
		}
		return false, nil
	}); err != nil {
		problems = append(problems, err.Error())
	}
	if counted != len(perClass) {
		problems = append(problems, fmt.Sprintf("%d class counters for %d indexed (class, idle) groups", counted, len(perClass)))
	}
	active := 0
	_ = k.Slots.Walk(ctx, nil, func(_ uint64, s types.NodeSlot) (bool, error) {
		if s.Active {
			active++
		}
		return false, nil
	})
	if indexed != active {
		problems = append(problems, fmt.Sprintf("%d index entries for %d active nodes", indexed, active))
	}
	// the draw's dense numbering: every active node at one position of its class,
	// positions 0..size-1, and the reverse map agrees
	members, inClass := 0, map[string]uint64{}
	if err := k.MemberChunks.Walk(ctx, nil, func(key collections.Pair[string, uint64], chunk []byte) (bool, error) {
		class := key.K1()
		inClass[class] += uint64(len(chunk) / 8)
		size, _ := k.ClassSize.Get(ctx, class)
		if len(chunk) == 0 || len(chunk)%8 != 0 || len(chunk) > 8*memberChunk {
			problems = append(problems, fmt.Sprintf("chunk %d of class %q: %d bytes", key.K2(), class, len(chunk)))
			return false, nil
		}
		for i := 0; i < len(chunk); i += 8 {
			members++
			pos, node := key.K2()*memberChunk+uint64(i/8), binary.BigEndian.Uint64(chunk[i:])
			s, err := k.Slots.Get(ctx, node)
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("member %d of class %q: %v", pos, class, err))
			case !s.Active || s.GpuClass != class:
				problems = append(problems, fmt.Sprintf("node %d at position %d of class %q is not an active node of it", node, pos, class))
			}
			if at, err := k.MemberPos.Get(ctx, node); err != nil || at != pos {
				problems = append(problems, fmt.Sprintf("node %d at position %d of class %q: reverse position %d (%v)", node, pos, class, at, err))
			}
			if pos >= size {
				problems = append(problems, fmt.Sprintf("node %d at position %d of class %q of size %d", node, pos, class, size))
			}
		}
		return false, nil
	}); err != nil {
		problems = append(problems, err.Error())
	}
	// every position of a class is held: a draw of any position below the size finds a node
	if err := k.ClassSize.Walk(ctx, nil, func(class string, size uint64) (bool, error) {
		if inClass[class] != size {
			problems = append(problems, fmt.Sprintf("class %q of size %d holds %d members", class, size, inClass[class]))
		}
		return false, nil
	}); err != nil {
		problems = append(problems, err.Error())
	}
	if members != active {
		problems = append(problems, fmt.Sprintf("%d class members for %d active nodes", members, active))
	}
	regions := 0
	if err := k.RegionNodes.Walk(ctx, nil, func(region string, n uint64) (bool, error) {
		regions++
		if perRegion[region] != n {
			problems = append(problems, fmt.Sprintf("region %q: counter %d, active nodes %d", region, n, perRegion[region]))
		}
		return false, nil
	}); err != nil {
		problems = append(problems, err.Error())
	}
	if regions != len(perRegion) {
		problems = append(problems, fmt.Sprintf("%d region counters for the active nodes' %d regions", regions, len(perRegion)))
	}
	return report("slots", fmt.Sprintf("%d active nodes", active), problems)
}

// DueWorkInvariant: every task holds exactly the due-work entry its status calls for (the
// lifecycle core's table, transition.go) and no queue holds an entry for a task in
// another status: an item a block hook dropped, or a stale entry it would trip over,
// shows here.
func (k Keeper) DueWorkInvariant(ctx sdk.Context) (string, bool) {
	var problems []string
	expected, running := 0, 0
	jobs := map[uint64]types.Job{}
	err := k.Tasks.Walk(ctx, nil, func(id uint64, t types.Task) (bool, error) {
		job, ok := jobs[t.JobId]
		if !ok {
			j, err := k.loadJob(ctx, t.JobId)
			if err != nil {
				return true, err
			}
			job, jobs[t.JobId] = j, j
		}
		has, where, err := k.hasEntry(ctx, job, t)
		if err != nil {
			return true, err
		}
		if !has {
			// an item that failed waits in the retries instead of its queue
			if kind := retryKind(job, t); kind != "" {
				n, err := k.Retries.Attempt(ctx, blockhook.Item{Kind: kind, ID: id})
				if err != nil {
					return true, err
				}
				has, where = n > 0, ""
			}
		}
		if where != "" {
			expected++
		}
		if !has {
			problems = append(problems, fmt.Sprintf("task %d (%s, job %s) has no %s entry", id, t.Status, job.Status, where))
		}
		if t.Status == types.TASK_STATUS_RUNNING {
			running++
			if ok, err := k.NodeRunning.Has(ctx, collections.Join(t.NodeId, id)); err != nil {
				return true, err
			} else if !ok {
				problems = append(problems, fmt.Sprintf("running task %d is not indexed under its node %d", id, t.NodeId))
			}
		}
		return false, nil
	})
	if err != nil {
		problems = append(problems, err.Error())
	}
	// every entry belongs to a task in that status: count them all
	entries := 0
	count := func(n int, err error) {
		entries += n
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	count(countKeys(ctx, k.Waiting))
	count(groupsOfOne(ctx, k.Groups)) // each names its task instead of an entry
	count(countKeys(ctx, k.AssignRetryAt))
	count(countKeys(ctx, k.AckDeadlines))
	count(countKeys(ctx, k.RunDeadlines))
	count(countKeys(ctx, k.RevealDeadlines))
	count(countKeys(ctx, k.SettleQueue))
	count(countKeys(ctx, k.AuditDraws))
	retries := 0
	if err := k.AssignRetries.Walk(ctx, nil, func(uint64, collections.Pair[int64, uint32]) (bool, error) {
		retries++
		return false, nil
	}); err != nil {
		problems = append(problems, err.Error())
	} else if parked, err := countKeys(ctx, k.AssignRetryAt); err == nil && retries != parked {
		problems = append(problems, fmt.Sprintf("%d retry records for %d parked entries", retries, parked))
	}
	if entries != expected {
		problems = append(problems, fmt.Sprintf("%d due-work entries for %d tasks that hold one", entries, expected))
	}
	problems = append(problems, k.groupProblems(ctx)...)
	if n, err := countKeys(ctx, k.NodeRunning); err != nil {
		problems = append(problems, err.Error())
	} else if n != running {
		problems = append(problems, fmt.Sprintf("%d node-running entries for %d running tasks", n, running))
	}
	return report("due-work", fmt.Sprintf("%d due-work entries", entries), problems)
}

// StuckTasksInvariant: no unfinished job holds a task that can never move. A task moves
// on its own clock (the due-work entry of its status: a pending task the scheduler may take,
// an ack, run, audit-draw, reveal or settle deadline), or on the clock of its job (a
// BIDDING job's auction close, a cancelled job's sweep), or waits for another task of its
// job that has one (a committed replica for its group's commitments, a revealed one for its
// group's reveals, its audit, escalation or committee). An unfinished job with no task
// left, a pending task the scheduler will never take, or a job whose waiting tasks have no
// clock anywhere in the job would keep its escrow, the providers' exposure and their
// collateral locked for ever.
func (k Keeper) StuckTasksInvariant(ctx sdk.Context) (string, bool) {
	var problems []string
	jobClock := func(kind string, ks collections.KeySet[collections.Pair[int64, uint64]]) map[uint64]bool {
		has := map[uint64]bool{}
		if err := ks.Walk(ctx, nil, func(key collections.Pair[int64, uint64]) (bool, error) {
			has[key.K2()] = true
			return false, nil
		}); err != nil {
			problems = append(problems, err.Error())
		}
		return has
	}
	auctions, sweeps := jobClock(kindAuction, k.AuctionClose), jobClock(kindCancel, k.CancelSweeps)
	retrying := func(kind string, id uint64) bool {
		n, err := k.Retries.Attempt(ctx, blockhook.Item{Kind: kind, ID: id})
		if err != nil {
			problems = append(problems, err.Error())
		}
		return n > 0
	}
	unfinished := 0
	err := k.Jobs.Walk(ctx, nil, func(id uint64, j types.Job) (bool, error) {
		if auctions[id] && j.Status != types.JOB_STATUS_BIDDING {
			problems = append(problems, fmt.Sprintf("job %d (%s) has an auction close", id, j.Status))
		}
		if j.FinishedHeight != 0 {
			return false, nil
		}
		unfinished++
		j, err := k.loadJob(ctx, id) // with its spec
		if err != nil {
			return true, err
		}
		tasks, err := k.jobTasks(ctx, j)
		if err != nil {
			return true, err
		}
		clocks := 0
		var waiting, done []string
		open := 0
		for _, t := range tasks {
			if isFinal(t.Status) {
				done = append(done, fmt.Sprintf("%d (%s, %s)", t.Id, t.Role, t.Status))
				continue
			}
			open++
			if t.Status == types.TASK_STATUS_PENDING && !queued(j, t) {
				switch {
				case j.Status == types.JOB_STATUS_BIDDING && (auctions[id] || retrying(kindAuction, id)):
					clocks++
				case j.Status == types.JOB_STATUS_CANCELLED && (sweeps[id] || retrying(kindCancel, id)):
					clocks++
				default:
					problems = append(problems, fmt.Sprintf("job %d (%s): pending task %d (%s) is never scheduled and nothing cancels it", id, j.Status, t.Id, t.Role))
				}
				continue
			}
			if _, where, err := k.hasEntry(ctx, j, t); err != nil {
				return true, err
			} else if where != "" {
				clocks++ // whether the entry is there is the due-work invariant's business
				continue
			}
			waiting = append(waiting, fmt.Sprintf("%d (%s, %s)", t.Id, t.Role, t.Status))
		}
		switch {
		case open == 0:
			problems = append(problems, fmt.Sprintf("job %d (%s) is unfinished with no task left to finish it", id, j.Status))
		case clocks == 0 && len(waiting) > 0:
			problems = append(problems, fmt.Sprintf("job %d (%s, %s x%d): tasks %s wait and no task of the job can move (its finished tasks: %s)",
				id, j.Status, j.Spec.Verification, j.Spec.Replicas, strings.Join(waiting, ", "), strings.Join(done, ", ")))
		}
		return false, nil
	})
	if err != nil {
		problems = append(problems, err.Error())
	}
	return report("stuck-tasks", fmt.Sprintf("%d unfinished jobs", unfinished), problems)
}

// retryKind is the block-work kind that handles a task's due entry of its status ("" for
// none).
func retryKind(job types.Job, t types.Task) string {
	switch t.Status {
	case types.TASK_STATUS_PENDING:
		return kindAssign
	case types.TASK_STATUS_ASSIGNED:
		return kindAck
	case types.TASK_STATUS_RUNNING:
		return kindRun
	case types.TASK_STATUS_COMMITTED:
		if awaitsAuditDraw(job, t) {
			return kindAudit
		}
		return kindReveal
	case types.TASK_STATUS_VERIFIED:
		return kindSettle
	}
	return ""
}

// hasEntry says whether the task holds the entry its status calls for, and names it
// ("" when the status holds none).
func (k Keeper) hasEntry(ctx sdk.Context, job types.Job, t types.Task) (bool, string, error) {
	switch t.Status {
	case types.TASK_STATUS_PENDING:
		if !queued(job, t) {
			return true, "", nil
		}
		if r, err := k.AssignRetries.Get(ctx, t.Id); err == nil {
			has, err := k.AssignRetryAt.Has(ctx, collections.Join(r.K1(), t.Id))
			return has, "parked AssignRetryAt", err
		}
		has, err := k.waitsInGroup(ctx, t)
		return has, "Waiting (or its group of one's record)", err
	case types.TASK_STATUS_ASSIGNED:
		has, err := k.AckDeadlines.Has(ctx, collections.Join(t.AckDeadlineHeight, t.Id))
		return has, "AckDeadlines", err
	case types.TASK_STATUS_RUNNING:
		has, err := k.RunDeadlines.Has(ctx, collections.Join(t.RunDeadline, t.Id))
		return has, "RunDeadlines", err
	case types.TASK_STATUS_COMMITTED:
		if awaitsAuditDraw(job, t) {
			has, err := k.AuditDraws.Has(ctx, collections.Join(auditDrawHeight(t), t.Id))
			return has, "AuditDraws", err
		}
		if t.RevealDeadlineHeight != 0 {
			has, err := k.RevealDeadlines.Has(ctx, collections.Join(t.RevealDeadlineHeight, t.Id))
			return has, "RevealDeadlines", err
		}
	case types.TASK_STATUS_VERIFIED:
		has, err := k.SettleQueue.Has(ctx, collections.Join(t.SettleHeight, t.Id))
		return has, "SettleQueue", err
	}
	return true, "", nil
}

// groupProblems checks the scheduler's groups (queue.go): every group with waiting tasks
// has a record that counts them and knows its lowest one (or says it does not; a group of
// one names its task and has no waiting set entry, one of several has an entry each), and is
// either queued at its job's priority or parked with its retry entry, never both; no
// group is queued, parked or recorded without a waiting task; the queue's counts (kept and
// pending) are those of a walk.
func (k Keeper) groupProblems(ctx sdk.Context) []string {
	var problems []string
	type tally struct {
		g      group
		n      uint64
		lowest uint64
	}
	var groups []tally
	if err := k.Waiting.Walk(ctx, nil, func(key collections.Triple[uint64, int32, uint64]) (bool, error) {
		if last := len(groups) - 1; last >= 0 && groups[last].g.K1() == key.K1() && groups[last].g.K2() == key.K2() {
			groups[last].n++
			return false, nil
		}
		groups = append(groups, tally{g: collections.Join(key.K1(), key.K2()), n: 1, lowest: key.K3()})
		return false, nil
	}); err != nil {
		return []string{err.Error()}
	}
	// a group of one names its task in its record and has no entry
	type gid struct {
		job  uint64
		role int32
	}
	entries := map[gid]bool{} // (a Pair holds pointers: not a map key)
	for _, t := range groups {
		entries[gid{t.g.K1(), t.g.K2()}] = true
	}
	records := 0
	if err := k.Groups.Walk(ctx, nil, func(g group, v groupValue) (bool, error) {
		records++
		name := fmt.Sprintf("group (job %d, %s)", g.K1(), types.TaskRole(g.K2()))
		has := entries[gid{g.K1(), g.K2()}]
		if has && v.K1() < 2 {
			problems = append(problems, fmt.Sprintf("%s: record says %d waiting (task %d), and it has waiting set entries", name, v.K1(), v.K2()))
		}
		if !has && v.K1() == 1 {
			if v.K2() == 0 {
				problems = append(problems, name+": a group of one does not name its task")
			}
			groups = append(groups, tally{g: g, n: 1, lowest: v.K2()})
		}
		return false, nil
	}); err != nil {
		return append(problems, err.Error())
	}
	queued := 0
	for _, t := range groups {
		name := fmt.Sprintf("group (job %d, %s)", t.g.K1(), types.TaskRole(t.g.K2()))
		s, found, err := k.getGroup(ctx, t.g)
		if err != nil {
			return append(problems, err.Error())
		}
		if !found {
			problems = append(problems, name+" has waiting tasks and no record")
			continue
		}
		if s.size != t.n || (s.first != 0 && s.first != t.lowest) {
			problems = append(problems, fmt.Sprintf("%s: record says %d waiting from task %d, the waiting set %d from task %d", name, s.size, s.first, t.n, t.lowest))
		}
		spec, err := k.JobSpecs.Get(ctx, t.g.K1())
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		inQueue, err := k.AssignQueue.Has(ctx, groupKey(types.Job{Id: t.g.K1(), Spec: spec}, types.TaskRole(t.g.K2())))
		if err != nil {
			return append(problems, err.Error())
		}
		if inQueue {
			queued++
		}
		switch {
		case s.parked == 0 && !inQueue:
			problems = append(problems, name+" is neither queued nor parked")
		case s.parked != 0 && inQueue:
			problems = append(problems, fmt.Sprintf("%s is queued and parked until %d", name, s.parked))
		case s.parked != 0:
			if has, err := k.GroupRetryAt.Has(ctx, collections.Join3(s.parked, t.g.K1(), t.g.K2())); err != nil || !has {
				problems = append(problems, fmt.Sprintf("%s parked until %d has no retry entry (%v)", name, s.parked, err))
			}
		}
	}
	count := func(what string, n int, err error, want int) {
		if err != nil {
			problems = append(problems, err.Error())
		} else if n != want {
			problems = append(problems, fmt.Sprintf("%d %s for %d groups", n, what, want))
		}
	}
	count("group records", records, nil, len(groups))
	n, err := countKeys(ctx, k.AssignQueue)
	count("queued groups", n, err, queued)
	n, err = countKeys(ctx, k.GroupRetryAt)
	count("group retry entries", n, err, len(groups)-queued)
	return append(problems, k.queueCountProblems(ctx)...)
}

func groupsOfOne(ctx sdk.Context, groups collections.Map[group, groupValue]) (int, error) {
	n := 0
	err := groups.Walk(ctx, nil, func(_ group, v groupValue) (bool, error) {
		if v.K1() == 1 {
			n++
		}
		return false, nil
	})
	return n, err
}

func countKeys[K any](ctx sdk.Context, ks collections.KeySet[K]) (int, error) {
	n := 0
	err := ks.Walk(ctx, nil, func(K) (bool, error) {
		n++
		return false, nil
	})
	return n, err
}

func report(route, summary string, problems []string) (string, bool) {
	msg := summary
	for _, p := range problems {
		msg += "\n" + p
	}
	return invariant.Format(types.ModuleName, route, msg, len(problems) > 0), len(problems) > 0
}

// HeldExposure is the collateral exposure the market holds for each provider (by its
// canonical address string): the exposure of every task that holds some, of every
// failure report waiting for its confirmation, of every pool claim waiting for its
// reveal and of every open bid (one task at its price). x/staking-slash's exposure of
// each provider must equal it (the app registers that invariant, which reads both
// modules).
func (k Keeper) HeldExposure(ctx sdk.Context) (map[string]sdkmath.Int, error) {
	held := map[string]sdkmath.Int{}
	add := func(provider string, v sdkmath.Int) {
		if provider == "" || v.IsNil() || v.IsZero() {
			return
		}
		if cur, ok := held[provider]; ok {
			v = cur.Add(v)
		}
		held[provider] = v
	}
	err := k.Tasks.Walk(ctx, nil, func(_ uint64, t types.Task) (bool, error) {
		if holdsExposure(t.Status) {
			add(t.Provider, t.Exposure)
		}
		for _, f := range t.Failures {
			if f.Status == types.FAILURE_STATUS_PENDING {
				add(f.Provider, f.Exposure)
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	err = k.Units.Walk(ctx, nil, func(_ collections.Pair[uint64, uint64], u types.Unit) (bool, error) {
		if u.Status == types.UNIT_STATUS_COMMITTED {
			add(u.Provider, u.Exposure)
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	err = k.Bids.Walk(ctx, nil, func(_ collections.Pair[uint64, uint64], b types.Bid) (bool, error) {
		if b.Status == types.BID_STATUS_OPEN {
			add(b.Provider, b.Exposure)
		}
		return false, nil
	})
	return held, err
}

// devicesProblems checks the devices a task holding a node was given against the node's
// slot and the devices its other tasks hold (held), and returns held's bitmap with the
// task's devices added.
func devicesProblems(s, held types.NodeSlot, job types.Job, t types.Task) ([]byte, []string) {
	if len(s.Devices) == 0 {
		if len(t.Devices) > 0 {
			return held.DevicesUsed, []string{fmt.Sprintf("task %d holds devices %v of node %d, which has no MIG", t.Id, t.Devices, s.NodeId)}
		}
		return held.DevicesUsed, nil
	}
	req := job.Spec.Requirements
	if uint32(len(t.Devices)) != req.GPUs() {
		return held.DevicesUsed, []string{fmt.Sprintf("task %d holds %d devices of node %d, it needs %d", t.Id, len(t.Devices), s.NodeId, req.GPUs())}
	}
	bits, ok := held.MarkDevices(t.Devices, true)
	if !ok {
		return held.DevicesUsed, []string{fmt.Sprintf("task %d holds devices %v of node %d: one is unknown, repeated or another task's", t.Id, t.Devices, s.NodeId)}
	}
	var out []string
	cards := map[uint32]bool{}
	for _, i := range t.Devices {
		d := s.Devices[i]
		if d.Slices != 0 && !req.SharedGpuOk {
			out = append(out, fmt.Sprintf("task %d runs on MIG device %d of node %d without shared_gpu_ok", t.Id, i, s.NodeId))
		}
		if cards[d.Card] && !req.MultiSliceOk {
			out = append(out, fmt.Sprintf("task %d has two devices of card %d of node %d without multi_slice_ok", t.Id, d.Card, s.NodeId))
		}
		cards[d.Card] = true
	}
	return bits, out
}
