package keeper

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/x/market/types"
)

// InitGenesis stores a validated genesis state and rebuilds every queue and index from
// the records. It refuses a genesis whose escrow account does not hold exactly the open
// escrows and deposits.
func (k Keeper) InitGenesis(ctx context.Context, gs *types.GenesisState) error {
	if err := gs.Validate(); err != nil {
		return err
	}
	k.accountKeeper.GetModuleAccount(ctx, types.ModuleName)
	p := gs.Params
	if err := k.Params.Set(ctx, p); err != nil {
		return err
	}
	if err := k.IDs.Set(ctx, collections.Join(max(gs.NextJobId, 1), max(gs.NextTaskId, 1))); err != nil {
		return err
	}
	// a genesis from before first_task_id: a job takes it from one of its primaries (they
	// were validated to agree)
	aPrimary := map[uint64]types.Task{}
	for _, t := range gs.Tasks {
		if t.Role == types.TASK_ROLE_PRIMARY {
			aPrimary[t.JobId] = t
		}
	}
	jobs := map[uint64]types.Job{}
	for _, j := range gs.Jobs {
		if t, ok := aPrimary[j.Id]; ok && j.FirstTaskId == 0 {
			j.FirstTaskId = t.Id - j.Spec.PrimaryOffset(t.Index, t.Replica)
		}
		if err := k.setJobSpec(ctx, &j, j.Spec); err != nil {
			return err
		}
		jobs[j.Id] = j
		if err := k.saveJob(ctx, j); err != nil {
			return err
		}
		var err error
		switch {
		case j.FinishedHeight != 0:
			err = k.PruneQueue.Set(ctx, collections.Join(j.FinishedHeight+int64(p.JobRetentionBlocks), j.Id))
		default:
			if err = k.JobDeadlines.Set(ctx, collections.Join(j.Spec.Deadline, j.Id)); err == nil && j.Status == types.JOB_STATUS_BIDDING {
				err = k.AuctionClose.Set(ctx, collections.Join(j.AuctionCloseHeight, j.Id))
			}
		}
		if err != nil {
			return err
		}
	}
	sweeping := map[uint64]bool{} // cancelled, unfinished jobs with a primary left to cancel
	for _, t := range gs.Tasks {
		if err := k.Tasks.Set(ctx, t.Id, t); err != nil {
			return err
		}
		// its due-work entry, as the lifecycle core keeps it (an entry due before the
		// import height is taken at the first block)
		if err := k.attachEntry(ctx, jobs[t.JobId], t); err != nil {
			return err
		}
		if j := jobs[t.JobId]; j.Status == types.JOB_STATUS_CANCELLED && j.FinishedHeight == 0 && t.Role == types.TASK_ROLE_PRIMARY && cancellable(t.Status) {
			sweeping[j.Id] = true
		}
	}
	for _, d := range gs.Disputes {
		if err := k.Disputes.Set(ctx, d.Id, d); err != nil {
			return err
		}
	}
	for _, pl := range gs.Pools {
		if pl.Status == types.POOL_STATUS_CLOSED {
			var err error
			if pl.PruneHeight != 0 {
				err = k.PoolPruneQueue.Set(ctx, collections.Join(pl.PruneHeight, pl.Id))
			} else {
				// a genesis from before prune_height: a retention from the import
				err = k.schedulePoolPrune(ctx, p, &pl)
			}
			if err != nil {
				return err
			}
		}
		if err := k.SetPool(ctx, pl); err != nil {
			return err
		}
	}
	for _, u := range gs.Units {
		key := collections.Join(u.PoolId, u.Id)
		if err := k.Units.Set(ctx, key, u); err != nil {
			return err
		}
		var err error
		switch u.Status {
		case types.UNIT_STATUS_OPEN:
			err = k.OpenUnits.Set(ctx, key)
		case types.UNIT_STATUS_COMMITTED:
			err = k.UnitDeadlines.Set(ctx, collections.Join3(u.RevealDeadlineHeight, u.PoolId, u.Id))
		}
		if err != nil {
			return err
		}
	}
	for _, m := range gs.Members {
		if err := k.PoolMembers.Set(ctx, collections.Join(m.PoolId, m.NodeId), m); err != nil {
			return err
		}
	}
	for _, e := range gs.Earnings {
		provider, err := k.acc(e.Provider)
		if err != nil {
			return err
		}
		if err := k.PoolEarnings.Set(ctx, collections.Join(e.PoolId, provider), e); err != nil {
			return err
		}
	}
	for _, c := range gs.ProviderTasks {
		provider, err := k.acc(c.Provider)
		if err != nil {
			return err
		}
		if err := k.ProviderTasks.Set(ctx, provider, c.Tasks); err != nil {
			return err
		}
	}
	if err := k.DisputeSeq.Set(ctx, max(gs.NextDisputeId, 1)); err != nil {
		return err
	}
	if err := k.PoolSeq.Set(ctx, max(gs.NextPoolId, 1)); err != nil {
		return err
	}
	for _, b := range gs.Bids {
		if err := k.Bids.Set(ctx, collections.Join(b.JobId, b.NodeId), b); err != nil {
			return err
		}
	}
	for _, s := range gs.Slots {
		if err := k.setSlot(ctx, nil, s); err != nil {
			return err
		}
	}
	for _, h := range gs.Heartbeats {
		if err := k.Heartbeats.Set(ctx, h.NodeId, h.Height); err != nil {
			return err
		}
		if err := k.HeartbeatDue.Set(ctx, collections.Join(h.Height, h.NodeId)); err != nil {
			return err
		}
	}
	length := map[uint64]uint32{} // per job: its last stored entry + 1
	for _, h := range gs.History {
		if err := k.History.Set(ctx, collections.Join(h.JobId, h.Seq), h.Entry); err != nil {
			return err
		}
		length[h.JobId] = max(length[h.JobId], h.Seq+1)
	}
	// the entries beyond what a job's record counts were added after it (the exporting
	// chain's HistoryAdded: entries are never removed one by one)
	for _, j := range gs.Jobs {
		if n := length[j.Id]; n > j.HistoryLen {
			if err := k.setHistoryAdded(ctx, j, n-j.HistoryLen); err != nil {
				return err
			}
		}
	}
	held, err := k.heldEscrow(ctx)
	if err != nil {
		return err
	}
	if err := k.Retries.Import(ctx, gs.Retries); err != nil {
		return err
	}
	if err := k.importSweeps(ctx, gs, sweeping); err != nil {
		return err
	}
	// the counts are the jobs imported, not moves for the first block to fold
	if err := k.recountJobs(ctx); err != nil {
		return err
	}
	if err := k.recountQueue(ctx); err != nil {
		return err
	}
	if bal := k.bankKeeper.GetBalance(ctx, k.accountKeeper.GetModuleAddress(types.ModuleName), p.Denom).Amount; !bal.Equal(held) {
		return fmt.Errorf("market genesis: the escrow account holds %s%s, the jobs and bids %s%s", bal, p.Denom, held, p.Denom)
	}
	return nil
}

// ExportGenesis returns the whole module state.
func (k Keeper) ExportGenesis(ctx context.Context) (*types.GenesisState, error) {
	gs := &types.GenesisState{}
	var err error
	if gs.Params, err = k.Params.Get(ctx); err != nil {
		return nil, err
	}
	if gs.NextJobId, gs.NextTaskId, err = k.PeekIDs(ctx); err != nil {
		return nil, err
	}
	if err := k.Jobs.Walk(ctx, nil, func(_ uint64, j types.Job) (bool, error) {
		spec, err := k.wholeSpec(ctx, j)
		if err != nil {
			return true, err
		}
		j.Spec = spec
		gs.Jobs = append(gs.Jobs, j)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.Tasks.Walk(ctx, nil, func(_ uint64, t types.Task) (bool, error) {
		gs.Tasks = append(gs.Tasks, t)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.Bids.Walk(ctx, nil, func(_ collections.Pair[uint64, uint64], b types.Bid) (bool, error) {
		gs.Bids = append(gs.Bids, b)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.Slots.Walk(ctx, nil, func(_ uint64, s types.NodeSlot) (bool, error) {
		gs.Slots = append(gs.Slots, s)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.Heartbeats.Walk(ctx, nil, func(node uint64, h int64) (bool, error) {
		gs.Heartbeats = append(gs.Heartbeats, types.NodeHeartbeat{NodeId: node, Height: h})
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.History.Walk(ctx, nil, func(key collections.Pair[uint64, uint32], e types.HistoryEntry) (bool, error) {
		gs.History = append(gs.History, types.JobHistoryEntry{JobId: key.K1(), Seq: key.K2(), Entry: e})
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.Disputes.Walk(ctx, nil, func(_ uint64, d types.Dispute) (bool, error) {
		gs.Disputes = append(gs.Disputes, d)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.Pools.Walk(ctx, nil, func(_ uint64, pl types.Pool) (bool, error) {
		pl, err := k.viewPool(ctx, pl)
		gs.Pools = append(gs.Pools, pl)
		return err != nil, err
	}); err != nil {
		return nil, err
	}
	if err := k.Units.Walk(ctx, nil, func(_ collections.Pair[uint64, uint64], u types.Unit) (bool, error) {
		gs.Units = append(gs.Units, u)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.PoolMembers.Walk(ctx, nil, func(_ collections.Pair[uint64, uint64], m types.PoolMember) (bool, error) {
		gs.Members = append(gs.Members, m)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.PoolEarnings.Walk(ctx, nil, func(_ collections.Pair[uint64, sdk.AccAddress], e types.PoolEarning) (bool, error) {
		gs.Earnings = append(gs.Earnings, e)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.ProviderTasks.Walk(ctx, nil, func(p sdk.AccAddress, n uint64) (bool, error) {
		gs.ProviderTasks = append(gs.ProviderTasks, types.ProviderTaskCount{Provider: p.String(), Tasks: n})
		return false, nil
	}); err != nil {
		return nil, err
	}
	if gs.NextDisputeId, err = k.DisputeSeq.Peek(ctx); err != nil {
		return nil, err
	}
	if gs.NextPoolId, err = k.PoolSeq.Peek(ctx); err != nil {
		return nil, err
	}
	if gs.Retries, err = k.Retries.Export(ctx); err != nil {
		return nil, err
	}
	if err := k.CancelSweeps.Walk(ctx, nil, func(key collections.Pair[int64, uint64]) (bool, error) {
		gs.CancelSweeps = append(gs.CancelSweeps, types.CancelSweep{Height: key.K1(), JobId: key.K2()})
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.SweepCursors.Walk(ctx, nil, func(key collections.Pair[uint32, uint64], after uint64) (bool, error) {
		gs.SweepCursors = append(gs.SweepCursors, types.SweepCursor{Kind: key.K1(), JobId: key.K2(), AfterTaskId: after})
		return false, nil
	}); err != nil {
		return nil, err
	}
	return gs, nil
}

// importSweeps queues the job sweeps under way where the exporting chain left them: a big
// job's cancellation (CancelSweeps) and each sweep's cursor. Before the genesis carried
// them, the import queued a cancellation for every cancelled, unfinished job holding a
// pending, assigned or running task, and so cancelled the audits, escalations and
// committee seats of its finished work that the exporting chain went on verifying.
// sweeping are the cancelled, unfinished jobs with a primary still to cancel: only a
// sweep under way cancels one, so a genesis from before cancel_sweeps that has none
// queued (nor its failed sweep waiting in the retries) gets one at the import height.
func (k Keeper) importSweeps(ctx context.Context, gs *types.GenesisState, sweeping map[uint64]bool) error {
	for _, s := range gs.CancelSweeps {
		if err := k.CancelSweeps.Set(ctx, collections.Join(s.Height, s.JobId)); err != nil {
			return err
		}
		delete(sweeping, s.JobId)
	}
	for _, c := range gs.SweepCursors {
		if err := k.SweepCursors.Set(ctx, collections.Join(c.Kind, c.JobId), c.AfterTaskId); err != nil {
			return err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(sweeping)) {
		if n, err := k.Retries.Attempt(sdk.UnwrapSDKContext(ctx), blockhook.Item{Kind: kindCancel, ID: id}); err != nil {
			return err
		} else if n > 0 {
			continue
		}
		if err := k.CancelSweeps.Set(ctx, collections.Join(sdk.UnwrapSDKContext(ctx).BlockHeight(), id)); err != nil {
			return err
		}
	}
	return nil
}

// heldEscrow is what the escrow account must hold: every job's escrow and every deposit
// still held.
func (k Keeper) heldEscrow(ctx context.Context) (sdkmath.Int, error) {
	sum := sdkmath.ZeroInt()
	err := k.Jobs.Walk(ctx, nil, func(_ uint64, j types.Job) (bool, error) {
		sum = sum.Add(j.Escrow)
		return false, nil
	})
	if err != nil {
		return sum, err
	}
	err = k.Bids.Walk(ctx, nil, func(_ collections.Pair[uint64, uint64], b types.Bid) (bool, error) {
		sum = sum.Add(b.Deposit)
		return false, nil
	})
	if err != nil {
		return sum, err
	}
	err = k.Disputes.Walk(ctx, nil, func(_ uint64, d types.Dispute) (bool, error) {
		sum = sum.Add(d.Bond)
		return false, nil
	})
	if err != nil {
		return sum, err
	}
	err = k.Pools.Walk(ctx, nil, func(_ uint64, pl types.Pool) (bool, error) {
		sum = sum.Add(pl.Escrow)
		return false, nil
	})
	return sum, err
}

// cancellable: a cancelled job's sweep (cancelPart) cancels a task in this status.
func cancellable(s types.TaskStatus) bool {
	return s == types.TASK_STATUS_PENDING || s == types.TASK_STATUS_ASSIGNED || s == types.TASK_STATUS_RUNNING
}
