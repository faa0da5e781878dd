package agent

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/flopsnet/flops/worker/config"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/query"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flopsnet/flops/internal/beacon"
	"github.com/flopsnet/flops/worker/chain"
	"github.com/flopsnet/flops/worker/executor"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// claim is a pool unit this node races for.
type claim struct {
	pool  markettypes.Pool
	unit  markettypes.Unit
	res   executor.Result
	phase claimPhase
	// disk is the disk its run may fill (the market's task_disk_mib_per_gpu for each GPU
	// of the pool's spec), read with the params of the block that claimed it
	disk uint64
	// gpus: the GPUs pinned for its run; cancel ends the run (a task needs its GPUs:
	// giveUpUnits), givenUp says it was so ended (under mu)
	gpus    []string
	cancel  context.CancelFunc
	givenUp bool
}

// withdrawAfter: credits are withdrawn once this many units are credited (or the pool
// closed): one transfer for many units.
const withdrawAfter = 10

// unitTaskID numbers a pool unit for the executor's directories and the GPU pins (apart
// from task ids).
func unitTaskID(pool, unit uint64) uint64 { return 1<<63 | pool<<32 | unit&(1<<32-1) }

// isUnitRun: the id is a pool unit's (unitTaskID), not a task's.
func isUnitRun(id uint64) bool { return id&(1<<63) != 0 }

// giveUpUnits ends the runs of the pool units that hold the given GPU (or MIG) UUIDs, for
// a task of the chain's that needs them (pinFree): a unit is a race nothing on chain holds
// the node to, a task is not. Their pins go when their runs return. It names the units
// (a.mu held).
func (a *Agent) giveUpUnits(uuids []string) string {
	ids := map[uint64]bool{}
	for _, u := range uuids {
		ids[a.pinned[u]] = true
	}
	var names []string
	for _, key := range slices.Sorted(maps.Keys(a.claims)) {
		c := a.claims[key]
		if !ids[unitTaskID(c.pool.Id, c.unit.Id)] || c.cancel == nil {
			continue
		}
		if !c.givenUp {
			c.givenUp = true
			c.cancel()
		}
		names = append(names, fmt.Sprintf("%d/%d", c.pool.Id, c.unit.Id))
	}
	return strings.Join(names, ", ")
}

// poolActions joins the pools the node is eligible for, races for open units (each
// computed beside the loop and committed the moment it is ready: the first valid
// commitment claims a unit), reveals its claims, and withdraws its credits in batches.
//
// The pools the node is in are followed by id, each tick. The others are read once, from
// where the last tick left off (newPools): before, every pool the chain keeps was read
// each block, 200 a query, before anything was done in any pool, so a client who opened
// a dozen pools of the largest specs had every worker's read refused, and no claim
// revealed (a lapsed claim slashes its provider).
//
// Pools.Auto joins a pool only when it has work posted (open units), and while fewer
// than Pools.MaxJoined of the pools it is in have work: a join is a transaction its
// provider pays for, and each pool the node is in is read every block. Before, a client
// who opened pools and posted nothing had every worker on the chain pay to join each one,
// and read it every block after. A pool passed over so is kept (a.waiting) and read
// again, a few a tick (joinRechecks), until it is joined or closed. A pool the node is in
// counts while it has work only, so that a client's pools, idle once their few units are
// done, cannot hold every worker's room against other pools; the node leaves a pool idle
// for Pools.LeaveIdleBlocks (leaveIdle), and joins it again when work comes. Pools named
// in Pools.Join are joined, and kept, as they are: the operator chose them.
func (a *Agent) poolActions(ctx context.Context, height int64) []action {
	if !a.cfg.Pools.Auto && len(a.cfg.Pools.Join) == 0 {
		return nil
	}
	wanted := map[uint64]bool{}
	for _, id := range a.cfg.Pools.Join {
		wanted[id] = true
	}
	op := a.o.Chain.Address().String()
	slot := markettypes.SlotFromNode(a.node)
	var acts []action
	busy := 0 // pools with work Auto has the node in, or joining (those in Pools.Join apart)
	for _, id := range a.memberPools() {
		pool, found, err := a.followPool(ctx, id)
		if !found {
			a.poolGone(id)
			continue
		} else if err != nil {
			if !wanted[id] {
				busy++ // counted as busy while it cannot be read
			}
			continue
		}
		if pool.Status == markettypes.POOL_STATUS_OPEN {
			if !wanted[id] && pool.OpenUnits > 0 {
				busy++
			}
			if !offMarket(a.node) {
				a.race(ctx, height, pool)
			}
			if act, ok := a.leaveIdle(ctx, height, pool, wanted[id]); ok {
				acts = append(acts, act) // no claim of the node left in it; its credits withdrawn with the leave
				continue
			}
		}
		acts = append(acts, a.revealUnits(ctx, height, pool)...)
		if act, ok := a.withdraw(ctx, height, pool); ok {
			acts = append(acts, act)
		}
		a.forgetIfEvicted(id)
	}
	fresh, err := a.newPools(ctx, slot)
	if err != nil {
		a.log.Warn("pools", "err", err) // those read before it are looked at, and the node's pools followed
	}
	a.mu.Lock()
	for what := range a.inflight {
		if rest, joining := strings.CutPrefix(what, joinPrefix); joining {
			if id, err := strconv.ParseUint(rest, 10, 64); err == nil && !wanted[id] {
				busy++
			}
		}
	}
	a.mu.Unlock()
	for _, pool := range append(fresh, a.waitingPools(ctx)...) {
		if pool.Owner == op {
			continue
		}
		// after a start, the pools the node is in are found here (closed ones too: claims
		// to reveal, credits to withdraw)
		member, err := a.member(ctx, pool.Id)
		if err != nil {
			a.log.Warn("pool members", "pool", pool.Id, "err", err)
			a.pools.rewind(pool.Id)
			continue
		}
		if member || pool.Status != markettypes.POOL_STATUS_OPEN || (!a.cfg.Pools.Auto && !wanted[pool.Id]) {
			a.stopWaiting(pool.Id)
			continue
		}
		if !slot.Active || !markettypes.Serves(slot, markettypes.JobSpec{Workload: pool.Spec.Workload, Runtime: pool.Spec.Runtime, Requirements: pool.Spec.Requirements}) {
			a.stopWaiting(pool.Id)
			continue // read again when the node's slot changes
		}
		if !wanted[pool.Id] && (pool.OpenUnits == 0 || busy >= a.cfg.Pools.MaxJoined) {
			a.wait(pool.Id)
			continue
		}
		a.stopWaiting(pool.Id)
		if !wanted[pool.Id] {
			busy++
		}
		poolID := pool.Id
		acts = append(acts, action{what: fmt.Sprintf("%s%d", joinPrefix, pool.Id),
			msgs: msgs(&markettypes.MsgJoinPool{Provider: op, PoolId: pool.Id, NodeId: a.node.Id}),
			after: func(err error) {
				a.mu.Lock()
				defer a.mu.Unlock()
				switch {
				case err == nil || errors.Is(err, markettypes.ErrAlreadyMember):
					a.joined[poolID] = true
				case a.poolRetry == 0 || poolID < a.poolRetry:
					a.poolRetry = poolID // a full pool, or a failed tx: tried again at the next tick
				}
			}})
	}
	return acts
}

// offMarket: the node's operator took it off the market (draining, or deactivated): it
// races no pool and leaves the pools it is in.
func offMarket(n gfltypes.Node) bool {
	return n.Status == gfltypes.NODE_STATUS_DRAINING || n.Status == gfltypes.NODE_STATUS_INACTIVE
}

// joinPrefix names a join's action ("join pool 7"), in flight while its tx is.
const joinPrefix = "join pool "

// joinRechecks bounds the pools passed over (a.waiting) read again a tick.
const joinRechecks = 4

// wait keeps a pool passed over (no work posted, or the node in Pools.MaxJoined pools
// with work) to be read again (waitingPools).
func (a *Agent) wait(id uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.waiting[id] = true
}

// stopWaiting forgets a pool joined, closed, or not for this node.
func (a *Agent) stopWaiting(id uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.waiting, id)
}

// waitingPools reads again up to joinRechecks of the pools passed over, in id order from
// where the last tick stopped, round the list; one the chain no longer keeps is
// forgotten.
func (a *Agent) waitingPools(ctx context.Context) []markettypes.Pool {
	a.mu.Lock()
	ids := sortedKeys(a.waiting)
	from := a.waitNext
	a.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	start, _ := slices.BinarySearch(ids, from)
	var pools []markettypes.Pool
	for i := range min(joinRechecks, len(ids)) {
		id := ids[(start+i)%len(ids)]
		a.mu.Lock()
		a.waitNext = id + 1
		a.mu.Unlock()
		pool, found, err := a.readPool(ctx, id, false) // a pool passed over is checked against the node again
		if !found {
			a.stopWaiting(id)
		} else if err == nil {
			pools = append(pools, pool)
		}
	}
	return pools
}

// leaveIdle leaves an open pool that has had no work (open units) for
// Pools.LeaveIdleBlocks blocks, once the node holds no claim in it; its credits, if any,
// are withdrawn in the same transaction (a pool left is no longer followed). The pool is
// then among those passed over (a.waiting), joined again when work is posted. A pool
// named in Pools.Join is kept. A node its operator took off the market (draining or
// inactive: offMarket) leaves every pool, named ones too, once its claims there are
// revealed: it claims nothing more, and its place would keep another node out (joined
// again once the node is back).
func (a *Agent) leaveIdle(ctx context.Context, height int64, pool markettypes.Pool, named bool) (action, bool) {
	off := offMarket(a.node)
	a.mu.Lock()
	if !off && (named || a.cfg.Pools.LeaveIdleBlocks == 0 || pool.OpenUnits > 0) {
		delete(a.idleSince, pool.Id)
		a.mu.Unlock()
		return action{}, false
	}
	since, seen := a.idleSince[pool.Id]
	if !seen {
		a.idleSince[pool.Id] = height
	}
	claimed := false
	for _, c := range a.claims {
		claimed = claimed || c.pool.Id == pool.Id
	}
	a.mu.Unlock()
	if claimed || (!off && (!seen || height-since < a.cfg.Pools.LeaveIdleBlocks)) {
		return action{}, false
	}
	op := a.o.Chain.Address().String()
	var ms []sdk.Msg
	res, err := a.credits(ctx, pool.Id)
	if err != nil {
		a.log.Warn("pool earnings", "pool", pool.Id, "err", err)
		return action{}, false // its credits unknown: not left this tick
	}
	if res != nil {
		ms = append(ms, &markettypes.MsgWithdrawPoolEarnings{Provider: op, PoolId: pool.Id})
	}
	ms = append(ms, &markettypes.MsgLeavePool{Provider: op, PoolId: pool.Id, NodeId: a.node.Id})
	id, idle := pool.Id, height-since
	return action{what: fmt.Sprintf("leave pool %d", pool.Id), msgs: ms,
		after: func(err error) {
			if err != nil {
				return // left at a later tick
			}
			if off {
				a.log.Info("left a pool: the node is off the market", "pool", id, "credits_withdrawn", len(ms) > 1)
			} else {
				a.log.Info("left an idle pool", "pool", id, "idle_blocks", idle, "credits_withdrawn", len(ms) > 1)
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			a.unfollow(id)
			a.waiting[id] = true
		}}, true
}

// readPool reads a pool by id; found is false for a pool the chain no longer keeps
// (pruned after closing). Another error is logged, and found is true. With omitSpec the
// pool comes without its spec.
func (a *Agent) readPool(ctx context.Context, id uint64, omitSpec bool) (pool markettypes.Pool, found bool, err error) {
	res, err := a.market.Pool(ctx, &markettypes.QueryPoolRequest{PoolId: id, OmitSpec: omitSpec}, grpc.MaxCallRecvMsgSize(listAnswerBytes))
	if status.Code(err) == codes.NotFound {
		return pool, false, err
	} else if err != nil {
		a.log.Warn("pool", "pool", id, "err", err)
		return pool, true, err
	}
	return res.Pool, true, nil
}

// followPool reads a pool the node is in, as readPool does: its spec, which never
// changes, once (a.poolSpecs), and its record alone at the blocks after: a spec may be
// about 330 KB, and the node's pools are read every block.
func (a *Agent) followPool(ctx context.Context, id uint64) (markettypes.Pool, bool, error) {
	a.mu.Lock()
	spec, have := a.poolSpecs[id]
	a.mu.Unlock()
	pool, found, err := a.readPool(ctx, id, have)
	if !found || err != nil {
		return pool, found, err
	}
	if have {
		pool.Spec = spec
		return pool, true, nil
	}
	a.mu.Lock()
	a.poolSpecs[id] = pool.Spec
	a.mu.Unlock()
	return pool, true, nil
}

// newPools reads the pools the worker has not read yet (a.pools), from a pool whose join
// failed if one did.
func (a *Agent) newPools(ctx context.Context, slot markettypes.NodeSlot) ([]markettypes.Pool, error) {
	a.mu.Lock()
	retry := a.poolRetry
	a.poolRetry = 0
	a.mu.Unlock()
	if retry != 0 {
		a.pools.rewind(retry)
	}
	return readList(&a.pools, slot, func(pg *query.PageRequest, opt grpc.CallOption) ([]markettypes.Pool, *query.PageResponse, error) {
		res, err := a.market.Pools(ctx, &markettypes.QueryPoolsRequest{Pagination: pg}, opt)
		if err != nil {
			return nil, nil, err
		}
		return res.Pools, res.Pagination, nil
	}, func(p markettypes.Pool) uint64 { return p.Id })
}

// memberPools lists the pools the node is known to be in, in id order.
func (a *Agent) memberPools() []uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return sortedKeys(a.joined)
}

// forgetIfEvicted forgets a pool the node lost its place in (a claim refused as from a
// non-member) once none of its claims there is left to reveal, and reads the pool again
// (waiting), to join it when it has room: its credits are paid at the pool's close if not
// withdrawn before.
func (a *Agent) forgetIfEvicted(id uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.evicted[id] {
		return
	}
	for _, c := range a.claims {
		if c.pool.Id == id {
			return
		}
	}
	a.unfollow(id)
	a.waiting[id] = true
}

// unfollow forgets what the worker keeps of a pool it follows (under mu): it is no longer
// read each tick, raced, revealed in or withdrawn from.
func (a *Agent) unfollow(id uint64) {
	delete(a.joined, id)
	delete(a.idleSince, id)
	delete(a.poolSpecs, id)
	delete(a.earningsRead, id)
	delete(a.refusedUntil, id)
	delete(a.evicted, id)
}

// poolGone forgets a pool the chain no longer keeps (pruned after closing), and its
// claims: nothing is left to reveal, and a claim kept would hold a slot of
// pools.max_claims for ever.
func (a *Agent) poolGone(id uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.unfollow(id)
	for key, c := range a.claims {
		if c.pool.Id == id && c.phase == claimCommitted {
			delete(a.claims, key)
			_ = a.state.del(key)
			a.log.Info("claim forgotten: its pool is gone", "pool", c.pool.Id, "unit", c.unit.Id)
		}
	}
}

// adoptClaims takes back the pool units committed before a restart, from the records kept
// on disk (a record is written before its commitment is sent): each is revealed as any
// claim is once the chain shows it committed by this node, and forgotten when the chain
// shows otherwise (the commitment never landed, or the claim lapsed meanwhile).
func (a *Agent) adoptClaims(keys []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, key := range keys {
		if !strings.HasPrefix(key, "unit-") {
			continue
		}
		rec, found, err := a.state.get(key)
		if err != nil || !found || rec.Kind != "unit" {
			a.log.Warn("a kept unit record is unreadable: not adopted", "key", key, "err", err)
			continue
		}
		if _, ok := a.claims[key]; ok {
			continue
		}
		a.claims[key] = &claim{pool: markettypes.Pool{Id: rec.PoolID}, unit: markettypes.Unit{PoolId: rec.PoolID, Id: rec.UnitID}, phase: claimCommitted}
		a.joined[rec.PoolID] = true // a claim was made as a member: its pool is followed
		a.log.Info("claim adopted from before a restart", "pool", rec.PoolID, "unit", rec.UnitID)
	}
}

// member says whether the node is in a pool (remembered once known).
func (a *Agent) member(ctx context.Context, poolID uint64) (bool, error) {
	a.mu.Lock()
	known := a.joined[poolID]
	a.mu.Unlock()
	if known {
		return true, nil
	}
	var key []byte
	for {
		res, err := a.market.PoolMembers(ctx, &markettypes.QueryPoolMembersRequest{PoolId: poolID, Pagination: &query.PageRequest{Key: key, Limit: 100}})
		if err != nil {
			return false, err
		}
		for _, m := range res.Members {
			if m.NodeId == a.node.Id {
				a.mu.Lock()
				a.joined[poolID] = true
				a.mu.Unlock()
				return true, nil
			}
		}
		if res.Pagination == nil || len(res.Pagination.NextKey) == 0 {
			return false, nil
		}
		key = res.Pagination.NextKey
	}
}

// race claims open units up to pools.max_claims in flight. Members take units in an
// order of their own (a hash of node and unit) so that they rarely compute the same one,
// and leave a NONE pool's units drawn for another member alone while they are reserved.
func (a *Agent) race(ctx context.Context, height int64, pool markettypes.Pool) {
	a.mu.Lock()
	if height < a.refusedUntil[pool.Id] || a.evicted[pool.Id] {
		a.mu.Unlock()
		return
	}
	inflight := 0
	for _, c := range a.claims {
		if c.phase != claimRevealing {
			inflight++
		}
	}
	a.mu.Unlock()
	free := a.cfg.Pools.MaxClaims - inflight
	if free <= 0 || pool.OpenUnits == 0 {
		return
	}
	res, err := a.market.OpenUnits(ctx, &markettypes.QueryOpenUnitsRequest{PoolId: pool.Id, Pagination: &query.PageRequest{Limit: 100}})
	if err != nil {
		a.log.Warn("open units", "pool", pool.Id, "err", err)
		return
	}
	units := res.Units
	sort.Slice(units, func(i, j int) bool { return a.order(units[i].Id) < a.order(units[j].Id) })
	for _, u := range units {
		if free == 0 {
			return
		}
		key := unitKey(pool.Id, u.Id)
		// a NONE pool's unit drawn for another member is its until its reservation ends
		excluded := u.DesignatedNode != 0 && u.DesignatedNode != a.node.Id && height < u.ReservedUntilHeight
		for _, n := range u.ExcludedNodes {
			excluded = excluded || n == a.node.Id
		}
		a.mu.Lock()
		_, taken := a.claims[key]
		a.mu.Unlock()
		if taken || excluded {
			continue
		}
		// A unit runs on GPUs of its own, pinned as a task's are, all it needs or none:
		// the race is run only with GPUs no run holds, and not while a task of the
		// chain's waits for GPUs here (gpuShortfall). Before, a unit claimed on a busy
		// machine ran on the GPUs that were free, or on none.
		a.mu.Lock()
		waiting := len(a.gpuWait) > 0
		a.mu.Unlock()
		if waiting {
			return
		}
		gpus, ok := a.pin(unitTaskID(pool.Id, u.Id), pool.Spec.Requirements.GPUs())
		if !ok {
			return
		}
		runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c := &claim{pool: pool, unit: u, phase: claimComputing, disk: a.params.TaskDiskBytes(pool.Spec.Requirements), gpus: gpus, cancel: cancel}
		a.mu.Lock()
		a.claims[key] = c
		a.mu.Unlock()
		free--
		a.background(ctx, func(ctx context.Context) error { return a.claimUnit(ctx, runCtx, c) })
	}
}

// RefusedPoolBlocks is how long the node leaves a pool alone after the chain refused its
// claim as one the node may not make (ErrNodeNotEligible): a score below the minimum
// changes at an epoch's end, a deactivated node when its operator acts.
const RefusedPoolBlocks = 100

func (a *Agent) order(unit uint64) uint64 {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], a.node.Id)
	binary.BigEndian.PutUint64(b[8:], unit)
	h := sha256.Sum256(b[:])
	return binary.BigEndian.Uint64(h[:8])
}

// claimUnit computes a unit, on the GPUs race pinned for it and within the pool's
// unit_max_duration, and commits to its result; a unit someone else claimed first, or
// given up for a task (runCtx cancelled: giveUpUnits), is dropped.
func (a *Agent) claimUnit(ctx, runCtx context.Context, c *claim) error {
	key := unitKey(c.pool.Id, c.unit.Id)
	drop := func() {
		a.mu.Lock()
		delete(a.claims, key)
		a.mu.Unlock()
		_ = a.state.del(key)
	}
	id := unitTaskID(c.pool.Id, c.unit.Id)
	defer func() {
		a.mu.Lock()
		a.unpin(id)
		a.mu.Unlock()
	}()
	spec := executor.Spec{
		TaskID: id, Owner: c.pool.Owner, Runtime: c.pool.Spec.Runtime, Image: c.pool.Spec.Image,
		Command: c.pool.Spec.Command, Env: c.pool.Spec.Env, Inputs: []markettypes.Input{c.unit.Input}, Builtin: c.pool.Spec.Builtin,
		GPUs: c.gpus, MaxDuration: c.pool.Spec.UnitMaxDuration, MaxDiskBytes: c.disk,
	}
	if c.pool.Spec.Runtime == markettypes.RUNTIME_BUILTIN && c.pool.Spec.Image == markettypes.BuiltinGemm {
		g := c.pool.UnitGemm(c.unit)
		spec.Gemm = &g
		spec.Inputs = nil // the unit's input seeds the GEMM; there is nothing to fetch
	}
	// A pool unit is not adopted after a restart (the race for it starts over): a
	// shutdown kills its process as a cancel does, rather than leave it detached.
	defer c.cancel()
	defer context.AfterFunc(ctx, c.cancel)()
	res, err := a.o.Executor.Run(runCtx, spec, executor.Hooks{})
	a.mu.Lock()
	givenUp := c.givenUp
	a.mu.Unlock()
	if givenUp {
		drop()
		a.log.Info("unit given up: a task needs its GPUs, or one of them is gone", "pool", c.pool.Id, "unit", c.unit.Id)
		return nil
	}
	if err != nil {
		drop()
		return fmt.Errorf("pool %d unit %d: %w", c.pool.Id, c.unit.Id, err)
	}
	s, err := salt()
	if err != nil {
		drop()
		return err
	}
	root := res.Root[:]
	if a.cfg.Cheat && config.CheatBuild {
		bad := sha256.Sum256(append([]byte("skipped the work"), root...))
		root = bad[:]
	}
	uri := a.cfg.Node.Endpoint
	if a.o.Publisher != nil {
		if uri, err = a.o.Publisher.PublishOutputs(ctx, spec.TaskID, c.pool.Owner, res); err != nil {
			drop()
			return err
		}
	}
	rec := record{Kind: "unit", PoolID: c.pool.Id, UnitID: c.unit.Id, Root: hexOf(root), Salt: hexOf(s), OutputURI: uri, Gemm: res.Gemm != nil}
	if err := a.state.put(rec); err != nil {
		drop()
		return err
	}
	a.mu.Lock()
	c.res, c.phase = res, claimCommitting
	a.mu.Unlock()
	msg := &markettypes.MsgCommitUnit{Provider: a.o.Chain.Address().String(), PoolId: c.pool.Id, UnitId: c.unit.Id, NodeId: a.node.Id,
		Commitment: markettypes.Commitment(root, s, a.o.Chain.Address())}
	err = a.submit(ctx, fmt.Sprintf("claim pool %d unit %d", c.pool.Id, c.unit.Id), msg)
	var txErr *chain.TxError
	switch {
	case err == nil:
		a.mu.Lock()
		c.phase = claimCommitted
		a.mu.Unlock()
		a.log.Info("unit claimed", "pool", c.pool.Id, "unit", c.unit.Id)
	case errors.Is(err, markettypes.ErrNodeNotEligible):
		// the node may not claim this pool's units now (inactive, below the minimum score,
		// short of the pool's requirements or of collateral): racing on would compute
		// every unit for nothing
		drop()
		a.mu.Lock()
		if a.refusedUntil == nil {
			a.refusedUntil = map[uint64]int64{}
		}
		a.refusedUntil[c.pool.Id] = a.height + RefusedPoolBlocks
		until := a.refusedUntil[c.pool.Id]
		a.mu.Unlock()
		a.log.Warn("the chain takes no unit of this pool from this node now: racing it again from a later block", "pool", c.pool.Id, "unit", c.unit.Id, "from_height", until, "err", err)
	case errors.Is(err, markettypes.ErrNotMember):
		// the node lost its place (taken by a node that joined the full pool while this one
		// could not claim): the pool is the joins' again
		drop()
		a.mu.Lock()
		if a.evicted == nil {
			a.evicted = map[uint64]bool{}
		}
		a.evicted[c.pool.Id] = true // raced no more; forgotten once its claims are revealed (poolActions)
		a.mu.Unlock()
		a.log.Warn("no longer a member of the pool: its place went to another node while this one could not claim", "pool", c.pool.Id, "unit", c.unit.Id)
	case errors.As(err, &txErr):
		drop() // claimed by someone else first, or the pool closed: the race is lost
	default:
		drop()
		return err
	}
	return nil
}

// revealUnits opens this node's claims of a pool once the block after the commitment is
// committed.
func (a *Agent) revealUnits(ctx context.Context, height int64, pool markettypes.Pool) []action {
	a.mu.Lock()
	var mine []*claim
	for _, c := range a.claims {
		if c.pool.Id == pool.Id && c.phase == claimCommitted {
			mine = append(mine, c)
		}
	}
	a.mu.Unlock()
	sort.Slice(mine, func(i, j int) bool { return mine[i].unit.Id < mine[j].unit.Id })
	var acts []action
	for _, c := range mine {
		key := unitKey(pool.Id, c.unit.Id)
		res, err := a.market.Unit(ctx, &markettypes.QueryUnitRequest{PoolId: pool.Id, UnitId: c.unit.Id})
		if status.Code(err) == codes.NotFound {
			a.forgetClaim(key, c, "the chain no longer keeps the unit")
			continue
		} else if err != nil {
			continue
		}
		u := res.Unit
		if u.Status != markettypes.UNIT_STATUS_COMMITTED || u.NodeId != a.node.Id {
			// revealed, lapsed, or (a claim adopted after a restart) never committed
			a.forgetClaim(key, c, fmt.Sprintf("the unit is %s, node %d", u.Status, u.NodeId))
			continue
		}
		if height < u.CommitHeight+2 { // see revealAction
			continue
		}
		rec, found, err := a.state.get(key)
		if err != nil || !found {
			a.log.Error("no readable record of a committed unit; the reveal is retried (it lapses if none comes)", "pool", pool.Id, "unit", u.Id, "err", err)
			continue
		}
		root, _ := hex.DecodeString(rec.Root)
		s, _ := hex.DecodeString(rec.Salt)
		msg := &markettypes.MsgRevealUnit{Provider: a.o.Chain.Address().String(), PoolId: pool.Id, UnitId: u.Id, ResultRoot: root, Salt: s, OutputUri: rec.OutputURI}
		if rec.Gemm {
			proofs, err := a.unitGemmProofs(ctx, c, pool, u)
			if err != nil {
				a.log.Warn("gemm proofs", "pool", pool.Id, "unit", u.Id, "err", err)
				continue
			}
			msg.GemmProofs = proofs
		}
		a.mu.Lock()
		c.phase = claimRevealing
		a.mu.Unlock()
		cc := c
		acts = append(acts, action{what: fmt.Sprintf("reveal pool %d unit %d", pool.Id, u.Id), msgs: msgs(msg), after: func(err error) {
			a.mu.Lock()
			defer a.mu.Unlock()
			if err != nil {
				cc.phase = claimCommitted // try again next block
				return
			}
			delete(a.claims, key)
			_ = a.state.del(key)
			a.log.Info("unit revealed", "pool", cc.pool.Id, "unit", cc.unit.Id)
		}})
	}
	return acts
}

// forgetClaim drops a claim the chain has moved past, and its record.
func (a *Agent) forgetClaim(key string, c *claim, why string) {
	a.mu.Lock()
	if a.claims[key] == c {
		delete(a.claims, key)
	}
	a.mu.Unlock()
	_ = a.state.del(key)
	a.log.Info("claim forgotten", "pool", c.pool.Id, "unit", c.unit.Id, "why", why)
}

// unitGemmProofs opens the product's entries the chain samples from the block after the
// commitment; after a restart the product is recomputed (it is deterministic).
func (a *Agent) unitGemmProofs(ctx context.Context, c *claim, pool markettypes.Pool, u markettypes.Unit) ([]gfltypes.ChunkProof, error) {
	g := pool.UnitGemm(u)
	if c.res.Gemm == nil {
		res, err := a.o.Executor.Run(ctx, executor.Spec{TaskID: unitTaskID(pool.Id, u.Id), Runtime: markettypes.RUNTIME_BUILTIN,
			Image: markettypes.BuiltinGemm, Gemm: &g, MaxDuration: pool.Spec.UnitMaxDuration}, executor.Hooks{})
		if err != nil {
			return nil, fmt.Errorf("recompute the product: %w", err)
		}
		if res.Gemm == nil {
			return nil, errors.New("recompute the product: no GEMM result")
		}
		a.mu.Lock()
		c.res = res
		a.mu.Unlock()
	}
	hash, err := a.beaconValue(ctx, u.CommitHeight+1)
	if err != nil {
		return nil, err
	}
	samples, err := a.samples(ctx)
	if err != nil {
		return nil, err
	}
	seed := beacon.Derive(hash, markettypes.DomainPoolSample, pool.Id, u.Id)
	return c.res.Gemm.Proofs(markettypes.GemmSamplePositions(seed, g, samples)), nil
}

// credits reads the provider's credits in a pool: nil, and no error, when it has none.
func (a *Agent) credits(ctx context.Context, poolID uint64) (*markettypes.QueryPoolEarningsResponse, error) {
	res, err := a.market.PoolEarnings(ctx, &markettypes.QueryPoolEarningsRequest{PoolId: poolID, Provider: a.o.Chain.Address().String()})
	if err != nil {
		return nil, err
	}
	if res.Earnings.IsNil() || !res.Earnings.IsPositive() {
		return nil, nil
	}
	return res, nil
}

// earningsReadBlocks: an open pool's credits are read once in so many blocks (withdraw);
// creditsGone marks a closed pool whose credits are all withdrawn.
const (
	earningsReadBlocks = 10
	creditsGone        = int64(math.MaxInt64)
)

// withdraw takes the node's credits out of a pool once there are enough of them, or the
// pool closed. An open pool's credits are read every earningsReadBlocks blocks: they are
// withdrawn withdrawAfter units at a time, and the read was a query a block for each pool
// of each worker, which a node serving many workers answers for all of them.
func (a *Agent) withdraw(ctx context.Context, height int64, pool markettypes.Pool) (action, bool) {
	closed := pool.Status != markettypes.POOL_STATUS_OPEN
	a.mu.Lock()
	last, read := a.earningsRead[pool.Id]
	due := !read || height-last >= earningsReadBlocks || (closed && last != creditsGone)
	if due {
		a.earningsRead[pool.Id] = height
	}
	a.mu.Unlock()
	if !due {
		return action{}, false
	}
	op := a.o.Chain.Address().String()
	res, err := a.credits(ctx, pool.Id)
	if err == nil && res == nil && closed {
		a.mu.Lock()
		a.earningsRead[pool.Id] = creditsGone // nothing more comes from a closed pool
		a.mu.Unlock()
	}
	if err != nil || res == nil {
		return action{}, false
	}
	if res.Units < withdrawAfter && pool.Status == markettypes.POOL_STATUS_OPEN {
		return action{}, false
	}
	return action{what: fmt.Sprintf("withdraw pool %d", pool.Id),
		msgs: msgs(&markettypes.MsgWithdrawPoolEarnings{Provider: op, PoolId: pool.Id}),
		after: func(err error) {
			if err == nil {
				a.log.Info("pool credits withdrawn", "pool", pool.Id, "units", res.Units, "udps", res.Earnings)
			}
		}}, true
}
