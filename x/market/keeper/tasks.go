package keeper

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/validate"
	"github.com/flopsnet/flops/x/market/types"
)

// What a task's status holds of a node slot, the scheduling index and escrow; the lifecycle
// core that moves it is transition.go.

// adjustSlot changes a node's GPUs in use and in-flight tasks and re-indexes it; on a node
// with MIG it frees the devices of release and takes those of take. When the last task in
// flight of a node off the market ends, x/gfl is told (NodeIdle): a draining node is
// deactivated then.
func (k Keeper) adjustSlot(ctx context.Context, nodeID uint64, known *types.NodeSlot, dGPUs, dTasks, dOpen int64, release, take []uint32) error {
	var s types.NodeSlot
	if known != nil && known.NodeId == nodeID {
		s = *known
	} else {
		var err error
		if s, err = k.Slots.Get(ctx, nodeID); err != nil {
			return fmt.Errorf("market: slot of node %d: %w", nodeID, err)
		}
	}
	old := s
	used, tasks, open := int64(s.GpusUsed)+dGPUs, int64(s.Tasks)+dTasks, int64(s.OpenTasks)+dOpen
	if used < 0 || tasks < 0 || open < 0 {
		return fmt.Errorf("market: node %d slot out of step: gpus used %d, tasks %d, open tasks %d", nodeID, used, tasks, open)
	}
	s.GpusUsed, s.Tasks, s.OpenTasks = uint32(used), uint32(tasks), uint32(open)
	if len(release)+len(take) > 0 {
		freed, ok := s.MarkDevices(release, false)
		if ok {
			s.DevicesUsed = freed
			s.DevicesUsed, ok = s.MarkDevices(take, true)
		}
		if !ok {
			return fmt.Errorf("market: node %d slot out of step: devices in use %v, release %v, take %v", nodeID, old.DevicesUsed, release, take)
		}
	}
	if err := k.setSlot(ctx, &old, s); err != nil {
		return err
	}
	if old.Tasks > 0 && s.Tasks == 0 && !s.Active {
		return k.gfl.NodeIdle(ctx, nodeID)
	}
	return nil
}

// setSlot stores a slot and moves its scheduling index entry and class counters (old may
// be nil).
func (k Keeper) setSlot(ctx context.Context, old *types.NodeSlot, s types.NodeSlot) error {
	wasMember := old != nil && old.Active
	if wasMember != s.Active || (wasMember && old.Region != s.Region) {
		if wasMember {
			if err := k.countRegion(ctx, old.Region, -1); err != nil {
				return err
			}
		}
		if s.Active {
			if err := k.countRegion(ctx, s.Region, +1); err != nil {
				return err
			}
		}
	}
	if wasMember && (!s.Active || old.GpuClass != s.GpuClass) {
		if err := k.removeMember(ctx, old.GpuClass, old.NodeId); err != nil {
			return err
		}
		wasMember = false
	}
	if s.Active && !wasMember {
		if err := k.addMember(ctx, s.GpuClass, s.NodeId); err != nil {
			return err
		}
	}
	if old != nil && old.Active && s.Active && old.GpuClass == s.GpuClass && old.NodeId == s.NodeId {
		// the same entry of the same class (an assignment or a task's end): re-keyed only
		// when its load moved, counted again only when it went between idle and loaded
		if was, is := loadPPM(old.GpusUsed, old.Gpus), loadPPM(s.GpusUsed, s.Gpus); was != is {
			if err := k.SchedIndex.Remove(ctx, indexKey(*old)); err != nil {
				return err
			}
			if err := k.SchedIndex.Set(ctx, indexKey(s)); err != nil {
				return err
			}
			if (was == 0) != (is == 0) {
				if err := k.moveClassCount(ctx, s.GpuClass, is == 0); err != nil {
					return err
				}
			}
		}
		return k.Slots.Set(ctx, s.NodeId, s)
	}
	if old != nil && old.Active {
		if err := k.SchedIndex.Remove(ctx, indexKey(*old)); err != nil {
			return err
		}
		if err := k.countClass(ctx, *old, -1); err != nil {
			return err
		}
	}
	if s.Active {
		if err := k.SchedIndex.Set(ctx, indexKey(s)); err != nil {
			return err
		}
		if err := k.countClass(ctx, s, +1); err != nil {
			return err
		}
	}
	if old == nil {
		if m, err := k.MaxSlot.Get(ctx); err != nil && !errors.Is(err, collections.ErrNotFound) {
			return err
		} else if s.NodeId > m {
			if err := k.MaxSlot.Set(ctx, s.NodeId); err != nil {
				return err
			}
		}
	}
	return k.Slots.Set(ctx, s.NodeId, s)
}

// countClass moves an indexed slot's class counter (idle or loaded) by d.
func (k Keeper) countClass(ctx context.Context, s types.NodeSlot, d int64) error {
	c, err := k.ClassNodes.Get(ctx, s.GpuClass)
	if err != nil && !errors.Is(err, collections.ErrNotFound) {
		return err
	}
	idle, loaded := c.K1(), c.K2()
	if err != nil {
		idle, loaded = 0, 0
	}
	n := &loaded
	if loadPPM(s.GpusUsed, s.Gpus) == 0 {
		n = &idle
	}
	if d < 0 && *n == 0 {
		return fmt.Errorf("market: class %q counter out of step", s.GpuClass)
	}
	*n = uint64(int64(*n) + d)
	if idle == 0 && loaded == 0 {
		return k.ClassNodes.Remove(ctx, s.GpuClass)
	}
	return k.ClassNodes.Set(ctx, s.GpuClass, collections.Join(idle, loaded))
}

// countRegion adds d to a region's count of indexed nodes (a count of zero is removed).
func (k Keeper) countRegion(ctx context.Context, region string, d int64) error {
	n, err := k.RegionNodes.Get(ctx, region)
	if err != nil && !errors.Is(err, collections.ErrNotFound) {
		return err
	}
	if d < 0 && n == 0 {
		return fmt.Errorf("market: region %q counter out of step", region)
	}
	n = uint64(int64(n) + d)
	if n == 0 {
		return k.RegionNodes.Remove(ctx, region)
	}
	return k.RegionNodes.Set(ctx, region, n)
}

// moveClassCount moves one node of a class between its loaded and idle counts (toIdle:
// from loaded to idle), as countClass -1 then +1 would, in one read and one write.
func (k Keeper) moveClassCount(ctx context.Context, class string, toIdle bool) error {
	c, err := k.ClassNodes.Get(ctx, class)
	if err != nil {
		return fmt.Errorf("market: class %q counter: %w", class, err)
	}
	idle, loaded := c.K1(), c.K2()
	from, to := &idle, &loaded
	if toIdle {
		from, to = &loaded, &idle
	}
	if *from == 0 {
		return fmt.Errorf("market: class %q counter out of step", class)
	}
	*from--
	*to++
	return k.ClassNodes.Set(ctx, class, collections.Join(idle, loaded))
}

func indexKey(s types.NodeSlot) collections.Triple[string, uint32, uint64] {
	return collections.Join3(s.GpuClass, loadPPM(s.GpusUsed, s.Gpus), s.NodeId)
}

// loadPPM is used/total in parts per million (a node without GPUs is full).
func loadPPM(used, total uint32) uint32 {
	if total == 0 {
		return validate.PPMOne
	}
	return uint32(uint64(used) * validate.PPMOne / uint64(total))
}

// pay pays a provider gross udps of the job's escrow for a task: the protocol take
// (take_rate) is split between the x/dps reward pool (take_pool_share) and the fee
// collector, the provider gets the rest. Integer maths, truncated: the provider's share
// is what the take leaves, so nothing is created or lost.
func (k Keeper) pay(ctx context.Context, job *types.Job, t *types.Task, p types.Params, gross sdkmath.Int) error {
	return k.payTo(ctx, job, t, p, t.Provider, gross)
}

// payTo is pay to a given provider of the task (a failure report's, whose run ended).
func (k Keeper) payTo(ctx context.Context, job *types.Job, t *types.Task, p types.Params, to string, gross sdkmath.Int) error {
	if !gross.IsPositive() {
		return nil
	}
	split := types.SplitPayment(gross, p.TakeRatePpm, p.TakePoolSharePpm)
	provider, err := k.acc(to)
	if err != nil {
		return err
	}
	send := func(amount sdkmath.Int, fn func(sdk.Coins) error) error {
		if !amount.IsPositive() {
			return nil
		}
		return fn(sdk.NewCoins(sdk.NewCoin(p.Denom, amount)))
	}
	if err := send(split.Provider, func(c sdk.Coins) error {
		return k.bankKeeper.SendCoinsFromModuleToAccount(ctx, types.ModuleName, provider, c)
	}); err != nil {
		return err
	}
	if err := send(split.Pool, func(c sdk.Coins) error {
		return k.bankKeeper.SendCoinsFromModuleToModule(ctx, types.ModuleName, k.rewardPool, c)
	}); err != nil {
		return err
	}
	if err := send(split.FeeCollector, func(c sdk.Coins) error {
		return k.bankKeeper.SendCoinsFromModuleToModule(ctx, types.ModuleName, k.feeCollector, c)
	}); err != nil {
		return err
	}
	job.Escrow = job.Escrow.Sub(gross)
	t.Paid = t.Paid.Add(gross)
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventTaskSettled{
		TaskId: t.Id, JobId: t.JobId, Provider: to, Paid: split.Provider, ToPool: split.Pool, ToFeeCollector: split.FeeCollector,
	})
}

// refund returns amount of the job's escrow to its owner.
func (k Keeper) refund(ctx context.Context, job *types.Job, amount sdkmath.Int) error {
	if !amount.IsPositive() {
		return nil
	}
	if amount.GT(job.Escrow) {
		return fmt.Errorf("market: job %d refund %s exceeds its escrow %s", job.Id, amount, job.Escrow)
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	if err := k.payOut(ctx, job.Owner, p.Denom, amount); err != nil {
		return err
	}
	job.Escrow = job.Escrow.Sub(amount)
	return nil
}

func statusWord(s types.TaskStatus) string { return enumWord(s.String(), "TASK_STATUS_") }

// enumWord is an enum value's name without its prefix, capitalised: "Settled", "Failed".
func enumWord(name, prefix string) string {
	w := strings.ToLower(strings.TrimPrefix(name, prefix))
	return strings.ToUpper(w[:1]) + w[1:]
}

// submittedEntry is a job's history entry 0, its submission, which is not stored: it is
// made from the job's record (submitted height and time, spec), and JobHistory lists it
// first.
func submittedEntry(job types.Job, denom string) types.HistoryEntry {
	s := job.Spec
	return types.HistoryEntry{
		Height: job.SubmittedHeight, Time: job.SubmittedTime, Event: "JobSubmitted",
		Detail: fmt.Sprintf("%d tasks x %d replicas, %s, escrow %s%s", s.TaskCount, s.Replicas, s.Mode, s.Budget(), denom),
	}
}

// addHistory appends to the job's stored history, at most max_history_per_job entries
// (every step also has its typed event). The entries added after submission are counted
// in HistoryAdded, not in the job's record, whose history_len stays what submission
// wrote (the implied entry 0): a step that changes nothing else of the job leaves its
// record unwritten (saveJob).
func (k Keeper) addHistory(ctx context.Context, job types.Job, p types.Params, event string, taskID, nodeID uint64, detail string) error {
	added, err := k.historyAdded(ctx, job)
	if err != nil {
		return err
	}
	n := job.HistoryLen + added
	if n >= p.MaxHistoryPerJob {
		return nil
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	e := types.HistoryEntry{Height: sdkCtx.BlockHeight(), Time: sdkCtx.BlockTime(), Event: event, TaskId: taskID, NodeId: nodeID, Detail: detail}
	if err := k.History.Set(ctx, collections.Join(job.Id, n), e); err != nil {
		return err
	}
	return k.setHistoryAdded(ctx, job, added+1)
}

// historyAdded is how many history entries were added to a job after its record last
// counted them (0 when none).
//
// A job submitted in the block being executed (fresh) has no HistoryAdded entry in the
// committed state: one written since is in the block's writes, and in
// freshHistoryAdded, which is read instead. Reading HistoryAdded for it would look for a
// key that is not there, past every cache down to the node's database. A fresh job's
// count is written to both (setHistoryAdded), so the two agree. Only a block's execution
// (FinalizeBlock) reads the transient copy: a query, CheckTx or a simulation runs at the
// last committed height, where a job "submitted at this height" was committed with its
// count, and the transient store is empty.
func (k Keeper) historyAdded(ctx context.Context, job types.Job) (uint32, error) {
	m := k.HistoryAdded
	if fresh(ctx, job) {
		m = k.freshHistoryAdded
	}
	added, err := m.Get(ctx, job.Id)
	if errors.Is(err, collections.ErrNotFound) {
		return 0, nil
	}
	return added, err
}

// setHistoryAdded writes a job's count of entries added (historyAdded).
func (k Keeper) setHistoryAdded(ctx context.Context, job types.Job, added uint32) error {
	if fresh(ctx, job) {
		if err := k.freshHistoryAdded.Set(ctx, job.Id, added); err != nil {
			return err
		}
	}
	return k.HistoryAdded.Set(ctx, job.Id, added)
}

// removeHistoryAdded deletes a job's count of entries added (its history is gone).
func (k Keeper) removeHistoryAdded(ctx context.Context, job types.Job) error {
	if fresh(ctx, job) {
		if err := k.freshHistoryAdded.Remove(ctx, job.Id); err != nil {
			return err
		}
	}
	return k.HistoryAdded.Remove(ctx, job.Id)
}

// fresh: the job was submitted in the block being executed.
func fresh(ctx context.Context, job types.Job) bool {
	c := sdk.UnwrapSDKContext(ctx)
	return c.ExecMode() == sdk.ExecModeFinalize && job.SubmittedHeight == c.BlockHeight()
}

// historyLen is a job's history length: what its record counts and the entries added
// since.
func (k Keeper) historyLen(ctx context.Context, job types.Job) (uint32, error) {
	added, err := k.historyAdded(ctx, job)
	return job.HistoryLen + added, err
}
