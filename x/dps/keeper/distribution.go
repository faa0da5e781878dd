package keeper

import (
	"errors"
	"fmt"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// The distribution of an ended epoch (x/dps/README.md). AfterEpochEnd only queues the
// epoch. Each EndBlock, once x/gfl has no rebalance pending, the oldest queued epoch
// starts (types.PlanDistribution: era update, emission, split) and the distribution in
// progress advances by at most max_payouts_per_block items, where an item is a node, a
// work record or a pruned work record:
//
//	AVAILABILITY  nodes in id order (x/gfl NodesAfter), one payout per node with power
//	WORK_SUM      the epoch's work records, summing the weights
//	WORK_PAY      the same records again, one payout per provider (its records are
//	              consecutive; a provider split across blocks is carried in progress.pending)
//	PRUNE         x/market PruneWork of the epoch
//	DONE          remainder = E - paid, recorded; the pool baseline drops by what was paid
//
// Every payout runs in its own cache context (internal/blockhook): a failed payout is
// logged and skipped and its amount stays in the pool. A failed step is rolled back and
// retried next block; after maxStepFailures consecutive failures the distribution ends
// where it is (aborted), so one broken input never blocks the queue.

// maxStepFailures is the number of consecutive failed steps that abort a distribution.
const maxStepFailures = 3

// EndBlocker advances the distributions. It never returns an error: failures are logged
// and the chain goes on.
func (k Keeper) EndBlocker(ctx sdk.Context) error {
	p, err := k.Params.Get(ctx)
	if err != nil {
		k.logger(ctx).Error("dps: no params; distributions skipped", "err", err)
		return nil
	}
	k.runDistributions(ctx, p)
	return nil
}

func (k Keeper) runDistributions(ctx sdk.Context, p types.Params) {
	if missing := k.missingDeps(); missing != "" {
		if busy, err := k.hasQueuedWork(ctx); err != nil || busy {
			k.logger(ctx).Error("dps: distribution skipped: keeper dependency not set", "missing", missing, "err", err)
		}
		return
	}
	rebalancing, err := k.wiring.gfl.RebalancePending(ctx)
	if err != nil {
		k.logger(ctx).Error("dps: cannot read the gfl rebalance state; distribution waits", "err", err)
		return
	}
	if rebalancing {
		return // node powers are moving; the index is read once they settle
	}
	budget := int(p.MaxPayoutsPerBlock)
	started := false
	for budget > 0 {
		d, found, err := k.GetInProgress(ctx)
		if err != nil {
			k.logger(ctx).Error("dps: cannot read the distribution in progress", "err", err)
			return
		}
		if !found {
			if started {
				return
			}
			epoch, ok, err := k.nextPending(ctx)
			if err != nil || !ok {
				if err != nil {
					k.logger(ctx).Error("dps: cannot read the queue", "err", err)
				}
				return
			}
			started = true
			if err := blockhook.Apply(ctx, fmt.Sprintf("dps: start distribution of epoch %d", epoch), func(ctx sdk.Context) error {
				return k.startDistribution(ctx, p, epoch)
			}); err != nil {
				k.dropEpoch(ctx, epoch, err)
			}
			continue
		}
		used := 0
		if err := blockhook.Apply(ctx, fmt.Sprintf("dps: distribution of epoch %d", d.Epoch), func(ctx sdk.Context) error {
			var err error
			used, err = k.step(ctx, budget)
			return err
		}); err != nil {
			k.stepFailed(ctx, err)
			return
		}
		budget -= max(used, 1)
	}
}

// hasQueuedWork says whether a distribution waits or runs.
func (k Keeper) hasQueuedWork(ctx sdk.Context) (bool, error) {
	if _, found, err := k.GetInProgress(ctx); err != nil || found {
		return found, err
	}
	_, ok, err := k.nextPending(ctx)
	return ok, err
}

// nextPending returns the oldest queued epoch.
func (k Keeper) nextPending(ctx sdk.Context) (uint64, bool, error) {
	it, err := k.PendingEpochs.Iterate(ctx, nil)
	if err != nil {
		return 0, false, err
	}
	defer func() { _ = it.Close() }()
	if !it.Valid() {
		return 0, false, nil
	}
	e, err := it.Key()
	return e, err == nil, err
}

// dropEpoch removes an epoch whose distribution could not start: its emission stays in
// the pool.
func (k Keeper) dropEpoch(ctx sdk.Context, epoch uint64, cause error) {
	_ = blockhook.Apply(ctx, fmt.Sprintf("dps: drop epoch %d", epoch), func(ctx sdk.Context) error {
		if err := k.PendingEpochs.Remove(ctx, epoch); err != nil {
			return err
		}
		return ctx.EventManager().EmitTypedEvent(&types.EventDistributionSkipped{Epoch: epoch, Reason: cause.Error()})
	})
}

// startDistribution plans the emission of an epoch and makes it the distribution in
// progress. Constant work: the era update, four reads and three writes.
func (k Keeper) startDistribution(ctx sdk.Context, p types.Params, epoch uint64) error {
	np, err := k.wiring.gfl.GetNetworkPower(ctx)
	if err != nil {
		return err
	}
	pool := k.PoolBalance(ctx)
	era, err := k.EraState.Get(ctx)
	if errors.Is(err, collections.ErrNotFound) {
		// a chain without an era (genesis always sets one): era 0 starts now
		era, err = types.EraState{LastHalvingTime: ctx.BlockTime(), CumulativeGfl: sdkmath.ZeroInt(), PoolBaseline: pool}, nil
	}
	if err != nil {
		return err
	}
	plan := types.PlanDistribution(p, era, types.DistributionInputs{
		Epoch: epoch, Now: ctx.BlockTime(), TotalGFL: np.TotalGflops,
		Pool: pool, Supply: k.bankKeeper.GetSupply(ctx, types.Denom).Amount,
	})
	d := plan.Distribution
	d.StartHeight = ctx.BlockHeight()
	weights := make([]types.WorkloadWeight, len(p.WorkloadWeights))
	copy(weights, p.WorkloadWeights)
	d.Progress = &types.DistributionProgress{
		TotalWeight: sdkmath.ZeroInt(), WorkRewardCapPpm: p.WorkRewardCapPpm, WorkloadWeights: weights,
	}
	switch {
	case d.Availability.IsPositive() && d.TotalGfl > 0:
		d.Phase = types.DISTRIBUTION_PHASE_AVAILABILITY
	case d.Work.IsPositive():
		d.Phase = types.DISTRIBUTION_PHASE_WORK_SUM
	default:
		d.Phase = types.DISTRIBUTION_PHASE_PRUNE
	}
	if err := k.EraState.Set(ctx, plan.Era); err != nil {
		return err
	}
	if err := k.PendingEpochs.Remove(ctx, epoch); err != nil {
		return err
	}
	if err := k.InProgress.Set(ctx, d); err != nil {
		return err
	}
	if plan.Step.Cause != types.HALVING_CAUSE_UNSPECIFIED {
		if err := ctx.EventManager().EmitTypedEvent(&types.EventHalving{
			Era: plan.Era.Era, Cause: plan.Step.Cause, Epoch: epoch, CumulativeGfl: plan.Step.CumulativeAtHalving,
		}); err != nil {
			return err
		}
	}
	summary := d
	summary.Progress = nil
	return ctx.EventManager().EmitTypedEvent(&types.EventDistributionStarted{Distribution: summary})
}

// step advances the distribution in progress by at most budget items and returns how
// many it used.
func (k Keeper) step(ctx sdk.Context, budget int) (int, error) {
	d, err := k.InProgress.Get(ctx)
	if err != nil {
		return 0, err
	}
	if d.Progress == nil {
		return 0, fmt.Errorf("dps: distribution of epoch %d has no progress", d.Epoch)
	}
	var used int
	switch d.Phase {
	case types.DISTRIBUTION_PHASE_AVAILABILITY:
		used, err = k.availabilityStep(ctx, &d, budget)
	case types.DISTRIBUTION_PHASE_WORK_SUM:
		used, err = k.workSumStep(ctx, &d, budget)
	case types.DISTRIBUTION_PHASE_WORK_PAY:
		used, err = k.workPayStep(ctx, &d, budget)
	case types.DISTRIBUTION_PHASE_PRUNE:
		var done bool
		done, err = k.wiring.market.PruneWork(ctx, d.Epoch, budget)
		used = budget
		if err == nil && done {
			d.Phase = types.DISTRIBUTION_PHASE_DONE
		}
	default:
		err = fmt.Errorf("dps: distribution of epoch %d in phase %s", d.Epoch, d.Phase)
	}
	if err != nil {
		return 0, err
	}
	if d.Phase == types.DISTRIBUTION_PHASE_DONE {
		return used, k.finish(ctx, d, false)
	}
	d.Progress.Failures = 0
	return used, k.InProgress.Set(ctx, d)
}

// stepFailed counts a failed step and aborts the distribution after maxStepFailures.
func (k Keeper) stepFailed(ctx sdk.Context, cause error) {
	_ = blockhook.Apply(ctx, "dps: count a failed distribution step", func(ctx sdk.Context) error {
		d, err := k.InProgress.Get(ctx)
		if err != nil {
			return err
		}
		d.Progress.Failures++
		if d.Progress.Failures < maxStepFailures {
			return k.InProgress.Set(ctx, d)
		}
		k.logger(ctx).Error("dps: distribution aborted after repeated failures", "epoch", d.Epoch, "err", cause)
		return k.finish(ctx, d, true)
	})
}

// availabilityStep pays E_avail pro rata to the nodes' power, times the node's
// reputation factor, to each node's operator.
func (k Keeper) availabilityStep(ctx sdk.Context, d *types.Distribution, budget int) (int, error) {
	nodes, more, err := k.wiring.gfl.NodesAfter(ctx, d.Progress.NodeCursor, budget)
	if err != nil {
		return 0, err
	}
	for _, n := range nodes {
		d.Progress.NodeCursor = n.Id
		if n.PowerGflops == 0 {
			continue
		}
		paid := sdkmath.ZeroInt()
		_ = blockhook.Apply(ctx, fmt.Sprintf("dps: availability reward of node %d", n.Id), func(ctx sdk.Context) error {
			var err error
			paid, err = k.payNode(ctx, *d, n)
			return err
		})
		if paid.IsPositive() {
			d.PaidAvailability = d.PaidAvailability.Add(paid)
			d.NodesPaid++
		}
	}
	if !more {
		d.Progress.NodeCursor = 0
		d.Phase = types.DISTRIBUTION_PHASE_PRUNE
		if d.Work.IsPositive() {
			d.Phase = types.DISTRIBUTION_PHASE_WORK_SUM
		}
	}
	return len(nodes), nil
}

// payNode pays one node's availability reward and returns it.
func (k Keeper) payNode(ctx sdk.Context, d types.Distribution, n gfltypes.Node) (sdkmath.Int, error) {
	score, eligible, err := k.wiring.reputation.Reputation(ctx, n.Id)
	if err != nil {
		return sdkmath.ZeroInt(), err
	}
	amt := types.AvailabilityReward(d.Availability, n.PowerGflops, d.TotalGfl, types.ReputationFactor(score, eligible))
	amt = types.Clip(amt, d.Availability, d.PaidAvailability)
	if !amt.IsPositive() {
		return sdkmath.ZeroInt(), nil
	}
	operator, err := k.addressCodec.StringToBytes(n.Operator)
	if err != nil {
		return sdkmath.ZeroInt(), errorsmod.Wrapf(err, "node %d operator %q", n.Id, n.Operator)
	}
	if err := k.pay(ctx, d.Epoch, operator, n.Id, types.RewardKindAvailability, amt); err != nil {
		return sdkmath.ZeroInt(), err
	}
	return amt, nil
}

// workSumStep is the first pass over the epoch's work: total_weight.
func (k Keeper) workSumStep(ctx sdk.Context, d *types.Distribution, budget int) (int, error) {
	pr := d.Progress
	recs, more, err := k.workPage(ctx, d, budget)
	if err != nil {
		return 0, err
	}
	for _, r := range recs {
		pr.TotalWeight = pr.TotalWeight.Add(types.WorkWeight(r.Record.GflopSeconds, types.WeightOf(pr.WorkloadWeights, r.Workload)))
		if pr.WorkCursor, err = k.position(r); err != nil {
			return 0, err
		}
	}
	if !more {
		pr.WorkCursor = nil
		d.Phase = types.DISTRIBUTION_PHASE_PRUNE
		if pr.TotalWeight.IsPositive() {
			d.Phase = types.DISTRIBUTION_PHASE_WORK_PAY
		}
	}
	return len(recs), nil
}

// workPayStep is the second pass: it adds up each provider's records and pays the
// provider when its last record has been seen.
func (k Keeper) workPayStep(ctx sdk.Context, d *types.Distribution, budget int) (int, error) {
	pr := d.Progress
	recs, more, err := k.workPage(ctx, d, budget)
	if err != nil {
		return 0, err
	}
	for _, r := range recs {
		pos, err := k.position(r)
		if err != nil {
			return 0, err
		}
		if pr.Pending != nil && pr.Pending.Provider != pos.Provider {
			k.payPending(ctx, d)
		}
		if pr.Pending == nil {
			pr.Pending = &types.ProviderTally{Provider: pos.Provider, Weight: sdkmath.ZeroInt(), Fees: sdkmath.ZeroInt()}
		}
		pr.Pending.Weight = pr.Pending.Weight.Add(types.WorkWeight(r.Record.GflopSeconds, types.WeightOf(pr.WorkloadWeights, r.Workload)))
		if !r.Record.Fees.IsNil() && r.Record.Fees.IsPositive() {
			pr.Pending.Fees = pr.Pending.Fees.Add(r.Record.Fees)
		}
		pr.WorkCursor = pos
	}
	if !more {
		if pr.Pending != nil {
			k.payPending(ctx, d)
		}
		pr.WorkCursor = nil
		d.Phase = types.DISTRIBUTION_PHASE_PRUNE
	}
	return len(recs), nil
}

// payPending pays the provider whose records pass two has finished adding up.
func (k Keeper) payPending(ctx sdk.Context, d *types.Distribution) {
	t := *d.Progress.Pending
	d.Progress.Pending = nil
	paid := sdkmath.ZeroInt()
	_ = blockhook.Apply(ctx, "dps: work reward of "+t.Provider, func(ctx sdk.Context) error {
		var err error
		paid, err = k.payProvider(ctx, *d, t)
		return err
	})
	if paid.IsPositive() {
		d.PaidWork = d.PaidWork.Add(paid)
		d.ProvidersPaid++
	}
}

// payProvider pays one provider's work reward and returns it.
func (k Keeper) payProvider(ctx sdk.Context, d types.Distribution, t types.ProviderTally) (sdkmath.Int, error) {
	provider, err := k.addressCodec.StringToBytes(t.Provider)
	if err != nil {
		return sdkmath.ZeroInt(), err
	}
	score, eligible, err := k.wiring.reputation.ProviderReputation(ctx, provider)
	if err != nil {
		return sdkmath.ZeroInt(), err
	}
	pr := d.Progress
	amt := types.WorkReward(d.Work, t.Weight, pr.TotalWeight, t.Fees, pr.WorkRewardCapPpm, types.ReputationFactor(score, eligible))
	amt = types.Clip(amt, d.Work, d.PaidWork)
	if !amt.IsPositive() {
		return sdkmath.ZeroInt(), nil
	}
	if err := k.pay(ctx, d.Epoch, provider, 0, types.RewardKindWork, amt); err != nil {
		return sdkmath.ZeroInt(), err
	}
	return amt, nil
}

// pay sends amt udps from the pool, records it in the recipient's history and emits the
// event.
func (k Keeper) pay(ctx sdk.Context, epoch uint64, to sdk.AccAddress, nodeID uint64, kind string, amt sdkmath.Int) error {
	if err := k.bankKeeper.SendCoinsFromModuleToAccount(ctx, types.ModuleName, to, sdk.NewCoins(sdk.NewCoin(types.Denom, amt))); err != nil {
		return err
	}
	recipient, err := k.addressCodec.BytesToString(to)
	if err != nil {
		return err
	}
	key := collections.Join(to, epoch)
	r, err := k.Rewards.Get(ctx, key)
	switch {
	case errors.Is(err, collections.ErrNotFound):
		r = types.ProviderReward{Provider: recipient, Epoch: epoch, Availability: sdkmath.ZeroInt(), Work: sdkmath.ZeroInt()}
	case err != nil:
		return err
	}
	if kind == types.RewardKindWork {
		r.Work = r.Work.Add(amt)
	} else {
		r.Availability = r.Availability.Add(amt)
	}
	if err := k.Rewards.Set(ctx, key, r); err != nil {
		return err
	}
	return ctx.EventManager().EmitTypedEvent(&types.EventRewardPaid{
		Epoch: epoch, Recipient: recipient, NodeId: nodeID, Kind: kind, Amount: amt,
	})
}

// finish records a distribution as done: what it did not pay is its remainder, which
// stays in the pool, and the pool baseline drops by what it paid.
func (k Keeper) finish(ctx sdk.Context, d types.Distribution, aborted bool) error {
	paid := d.PaidAvailability.Add(d.PaidWork)
	d.Remainder = d.Emission.Sub(paid)
	d.Phase = types.DISTRIBUTION_PHASE_DONE
	d.EndHeight = ctx.BlockHeight()
	d.Aborted = aborted
	d.Progress = nil
	if err := k.Distributions.Set(ctx, d.Epoch, d); err != nil {
		return err
	}
	if err := k.InProgress.Remove(ctx); err != nil {
		return err
	}
	era, err := k.EraState.Get(ctx)
	if err != nil {
		return err
	}
	if err := k.EraState.Set(ctx, era.AfterPayouts(paid)); err != nil {
		return err
	}
	return ctx.EventManager().EmitTypedEvent(&types.EventDistributionFinished{Distribution: d})
}

// cursor converts a stored position to x/market's cursor (nil: from the start).
func (k Keeper) cursor(p *types.WorkPosition) (*markettypes.WorkCursor, error) {
	if p == nil {
		return nil, nil
	}
	addr, err := k.addressCodec.StringToBytes(p.Provider)
	if err != nil {
		return nil, errorsmod.Wrapf(err, "work cursor provider %q", p.Provider)
	}
	return &markettypes.WorkCursor{Provider: addr, Workload: p.Workload}, nil
}

// workPage reads the next page of the epoch's work after the stored cursor.
func (k Keeper) workPage(ctx sdk.Context, d *types.Distribution, limit int) ([]markettypes.ProviderWork, bool, error) {
	after, err := k.cursor(d.Progress.WorkCursor)
	if err != nil {
		return nil, false, err
	}
	return k.wiring.market.WorkRecords(ctx, d.Epoch, after, limit)
}

// position is the stored form of a work record's key.
func (k Keeper) position(r markettypes.ProviderWork) (*types.WorkPosition, error) {
	s, err := k.addressCodec.BytesToString(r.Provider)
	if err != nil {
		return nil, err
	}
	return &types.WorkPosition{Provider: s, Workload: r.Workload}, nil
}
