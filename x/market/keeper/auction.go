package keeper

import (
	"context"
	"fmt"
	"slices"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/market/types"
)

// Auctions (DESIGN.md section 4, AUCTION). While a job is BIDDING, the operator of an
// eligible node may bid a price per task and a quantity, locking bid_deposit; one bid per
// node per job, at most the job's max price. At the close the bids are cleared by
// types.ClearAuction (greedy fill by price over reputation factor, uniform clearing price
// of the first losing unit): winners are assigned their tasks at the clearing price,
// losers get their deposit back, and tasks nobody won go to the scheduler's queue. A
// winner's deposit returns at its first ack, or when the tasks it won end unacked through
// no act of its provider (cancelled, expired); it goes to the reward pool if a task it won
// lapses unacked (settleBidDeposit), or if its node is no longer active at the close. A
// bid may be withdrawn while the auction has a free place; in a full one it is binding.

// PlaceBid records a bid and locks its deposit.
func (k Keeper) PlaceBid(ctx context.Context, provider sdk.AccAddress, jobID, nodeID uint64, price sdkmath.Int, quantity uint32) error {
	signer, err := k.addressString("provider", provider)
	if err != nil {
		return err
	}
	job, err := k.GetJob(ctx, jobID)
	if err != nil {
		return err
	}
	if job.Status != types.JOB_STATUS_BIDDING {
		return errorsmod.Wrapf(types.ErrNotAuction, "job %d is %s", job.Id, job.Status)
	}
	qty := max(quantity, 1)
	if total := job.Spec.TotalTasks(); uint64(qty) > total {
		return errorsmod.Wrapf(types.ErrInvalidBid, "quantity %d: the job has %d tasks", qty, total)
	}
	if price.IsNil() || !price.IsPositive() || price.GT(job.Spec.MaxPricePerTask.Amount) {
		return errorsmod.Wrapf(types.ErrInvalidBid, "price %s: must be positive and at most the max price %s", price, job.Spec.MaxPricePerTask.Amount)
	}
	slot, err := k.Slots.Get(ctx, nodeID)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return errorsmod.Wrapf(types.ErrNodeUnknown, "node %d", nodeID)
	} else if err != nil {
		return err
	}
	if slot.Operator != signer {
		return errorsmod.Wrapf(types.ErrNotProvider, "node %d is operated by %s, not %s", nodeID, slot.Operator, signer)
	}
	if has, err := k.Bids.Has(ctx, collections.Join(job.Id, nodeID)); err != nil {
		return err
	} else if has {
		return errorsmod.Wrapf(types.ErrDuplicateBid, "node %d on job %d", nodeID, job.Id)
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	if err := k.bidEligible(ctx, p, job, slot, price); err != nil {
		return err
	}
	// an auction's close clears all its bids in one step: their number is bounded, by
	// max_bids_per_job. Only open bids hold a place (a bid withdrawn or outbid is deleted),
	// and a full auction takes a bid that fills before its dearest open bid, which it
	// outbids: nodes that fill the places with bids they withdraw, or with dear ones,
	// cannot keep cheaper bids out of the auction.
	outbid, err := k.placeFor(ctx, p, job, nodeID, price, qty)
	if err != nil {
		return err
	}
	if err := k.escrowIn(ctx, provider, sdk.NewCoins(p.BidDeposit)); err != nil {
		return errorsmod.Wrapf(types.ErrInsufficientFunds, "bid deposit %s: %s", p.BidDeposit, err)
	}
	if outbid != nil {
		if err := k.dropBid(ctx, p, outbid, types.BID_STATUS_LOST); err != nil {
			return err
		}
	}
	// The bid reserves the collateral of one task at its own price until it leaves the
	// auction: at the close a winner takes at least one task at its price or better
	// (fillBid), and no later unbond or assignment can have spent that collateral.
	exposure := bidExposure(p, job, price)
	if err := k.addExposure(ctx, signer, exposure); err != nil {
		return errorsmod.Wrapf(types.ErrNodeNotEligible, "node %d: %s", nodeID, err)
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	bid := types.Bid{
		JobId: job.Id, NodeId: nodeID, Provider: signer, Price: price, Quantity: qty,
		Deposit: p.BidDeposit.Amount, Status: types.BID_STATUS_OPEN, Height: sdkCtx.BlockHeight(),
		Exposure: exposure,
	}
	// No entry in the job's history: it holds at most max_history_per_job entries, the
	// owner's record of its job's steps, and bids come from anyone (a bidder that bid
	// and withdrew over and over filled it before the job ran); the bid records and their
	// events tell the auction, and the history keeps its clearing.
	if err := k.Bids.Set(ctx, collections.Join(job.Id, nodeID), bid); err != nil {
		return err
	}
	return sdkCtx.EventManager().EmitTypedEvent(&types.EventBid{JobId: job.Id, NodeId: nodeID, Status: bid.Status, Price: bid.Price})
}

// bidEligible applies the scheduler's filters (but the node's current load: a bid is an
// offer for later) to a bidding node: nodeEligible, and collateral that covers a task at
// the bid's price.
func (k Keeper) bidEligible(ctx context.Context, p types.Params, job types.Job, s types.NodeSlot, price sdkmath.Int) error {
	if err := k.nodeEligible(ctx, job, s); err != nil {
		return err
	}
	exposure := bidExposure(p, job, price)
	if ok, err := k.canAddExposure(ctx, s.Operator, exposure); err != nil {
		return err
	} else if !ok {
		return errorsmod.Wrapf(types.ErrNodeNotEligible, "node %d: its operator is jailed or its collateral does not cover %s%s more exposure (value x result_penalty_multiple %d)", s.NodeId, exposure, p.Denom, p.ResultPenaltyMultiple)
	}
	return nil
}

// nodeEligible applies the scheduler's filters of the node itself (active, not the job
// owner's, the job's requirements and workload, reputation at or above the minimum) to a
// node that offers to take the job's work: a bid, a pool member joining or claiming a
// unit.
func (k Keeper) nodeEligible(ctx context.Context, job types.Job, s types.NodeSlot) error {
	need := job.Spec.Requirements.GPUs()
	switch {
	case !s.Active:
		return errorsmod.Wrapf(types.ErrNodeNotEligible, "node %d is not active", s.NodeId)
	case s.Operator == job.Owner:
		return errorsmod.Wrapf(types.ErrNodeNotEligible, "node %d is operated by the job's owner", s.NodeId)
	case need > s.Gpus:
		return errorsmod.Wrapf(types.ErrNodeNotEligible, "node %d has %d GPUs, a task needs %d", s.NodeId, s.Gpus, need)
	case job.Spec.Requirements.DiskMibPerGpu > s.DiskMibPerGpu:
		return errorsmod.Wrapf(types.ErrNodeNotEligible, "node %d offers %d MiB of disk a GPU, the job needs %d (requirements.disk_mib_per_gpu)", s.NodeId, s.DiskMibPerGpu, job.Spec.Requirements.DiskMibPerGpu)
	case !types.MeetsRequirements(s, job.Spec):
		return errorsmod.Wrapf(types.ErrNodeNotEligible, "node %d does not meet the job's requirements or workload", s.NodeId)
	}
	if _, ok := types.FitDevices(s, job.Spec.Requirements, false); len(s.Devices) > 0 && !ok {
		return errorsmod.Wrapf(types.ErrNodeNotEligible, "node %d has no %d devices for a task (whole GPUs unless shared_gpu_ok, on %d cards unless multi_slice_ok, with %d MiB each)",
			s.NodeId, need, need, job.Spec.Requirements.MinMemoryMib)
	}
	_, ok, err := k.wiring.reputation.Reputation(ctx, s.NodeId)
	if err != nil {
		return err
	}
	if !ok {
		return errorsmod.Wrapf(types.ErrNodeNotEligible, "node %d's reputation is below the minimum", s.NodeId)
	}
	return nil
}

// bidExposure is the collateral an open bid reserves: one task at the bid's price.
func bidExposure(p types.Params, job types.Job, price sdkmath.Int) sdkmath.Int {
	return exposureOf(p, taskValue(job, types.TASK_ROLE_PRIMARY, price))
}

// releaseBid releases the collateral an open bid reserves (none for a bid placed before
// bids reserved collateral, or one already released) and zeroes it in the record the caller writes.
func (k Keeper) releaseBid(ctx context.Context, bid *types.Bid) error {
	if !bid.Exposure.IsNil() && bid.Exposure.IsPositive() {
		if err := k.releaseExposure(ctx, bid.Provider, bid.Exposure); err != nil {
			return err
		}
	}
	bid.Exposure = sdkmath.ZeroInt()
	return nil
}

// WithdrawBid withdraws an open bid and returns its deposit, while the auction has a free
// place. Once max_bids_per_job bids are open, every bid is binding: a place then changes
// hands only to a cheaper bid (placeFor), never back to a free one. A full auction refuses
// bids no cheaper than its dearest, so a withdrawal there would let in a bid it refused or
// outbid: a node that outbid the dearest bid with a price it never meant (or took the last
// place and refused the next bidders) and withdrew, let its accomplice's dearer bid take
// the place, and the honest bidders, who price an auction once, were gone.
func (k Keeper) WithdrawBid(ctx context.Context, providerAddr sdk.AccAddress, jobID, nodeID uint64) error {
	provider, err := k.addressString("provider", providerAddr)
	if err != nil {
		return err
	}
	bid, err := k.Bids.Get(ctx, collections.Join(jobID, nodeID))
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return errorsmod.Wrapf(types.ErrBidNotFound, "node %d on job %d", nodeID, jobID)
	} else if err != nil {
		return err
	}
	if bid.Provider != provider {
		return errorsmod.Wrapf(types.ErrNotProvider, "bid of node %d belongs to %s", nodeID, bid.Provider)
	}
	if bid.Status != types.BID_STATUS_OPEN {
		return errorsmod.Wrapf(types.ErrInvalidBid, "bid of node %d is %s", nodeID, bid.Status)
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	open, err := k.openBids(ctx, jobID)
	if err != nil {
		return err
	}
	if len(open) >= int(p.MaxBidsPerJob) {
		return errorsmod.Wrapf(types.ErrBidBinding, "job %d has max_bids_per_job %d open bids: in a full auction a bid is binding, and only a cheaper bid outbids it", jobID, p.MaxBidsPerJob)
	}
	return k.dropBid(ctx, p, &bid, types.BID_STATUS_WITHDRAWN)
}

// openBids are a bidding job's open bids (at most max_bids_per_job), in node order.
func (k Keeper) openBids(ctx context.Context, jobID uint64) ([]types.Bid, error) {
	var open []types.Bid
	err := k.Bids.Walk(ctx, collections.NewPrefixedPairRange[uint64, uint64](jobID), func(_ collections.Pair[uint64, uint64], b types.Bid) (bool, error) {
		if b.Status == types.BID_STATUS_OPEN {
			open = append(open, b)
		}
		return false, nil
	})
	return open, err
}

// placeFor finds a place for a new bid in a bidding job: free while fewer than
// max_bids_per_job bids are open; otherwise the dearest open bid's (last in ClearAuction's
// fill order, by price over reputation factor; a node whose reputation fell below the
// minimum first, as the close drops it), which it returns to be outbid, if the new bid's
// price over its node's factor is strictly below that bid's (an equal one does not
// displace a bid already there). Nothing is written.
func (k Keeper) placeFor(ctx context.Context, p types.Params, job types.Job, nodeID uint64, price sdkmath.Int, qty uint32) (*types.Bid, error) {
	open, err := k.openBids(ctx, job.Id)
	if err != nil {
		return nil, err
	}
	if len(open) < int(p.MaxBidsPerJob) {
		return nil, nil
	}
	offer := func(node uint64, price sdkmath.Int, qty uint32) (types.AuctionBid, bool, error) {
		score, ok, err := k.wiring.reputation.Reputation(ctx, node)
		if err != nil || !ok || !score.IsPositive() {
			return types.AuctionBid{}, false, err
		}
		return types.AuctionBid{NodeID: node, Price: price, Quantity: qty, Factor: score}, true, nil
	}
	var dearest *types.Bid
	var dear types.AuctionBid
	for i := range open {
		b, ok, err := offer(open[i].NodeId, open[i].Price, open[i].Quantity)
		if err != nil {
			return nil, err
		}
		if !ok {
			return &open[i], nil // the close would drop it: the first to go
		}
		if dearest == nil || types.CompareAuctionBids(b, dear) > 0 {
			dearest, dear = &open[i], b
		}
	}
	bid, ok, err := offer(nodeID, price, qty)
	if err != nil {
		return nil, err
	}
	if !ok || !types.CheaperAuctionBid(bid, dear) {
		return nil, errorsmod.Wrapf(types.ErrInvalidBid, "job %d has max_bids_per_job %d open bids: a bid takes a place only below the dearest, node %d's %s%s (by price over reputation)",
			job.Id, p.MaxBidsPerJob, dearest.NodeId, dearest.Price, p.Denom)
	}
	return dearest, nil
}

// dropBid ends an open bid before the close (withdrawn, or outbid in a full auction): its
// deposit returns and its record is deleted, freeing its place (and letting its node bid
// again); an event says so (the job's history does not: see PlaceBid).
func (k Keeper) dropBid(ctx context.Context, p types.Params, bid *types.Bid, status types.BidStatus) error {
	if err := k.releaseBid(ctx, bid); err != nil {
		return err
	}
	if err := k.payOut(ctx, bid.Provider, p.Denom, bid.Deposit); err != nil {
		return err
	}
	if err := k.Bids.Remove(ctx, collections.Join(bid.JobId, bid.NodeId)); err != nil {
		return err
	}
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventBid{JobId: bid.JobId, NodeId: bid.NodeId, Status: status, Price: bid.Price})
}

// returnDeposit pays a bid's deposit back to its provider and gives the bid its new status.
func (k Keeper) returnDeposit(ctx context.Context, bid *types.Bid, status types.BidStatus) error {
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	if err := k.payOut(ctx, bid.Provider, p.Denom, bid.Deposit); err != nil {
		return err
	}
	bid.Deposit = sdkmath.ZeroInt()
	bid.Status = status
	return k.Bids.Set(ctx, collections.Join(bid.JobId, bid.NodeId), *bid)
}

// returnOpenBids gives every open bid of a job its deposit back.
func (k Keeper) returnOpenBids(ctx context.Context, job *types.Job, status types.BidStatus) error {
	bids, err := k.jobBids(ctx, job.Id)
	if err != nil {
		return err
	}
	for _, b := range bids {
		if b.Status == types.BID_STATUS_OPEN {
			if err := k.releaseBid(ctx, &b); err != nil {
				return err
			}
			if err := k.returnDeposit(ctx, &b, status); err != nil {
				return err
			}
		}
	}
	return nil
}

// settleBidDeposit ends a won bid's deposit: returned at the first ack, or forfeited when a
// won task was never acked. A forfeited deposit goes to the reward pool, not to the job's
// owner: others can keep a winner's ack out of the chain (a proposer that leaves it out of
// its blocks, an owner that floods the winner's node or starts a job that takes its
// machine down beside the ack), and the task goes to the scheduler at no cost to the
// owner, so paying the owner would be a prize for arranging it (as an abandoned task's
// slash is burned: x/market/README.md, "Collateral at risk").
func (k Keeper) settleBidDeposit(ctx context.Context, job *types.Job, nodeID uint64, forfeit bool) error {
	bid, err := k.Bids.Get(ctx, collections.Join(job.Id, nodeID))
	if err != nil {
		return err
	}
	if bid.Status != types.BID_STATUS_WON {
		return nil
	}
	if !forfeit {
		return k.returnDeposit(ctx, &bid, types.BID_STATUS_SETTLED)
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	return k.forfeitDeposit(ctx, p, &bid)
}

// forfeitDeposit sends a bid's deposit to the reward pool and marks it forfeited.
func (k Keeper) forfeitDeposit(ctx context.Context, p types.Params, bid *types.Bid) error {
	if bid.Deposit.IsPositive() {
		if err := k.bankKeeper.SendCoinsFromModuleToModule(ctx, types.ModuleName, k.rewardPool, sdk.NewCoins(sdk.NewCoin(p.Denom, bid.Deposit))); err != nil {
			return err
		}
	}
	bid.Deposit = sdkmath.ZeroInt()
	bid.Status = types.BID_STATUS_FORFEITED
	return k.Bids.Set(ctx, collections.Join(bid.JobId, bid.NodeId), *bid)
}

// wonTaskAssigned: one of a job's tasks won by node's bid is assigned and not yet acked,
// so the bid's deposit is still held for that ack (settleBidDeposit).
func wonTaskAssigned(tasks []types.Task, node uint64) bool {
	return slices.ContainsFunc(tasks, func(t types.Task) bool {
		return t.Status == types.TASK_STATUS_ASSIGNED && t.BidNode == node
	})
}

func (k Keeper) jobBids(ctx context.Context, jobID uint64) ([]types.Bid, error) {
	var out []types.Bid
	err := k.Bids.Walk(ctx, collections.NewPrefixedPairRange[uint64, uint64](jobID), func(_ collections.Pair[uint64, uint64], b types.Bid) (bool, error) {
		out = append(out, b)
		return false, nil
	})
	return out, err
}

// closeAuction clears a job's auction at its close height.
func (k Keeper) closeAuction(ctx sdk.Context, p types.Params, jobID uint64) error {
	job, err := k.loadJob(ctx, jobID)
	if err != nil {
		return err
	}
	if job.Status != types.JOB_STATUS_BIDDING {
		return nil
	}
	bids, err := k.jobBids(ctx, jobID)
	if err != nil {
		return err
	}
	// Every open bid's reserved collateral is released first (each record is written
	// below, as won, lost or forfeited): a winner's tasks then reserve their own.
	for i := range bids {
		if bids[i].Status == types.BID_STATUS_OPEN {
			if err := k.releaseBid(ctx, &bids[i]); err != nil {
				return err
			}
		}
	}
	var offers []types.AuctionBid
	byNode := map[uint64]types.Bid{}
	for _, b := range bids {
		if b.Status != types.BID_STATUS_OPEN {
			continue
		}
		score, ok, err := k.wiring.reputation.Reputation(ctx, b.NodeId)
		if err != nil {
			return err
		}
		if !ok || !score.IsPositive() {
			// the node fell below the minimum score since it bid
			if err := k.returnDeposit(ctx, &b, types.BID_STATUS_LOST); err != nil {
				return err
			}
			continue
		}
		offers = append(offers, types.AuctionBid{NodeID: b.NodeId, Price: b.Price, Quantity: b.Quantity, Factor: score})
		byNode[b.NodeId] = b
	}
	pending, err := k.pendingTasks(ctx, job)
	if err != nil {
		return err
	}
	job.Status = types.JOB_STATUS_ACTIVE
	var res types.ClearingResult
	if len(offers) > 0 {
		if res, err = types.ClearAuction(offers, uint32(len(pending)), job.Spec.MaxPricePerTask.Amount); err != nil {
			return err
		}
	}
	job.ClearingPrice = sdkmath.ZeroInt()
	if !res.ClearingEff.IsNil() {
		job.ClearingPrice = res.ClearingEff.TruncateInt()
	}
	filled := uint32(0)
	won, left := map[uint64]bool{}, map[uint64]bool{}
	for _, f := range res.Fills {
		bid := byNode[f.NodeID]
		n, gone, err := k.fillBid(ctx, p, &job, &pending, bid, f)
		if err != nil {
			return err
		}
		if gone {
			// The bid won and its node is no longer there to take the tasks (deactivated,
			// in another class awaiting its measurement, or with fewer GPUs than a task
			// needs, since it bid): a winner that
			// never takes what it won, like one whose ack lapses, forfeits its deposit.
			// Else a node could hold a full auction's cheap place, which refuses dearer
			// bids, and leave before the close for free; its tasks go to the scheduler.
			left[f.NodeID] = true
			continue
		}
		filled += n
		if n > 0 {
			won[f.NodeID] = true
			bid.Status, bid.Filled = types.BID_STATUS_WON, n
			if err := k.Bids.Set(ctx, collections.Join(jobID, f.NodeID), bid); err != nil {
				return err
			}
		}
	}
	// In store order (by node id): never a map's order.
	for _, b := range bids {
		_, open := byNode[b.NodeId]
		switch {
		case !open || won[b.NodeId]:
		case left[b.NodeId]:
			if err := k.forfeitDeposit(ctx, p, &b); err != nil {
				return err
			}
		default:
			if err := k.returnDeposit(ctx, &b, types.BID_STATUS_LOST); err != nil {
				return err
			}
		}
	}
	// Tasks nobody won go to the scheduler (the job is ACTIVE now), each at its drawn node's
	// asking price, at most the job's max price.
	for i := range pending {
		if t := &pending[i]; t.Status == types.TASK_STATUS_PENDING {
			if err := k.transition(ctx, p, &job, t, types.TASK_STATUS_PENDING, step{}, nil); err != nil {
				return err
			}
		}
	}
	if err := k.addHistory(ctx, job, p, "AuctionCleared", 0, 0, fmt.Sprintf("%d tasks filled at %s%s, %d to the scheduler", filled, job.ClearingPrice, p.Denom, uint32(len(pending))-filled)); err != nil {
		return err
	}
	if err := k.saveJob(ctx, job); err != nil {
		return err
	}
	return ctx.EventManager().EmitTypedEvent(&types.EventAuctionCleared{
		JobId: jobID, Filled: filled, Unfilled: uint32(len(pending)) - filled, ClearingPrice: job.ClearingPrice,
	})
}

// fillBid assigns up to f.Tasks pending tasks to the bid's node at the fill's pay, never two
// replicas of a shard to the same node, and only while the node still has room and
// collateral (a winner that cannot take a task leaves it to the scheduler). A winner
// whose collateral does not cover a task at the clearing price takes it at its own bid's
// price, which the bid reserved: else a node that bid low with little collateral held a
// full auction's place, which refuses dearer bids, and gave its tasks up at the close
// with its deposit back. gone: the node's slot is deleted, not active, or too small for a
// task now (no task taken).
func (k Keeper) fillBid(ctx sdk.Context, p types.Params, job *types.Job, pending *[]types.Task, bid types.Bid, f types.AuctionFill) (n uint32, gone bool, err error) {
	need := job.Spec.Requirements.GPUs()
	for i := range *pending {
		if n == f.Tasks {
			break
		}
		t := &(*pending)[i]
		if t.Status != types.TASK_STATUS_PENDING {
			continue
		}
		slot, err := k.Slots.Get(ctx, f.NodeID)
		if errorsmod.IsOf(err, collections.ErrNotFound) {
			return n, true, nil
		} else if err != nil {
			return n, false, err
		}
		if !slot.Active {
			return n, true, nil // inactivity does not change within the fill: n is 0
		}
		if !types.FitsJob(slot, job.Spec) {
			// the node no longer fits the job as its bid did: its provider changed it since
			// (fewer GPUs, another region, less disk offered, whole cards carved into MIG
			// instances...; nothing of it changes within the fill: n is 0), as good as
			// gone; a node the scheduler filled meanwhile is only busy (below)
			return n, true, nil
		}
		if slot.GpusUsed+need > slot.Gpus {
			break // the node has no room left: the rest of its fill goes to the scheduler
		}
		if _, ok := types.FitDevices(slot, job.Spec.Requirements, true); len(slot.Devices) > 0 && !ok {
			break // no free devices that fit (MIG)
		}
		excluded, err := k.excludedNodes(ctx, *job, *t)
		if err != nil {
			return n, false, err
		}
		if excluded.excludes(slot) {
			continue
		}
		pay, ok, err := k.winnerPay(ctx, p, *job, t.Role, slot.Operator, f.Pay, bid.Price)
		if err != nil || !ok {
			return n, false, err
		}
		if err := k.assign(ctx, p, job, t, slot, pay, bid.NodeId, false); err != nil {
			return n, false, err
		}
		n++
	}
	return n, false, nil
}

// winnerPay is what a winner is paid for a task: the fill's pay if its operator's
// collateral covers that task's exposure, else its own bid's price if that is covered;
// ok is false when neither is.
func (k Keeper) winnerPay(ctx context.Context, p types.Params, job types.Job, role types.TaskRole, operator string, pay, price sdkmath.Int) (sdkmath.Int, bool, error) {
	ok, err := k.canAddExposure(ctx, operator, exposureOf(p, taskValue(job, role, pay)))
	if err != nil || ok || !price.LT(pay) {
		return pay, ok, err
	}
	ok, err = k.canAddExposure(ctx, operator, exposureOf(p, taskValue(job, role, price)))
	return price, ok, err
}

func (k Keeper) pendingTasks(ctx context.Context, job types.Job) ([]types.Task, error) {
	all, err := k.jobTasks(ctx, job)
	if err != nil {
		return nil, err
	}
	var out []types.Task
	for _, t := range all {
		if t.Status == types.TASK_STATUS_PENDING {
			out = append(out, t)
		}
	}
	return out, nil
}
