package keeper

import (
	"context"

	"errors"
	"fmt"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/internal/sdkint"
	"github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// The distribution of an ended epoch (x/dps/README.md). AfterEpochEnd only queues the
// epoch. Each EndBlock, within end_block_gas (internal/blockhook) and at most
// max_payouts_per_block items, the retries run first; then, once x/gfl has no rebalance
// pending, the oldest queued epoch starts (types.PlanDistribution: era update, emission,
// split) and the distribution in progress advances page by page, where an item is a node,
// a work record or a pruned work record:
//
//	AVAILABILITY  nodes in id order (x/gfl NodesAfter), one payout per node with power
//	WORK_SUM      the epoch's work records, summing the weights
//	WORK_PAY      the same records again, one payout per provider (its records are
//	              consecutive; a provider split across blocks is carried in progress.pending)
//	PRUNE         the epoch's work records deleted (PruneWork)
//	DONE          remainder = E - paid, recorded; the pool baseline drops by what was paid
//	              and what is deferred
//
// Every page is an atomic unit of the budget. Items that fail are retried 1, 2, 4 and 8
// blocks later and resolved after their fifth failure:
//
//	start         a distribution that cannot start waits (nothing later starts before
//	              it); resolved by dropping the epoch (EventDistributionSkipped), its
//	              emission left in the pool
//	step          a page that fails is rolled back and the distribution waits; resolved
//	              by ending it where it is (aborted, the unpaid part in remainder)
//	availability, a payout the bank refuses (or that panics) is deferred: its amount is
//	work          owed (DeferredPayout, the distribution's deferred_*) and reserved in
//	              the pool while it waits; resolved by leaving it in the pool
//
// A reward that cannot be computed (its node's operator or reputation unreadable) is
// resolved at once with its failure recorded: retrying a computation on unchanged state
// gives the same error.

// Item kinds of the distribution's block work.
const (
	kindStart        = types.ItemStart
	kindStep         = types.ItemStep
	kindAvailability = types.ItemAvailability
	kindWork         = types.ItemWork
)

// stepPage is the most items one unit of a distribution takes: small enough that a page
// is a small fraction of a block's budget.
const stepPage = 16

// EndBlocker advances the distributions. It never returns an error: failures are logged
// and the chain goes on.
func (k Keeper) EndBlocker(goCtx context.Context) error {
	ctx := sdk.UnwrapSDKContext(goCtx)
	p, err := k.Params.Get(ctx)
	if err != nil {
		k.logger(ctx).Error("dps: no params; distributions skipped", "err", err)
		return nil
	}
	if missing := k.missingDeps(); missing != "" {
		if busy, err := k.hasQueuedWork(ctx); err != nil || busy {
			k.logger(ctx).Error("dps: distribution skipped: keeper dependency not set", "missing", missing, "err", err)
		}
		return nil
	}
	r := blockhook.NewRunner(types.ModuleName, blockhook.NewBudget(p.EndBlockGas), k.Retries, k.kinds(p)...)
	if err := k.blockWork(ctx, p, r); err != nil && !errors.Is(err, blockhook.ErrBudgetSpent) {
		k.logger(ctx).Error("dps: block work stopped", "err", err)
	}
	return nil
}

func (k Keeper) kinds(p types.Params) []blockhook.Kind {
	return []blockhook.Kind{
		{Name: kindStart, Do: func(ctx sdk.Context, it blockhook.Item) (bool, error) {
			return true, k.startDistribution(ctx, p, it.ID)
		}, Resolve: func(ctx sdk.Context, it blockhook.Item) (string, error) {
			return "the epoch is dropped; its emission stays in the pool", k.dropEpoch(ctx, it.ID, "its distribution failed to start 5 times")
		}},
		{Name: kindStep, Do: func(ctx sdk.Context, it blockhook.Item) (bool, error) {
			d, found, err := k.GetInProgress(ctx)
			if err != nil || !found || d.Epoch != it.ID {
				return true, err // moved on
			}
			_, err = k.step(ctx, stepPage)
			return true, err
		}, Resolve: func(ctx sdk.Context, it blockhook.Item) (string, error) {
			d, found, err := k.GetInProgress(ctx)
			if err != nil || !found || d.Epoch != it.ID {
				return "the distribution moved on", err
			}
			return "the distribution ends where it is (aborted); what it did not pay stays in the pool", k.finish(ctx, d, true)
		}},
		{Name: kindAvailability, Do: k.payDeferred, Resolve: k.dropDeferred},
		{Name: kindWork, Do: k.payDeferred, Resolve: k.dropDeferred},
	}
}

// blockWork runs the retries, then starts and advances distributions while the budget
// and max_payouts_per_block last.
func (k Keeper) blockWork(ctx sdk.Context, p types.Params, r *blockhook.Runner) error {
	left := int(p.MaxPayoutsPerBlock)
	if err := r.Retry(ctx, left); err != nil {
		return err
	}
	rebalancing, err := k.gfl.RebalancePending(ctx)
	if err != nil || rebalancing {
		return err // node powers are moving; the index is read once they settle
	}
	noop := func(sdk.Context) error { return nil }
	started := false
	for left > 0 {
		d, found, err := k.GetInProgress(ctx)
		if err != nil {
			return err
		}
		if !found {
			if started {
				return nil
			}
			epoch, ok, err := k.nextPending(ctx)
			if err != nil || !ok {
				return err
			}
			it := blockhook.Item{Kind: kindStart, ID: epoch}
			if waiting, err := k.waiting(ctx, it); err != nil || waiting {
				return err
			}
			started = true
			if err := r.Do(ctx, kindStart, it, nil, noop); err != nil {
				return err
			}
			continue
		}
		it := blockhook.Item{Kind: kindStep, ID: d.Epoch}
		if waiting, err := k.waiting(ctx, it); err != nil || waiting {
			return err
		}
		used := 0
		err = r.Budget.Run(ctx, "dps: distribution step", func(c sdk.Context) error {
			var err error
			used, err = k.step(c, min(left, stepPage))
			return err
		})
		switch {
		case errors.Is(err, blockhook.ErrBudgetSpent):
			return err
		case err != nil:
			return r.Fail(ctx, it, err, noop) // the distribution waits for its retry
		}
		left -= max(used, 1)
	}
	return nil
}

// waiting says whether an item is in the retries (the distribution waits for it).
func (k Keeper) waiting(ctx sdk.Context, it blockhook.Item) (bool, error) {
	n, err := k.Retries.Attempt(ctx, it)
	return n > 0, err
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
func (k Keeper) dropEpoch(ctx sdk.Context, epoch uint64, reason string) error {
	if err := k.PendingEpochs.Remove(ctx, epoch); err != nil {
		return err
	}
	return ctx.EventManager().EmitTypedEvent(&types.EventDistributionSkipped{Epoch: epoch, Reason: reason})
}

// startDistribution plans the emission of an epoch and makes it the distribution in
// progress. Constant work: the era update, four reads and three writes.
func (k Keeper) startDistribution(ctx sdk.Context, p types.Params, epoch uint64) error {
	np, err := k.gfl.GetNetworkPower(ctx)
	if err != nil {
		return err
	}
	// the deferred payouts are owed: reserved, not emitted again
	reserved, err := k.deferredTotal(ctx)
	if err != nil {
		return err
	}
	pool := sdkmath.MaxInt(k.PoolBalance(ctx).Sub(reserved), sdkmath.ZeroInt())
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
		AvailabilityAskCapPpm: p.AvailabilityAskCapPpm,
	}
	switch {
	case d.Availability.IsPositive() && d.TotalGfl > 0 && p.AvailabilityAskCapPpm > 0:
		d.Phase = types.DISTRIBUTION_PHASE_ASKS
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
	case types.DISTRIBUTION_PHASE_ASKS:
		used, err = k.asksStep(ctx, &d, budget)
	case types.DISTRIBUTION_PHASE_AVAILABILITY:
		used, err = k.availabilityStep(ctx, &d, budget)
	case types.DISTRIBUTION_PHASE_WORK_SUM:
		used, err = k.workSumStep(ctx, &d, budget)
	case types.DISTRIBUTION_PHASE_WORK_PAY:
		used, err = k.workPayStep(ctx, &d, budget)
	case types.DISTRIBUTION_PHASE_PRUNE:
		// this epoch's work records, then the rewards of the epoch that falls out of
		// distribution_retention_epochs
		var done bool
		done, err = k.PruneWork(ctx, d.Epoch, budget)
		if err == nil && done {
			done, err = k.pruneRewards(ctx, d.Epoch, budget)
		}
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
	return used, k.InProgress.Set(ctx, d)
}

// asksStep is the pass before the availability payouts when availability_ask_cap_ppm is
// set: it adds up the power of the nodes with power by GPU class and ask (the highest of
// the epoch, gfltypes.Node.EpochHighestAsk), and once every node is counted sets each
// class's reference ask (x/dps/README.md, "Priced out").
func (k Keeper) asksStep(ctx sdk.Context, d *types.Distribution, budget int) (int, error) {
	nodes, more, err := k.gfl.NodesAfter(ctx, d.Progress.NodeCursor, budget)
	if err != nil {
		return 0, err
	}
	for _, n := range nodes {
		d.Progress.NodeCursor = n.Id
		if n.PowerGflops > 0 {
			d.Progress.ClassAsks = types.AddAsk(d.Progress.ClassAsks, n.GpuClass, n.EpochHighestAsk(), n.PowerGflops)
		}
	}
	if !more {
		d.AskCaps = types.AskCaps(d.Progress.ClassAsks, d.Progress.AvailabilityAskCapPpm)
		d.Progress.NodeCursor = 0
		d.Phase = types.DISTRIBUTION_PHASE_AVAILABILITY
	}
	return len(nodes), nil
}

// availabilityStep pays E_avail pro rata to the nodes' power, times the node's
// reputation factor, to each node's operator; a node priced out of its class's market
// (types.PricedOut) is paid nothing, and its share stays in the pool.
func (k Keeper) availabilityStep(ctx sdk.Context, d *types.Distribution, budget int) (int, error) {
	nodes, more, err := k.gfl.NodesAfter(ctx, d.Progress.NodeCursor, budget)
	if err != nil {
		return 0, err
	}
	for _, n := range nodes {
		d.Progress.NodeCursor = n.Id
		if n.PowerGflops == 0 {
			continue
		}
		// the ask of the epoch its power was measured over (x/gfl's epoch_ask)
		if c, out := types.PricedOut(d.AskCaps, n.GpuClass, n.EpochHighestAsk()); out {
			if err := ctx.EventManager().EmitTypedEvent(&types.EventAvailabilityWithheld{
				Epoch: d.Epoch, NodeId: n.Id, Operator: n.Operator, Ask: n.EpochHighestAsk(), Cap: c.Cap,
			}); err != nil {
				return 0, err
			}
			d.NodesPricedOut++
			continue
		}
		it := blockhook.Item{Kind: kindAvailability, ID: d.Epoch, Sub: n.Id}
		operator, amt, err := k.nodeReward(ctx, *d, n)
		if err != nil {
			if err := k.uncomputable(ctx, it, err); err != nil {
				return 0, err
			}
			continue
		}
		it.Addr = operator
		if err := k.payout(ctx, d, it, amt); err != nil {
			return 0, err
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

// nodeReward computes one node's availability reward (clipped so that the epoch's paid
// and deferred rewards never exceed E_avail) and its operator.
func (k Keeper) nodeReward(ctx sdk.Context, d types.Distribution, n gfltypes.Node) (sdk.AccAddress, sdkmath.Int, error) {
	score, eligible, err := k.reputation.Reputation(ctx, n.Id)
	if err != nil {
		return nil, sdkmath.ZeroInt(), err
	}
	operator, err := k.addressCodec.StringToBytes(n.Operator)
	if err != nil {
		return nil, sdkmath.ZeroInt(), errorsmod.Wrapf(err, "node %d operator %q", n.Id, n.Operator)
	}
	amt := types.AvailabilityReward(d.Availability, n.PowerGflops, d.TotalGfl, types.ReputationFactor(score, eligible))
	return operator, types.Clip(amt, d.Availability, d.PaidAvailability.Add(d.DeferredAvailability)), nil
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
			if err := k.payPending(ctx, d); err != nil {
				return 0, err
			}
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
			if err := k.payPending(ctx, d); err != nil {
				return 0, err
			}
		}
		pr.WorkCursor = nil
		d.Phase = types.DISTRIBUTION_PHASE_PRUNE
	}
	return len(recs), nil
}

// payPending pays the provider whose records pass two has finished adding up.
func (k Keeper) payPending(ctx sdk.Context, d *types.Distribution) error {
	t := *d.Progress.Pending
	d.Progress.Pending = nil
	it := blockhook.Item{Kind: kindWork, ID: d.Epoch}
	provider, amt, err := k.providerReward(ctx, *d, t)
	if err != nil {
		return k.uncomputable(ctx, it, err)
	}
	it.Addr = provider
	return k.payout(ctx, d, it, amt)
}

// providerReward computes one provider's work reward, clipped so that the epoch's paid
// and deferred rewards never exceed E_work.
func (k Keeper) providerReward(ctx sdk.Context, d types.Distribution, t types.ProviderTally) (sdk.AccAddress, sdkmath.Int, error) {
	provider, err := k.addressCodec.StringToBytes(t.Provider)
	if err != nil {
		return nil, sdkmath.ZeroInt(), err
	}
	score, eligible, err := k.reputation.ProviderReputation(ctx, provider)
	if err != nil {
		return nil, sdkmath.ZeroInt(), err
	}
	pr := d.Progress
	amt := types.WorkReward(d.Work, t.Weight, pr.TotalWeight, t.Fees, pr.WorkRewardCapPpm, types.ReputationFactor(score, eligible))
	return provider, types.Clip(amt, d.Work, d.PaidWork.Add(d.DeferredWork)), nil
}

// payout pays a computed reward in a cache context of its own. If the payment fails (the
// bank refuses it, or it panics; an out-of-gas is not caught: the budget's unit ends) the
// reward is deferred: owed as a DeferredPayout, counted in the distribution's deferred_*
// and in the reserved total, and queued in the retries.
func (k Keeper) payout(ctx sdk.Context, d *types.Distribution, it blockhook.Item, amt sdkmath.Int) error {
	if !amt.IsPositive() {
		return nil
	}
	cause := blockhook.Apply(ctx, "dps: "+it.Kind+" reward", func(c sdk.Context) error {
		return k.pay(c, d.Epoch, it.Addr, it.Sub, it.Kind, amt)
	})
	if cause == nil {
		addPaid(d, it.Kind, amt)
		return nil
	}
	recipient, err := k.addressCodec.BytesToString(it.Addr)
	if err != nil {
		return err
	}
	if err := k.Deferred.Set(ctx, deferredKey(it), types.DeferredPayout{
		Epoch: d.Epoch, Kind: it.Kind, NodeId: it.Sub, Recipient: recipient, Amount: amt,
	}); err != nil {
		return err
	}
	if err := k.addDeferredTotal(ctx, amt); err != nil {
		return err
	}
	addDeferred(d, it.Kind, amt)
	_, err = k.Retries.Failed(ctx, it, cause)
	return err
}

// uncomputable records a reward that cannot be computed as failed and resolved at once:
// nothing is owed and the amount stays in the pool.
func (k Keeper) uncomputable(ctx sdk.Context, it blockhook.Item, cause error) error {
	k.logger(ctx).Error("dps: reward cannot be computed; it stays in the pool", "kind", it.Kind, "epoch", it.ID, "node", it.Sub, "err", cause)
	if _, err := k.Retries.Record(ctx, it, 0, cause); err != nil {
		return err
	}
	return k.Retries.Resolved(ctx, it, "the reward cannot be computed; it stays in the pool", cause)
}

// payDeferred retries a deferred payout: paid, it leaves the deferred amounts for the
// paid ones of its distribution (and, once that is finished, its remainder).
func (k Keeper) payDeferred(ctx sdk.Context, it blockhook.Item) (bool, error) {
	dp, err := k.Deferred.Get(ctx, deferredKey(it))
	if errors.Is(err, collections.ErrNotFound) {
		return true, nil // moved on
	} else if err != nil {
		return false, err
	}
	if err := k.pay(ctx, dp.Epoch, it.Addr, dp.NodeId, dp.Kind, dp.Amount); err != nil {
		return false, err
	}
	return true, k.settleDeferred(ctx, it, dp, true)
}

// dropDeferred resolves a payout that kept failing: nothing is owed any more and the
// amount stays in the pool (in its distribution's remainder).
func (k Keeper) dropDeferred(ctx sdk.Context, it blockhook.Item) (string, error) {
	dp, err := k.Deferred.Get(ctx, deferredKey(it))
	if errors.Is(err, collections.ErrNotFound) {
		return "the payout moved on", nil
	} else if err != nil {
		return "", err
	}
	return "the reward stays in the pool", k.settleDeferred(ctx, it, dp, false)
}

// settleDeferred ends a deferred payout, paid or dropped: it leaves the reserved total
// and its distribution's deferred amount; paid, it joins the distribution's paid amount
// (and leaves the remainder of a finished one); dropped from a finished distribution, it
// returns to the pool's baseline, which dropped by it when the distribution finished.
func (k Keeper) settleDeferred(ctx sdk.Context, it blockhook.Item, dp types.DeferredPayout, paid bool) error {
	if err := k.Deferred.Remove(ctx, deferredKey(it)); err != nil {
		return err
	}
	if err := k.addDeferredTotal(ctx, dp.Amount.Neg()); err != nil {
		return err
	}
	apply := func(d *types.Distribution) {
		addDeferred(d, dp.Kind, dp.Amount.Neg())
		if paid {
			addPaid(d, dp.Kind, dp.Amount)
		}
	}
	d, found, err := k.GetInProgress(ctx)
	if err != nil {
		return err
	}
	if found && d.Epoch == dp.Epoch {
		apply(&d)
		return k.InProgress.Set(ctx, d)
	}
	d, err = k.Distributions.Get(ctx, dp.Epoch)
	switch {
	case errors.Is(err, collections.ErrNotFound):
		// the distribution record is gone (it is kept while it owes anything)
	case err != nil:
		return err
	default:
		apply(&d)
		if paid {
			d.Remainder = d.Remainder.Sub(dp.Amount)
		}
		if err := k.Distributions.Set(ctx, d.Epoch, d); err != nil {
			return err
		}
	}
	if paid {
		return nil
	}
	era, err := k.EraState.Get(ctx)
	if err != nil {
		return err
	}
	era.PoolBaseline = era.PoolBaseline.Add(dp.Amount)
	return k.EraState.Set(ctx, era)
}

func addPaid(d *types.Distribution, kind string, amt sdkmath.Int) {
	if kind == types.RewardKindWork {
		d.PaidWork = d.PaidWork.Add(amt)
		d.ProvidersPaid++
	} else {
		d.PaidAvailability = d.PaidAvailability.Add(amt)
		d.NodesPaid++
	}
}

func addDeferred(d *types.Distribution, kind string, amt sdkmath.Int) {
	if kind == types.RewardKindWork {
		d.DeferredWork = sdkint.OrZero(d.DeferredWork).Add(amt)
	} else {
		d.DeferredAvailability = sdkint.OrZero(d.DeferredAvailability).Add(amt)
	}
}

// deferredKey is a deferred payout's key: its item's kind and ids.
func deferredKey(it blockhook.Item) collections.Pair[string, []byte] {
	return collections.Join(it.Kind, it.Ref())
}

// deferredTotal is what the deferred payouts owe, reserved in the pool.
func (k Keeper) deferredTotal(ctx sdk.Context) (sdkmath.Int, error) {
	t, err := k.DeferredTotal.Get(ctx)
	if errors.Is(err, collections.ErrNotFound) {
		return sdkmath.ZeroInt(), nil
	}
	return t, err
}

func (k Keeper) addDeferredTotal(ctx sdk.Context, amt sdkmath.Int) error {
	t, err := k.deferredTotal(ctx)
	if err != nil {
		return err
	}
	return k.DeferredTotal.Set(ctx, t.Add(amt))
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
	if err := k.setReward(ctx, to, r); err != nil {
		return err
	}
	return ctx.EventManager().EmitTypedEvent(&types.EventRewardPaid{
		Epoch: epoch, Recipient: recipient, NodeId: nodeID, Kind: kind, Amount: amt,
	})
}

// finish records a distribution as done: what it did not pay is its remainder, which
// stays in the pool, and the pool baseline drops by what it paid and what it still owes
// (its deferred payouts, reserved in the pool).
func (k Keeper) finish(ctx sdk.Context, d types.Distribution, aborted bool) error {
	paid := d.PaidAvailability.Add(d.PaidWork)
	owed := sdkint.OrZero(d.DeferredAvailability).Add(sdkint.OrZero(d.DeferredWork))
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
	if err := k.EraState.Set(ctx, era.AfterPayouts(paid.Add(owed))); err != nil {
		return err
	}
	if err := k.pruneDistribution(ctx, d.Epoch); err != nil {
		return err
	}
	return ctx.EventManager().EmitTypedEvent(&types.EventDistributionFinished{Distribution: d})
}

// setReward stores a provider's reward record of an epoch and its epoch index entry.
func (k Keeper) setReward(ctx context.Context, provider sdk.AccAddress, r types.ProviderReward) error {
	if err := k.Rewards.Set(ctx, collections.Join(provider, r.Epoch), r); err != nil {
		return err
	}
	return k.RewardsByEpoch.Set(ctx, collections.Join(r.Epoch, provider))
}

// pruneRewards deletes up to limit reward records of the epoch distribution_retention_epochs
// before epoch; done when none is left.
func (k Keeper) pruneRewards(ctx sdk.Context, epoch uint64, limit int) (bool, error) {
	p, err := k.Params.Get(ctx)
	if err != nil {
		return false, err
	}
	keep := uint64(p.DistributionRetentionEpochs)
	if keep == 0 || epoch <= keep {
		return true, nil
	}
	old := epoch - keep
	// the distribution's record goes first (its rewards history then no longer has to
	// add up while it is deleted page by page); one that still owes deferred payouts is
	// kept, and so are its rewards, which those payouts still add to
	if err := k.pruneDistribution(ctx, epoch); err != nil {
		return false, err
	}
	if kept, err := k.Distributions.Has(ctx, old); err != nil || kept {
		return kept, err
	}
	it, err := k.RewardsByEpoch.Iterate(ctx, collections.NewPrefixedPairRange[uint64, sdk.AccAddress](old))
	if err != nil {
		return false, err
	}
	var keys []collections.Pair[uint64, sdk.AccAddress]
	for ; it.Valid() && len(keys) <= limit; it.Next() {
		key, err := it.Key()
		if err != nil {
			_ = it.Close()
			return false, err
		}
		keys = append(keys, key)
	}
	if err := it.Close(); err != nil {
		return false, err
	}
	done := len(keys) <= limit
	if !done {
		keys = keys[:limit]
	}
	for _, key := range keys {
		if err := k.Rewards.Remove(ctx, collections.Join(key.K2(), old)); err != nil {
			return false, err
		}
		if err := k.RewardsByEpoch.Remove(ctx, key); err != nil {
			return false, err
		}
	}
	return done, nil
}

// pruneDistribution deletes the record of the distribution distribution_retention_epochs
// before epoch, unless it still owes deferred payouts (those read it until they are paid
// or resolved). One record per finished distribution: constant work.
func (k Keeper) pruneDistribution(ctx sdk.Context, epoch uint64) error {
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	keep := uint64(p.DistributionRetentionEpochs)
	if keep == 0 || epoch <= keep {
		return nil
	}
	old, err := k.Distributions.Get(ctx, epoch-keep)
	if errors.Is(err, collections.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if sdkint.OrZero(old.DeferredAvailability).Add(sdkint.OrZero(old.DeferredWork)).IsPositive() {
		return nil
	}
	return k.Distributions.Remove(ctx, old.Epoch)
}

// cursor converts a stored position to a ledger cursor (nil: from the start).
func (k Keeper) cursor(p *types.WorkPosition) (*types.WorkCursor, error) {
	if p == nil {
		return nil, nil
	}
	addr, err := k.addressCodec.StringToBytes(p.Provider)
	if err != nil {
		return nil, errorsmod.Wrapf(err, "work cursor provider %q", p.Provider)
	}
	return &types.WorkCursor{Provider: addr, Workload: p.Workload}, nil
}

// workPage reads the next page of the epoch's work after the stored cursor.
func (k Keeper) workPage(ctx sdk.Context, d *types.Distribution, limit int) ([]types.ProviderWork, bool, error) {
	after, err := k.cursor(d.Progress.WorkCursor)
	if err != nil {
		return nil, false, err
	}
	return k.WorkRecords(ctx, d.Epoch, after, limit)
}

// position is the stored form of a work record's key.
func (k Keeper) position(r types.ProviderWork) (*types.WorkPosition, error) {
	s, err := k.addressCodec.BytesToString(r.Provider)
	if err != nil {
		return nil, err
	}
	return &types.WorkPosition{Provider: s, Workload: r.Workload}, nil
}
