package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc"

	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/types/query"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/worker/bidder"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// openAuctions reads the open auctions the worker has not read yet (a.auctions): before,
// it read the first 100 every block and never saw the 101st.
func (a *Agent) openAuctions(ctx context.Context, slot markettypes.NodeSlot) ([]markettypes.Job, error) {
	return readList(&a.auctions, slot, func(pg *query.PageRequest, opt grpc.CallOption) ([]markettypes.Job, *query.PageResponse, error) {
		res, err := a.market.OpenAuctions(ctx, &markettypes.QueryOpenAuctionsRequest{Pagination: pg}, opt)
		if err != nil {
			return nil, nil, err
		}
		return res.Jobs, res.Pagination, nil
	}, func(j markettypes.Job) uint64 { return j.Id })
}

// auctionForgetBlocks: a priced auction is forgotten this many blocks after its close
// height. The chain closes an auction in an EndBlock at that height, or a few later under
// a full work budget; the worker's place in the list of open auctions is past it by then.
const auctionForgetBlocks = 100

// forgetClosedAuctions drops the auctions priced that have closed: the worker remembered
// every auction it ever priced, memory that grew with the market for as long as it ran.
func (a *Agent) forgetClosedAuctions() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, closes := range a.bid {
		if closes+auctionForgetBlocks < a.height {
			delete(a.bid, id)
			delete(a.placed, id)
		}
	}
}

// withdrawActions withdraws, once the node's spec changed (a card lost, another region or
// disk offer) or it left the market (drained, deactivated), the node's bids in open
// auctions it no longer fits or can no longer take: at the close a winner whose node does
// not fit the job, or is off the market, forfeits its deposit (markettypes.FitsJob). The chain
// refuses a withdrawal from a full auction, where a bid is binding: the worker says so,
// and the bid stands.
func (a *Agent) withdrawActions(ctx context.Context) []action {
	if !a.refit {
		return nil
	}
	a.refit = false
	op := a.o.Chain.Address().String()
	slot := markettypes.SlotFromNode(a.Node())
	a.mu.Lock()
	var open []uint64
	for id := range a.placed {
		if a.bid[id] >= a.height {
			open = append(open, id)
		}
	}
	a.mu.Unlock()
	slices.Sort(open)
	var acts []action
	for _, id := range open {
		res, err := a.market.Job(ctx, &markettypes.QueryJobRequest{JobId: id})
		if err != nil {
			a.log.Warn("job", "job", id, "err", err)
			continue
		}
		if slot.Active && markettypes.FitsJob(slot, res.Job.Spec) {
			continue // else off the market (drained, deactivated, measured into no class) or no fit
		}
		jobID := id
		acts = append(acts, action{what: fmt.Sprintf("withdraw the bid on job %d", id),
			msgs: msgs(&markettypes.MsgWithdrawBid{Provider: op, JobId: id, NodeId: a.node.Id}), after: func(err error) {
				switch {
				case err == nil:
					a.mu.Lock()
					delete(a.placed, jobID)
					a.mu.Unlock()
					a.log.Info("bid withdrawn: the node no longer fits the job or is off the market", "job", jobID)
				case errors.Is(err, markettypes.ErrBidBinding):
					a.log.Warn("the node no longer fits (or is off the market for) a job whose full auction holds its bid (binding): if it wins, its deposit is forfeited", "job", jobID)
				}
			}})
	}
	return acts
}

// bidActions bids in the open auctions the node can run, at the policy's price. Nothing
// is reserved before the price is decided; a bid locks the chain's bid deposit and, if it
// wins, the tasks are assigned to the node like any other.
//
// Each bid locks params.bid_deposit until its auction closes. While the provider's
// account cannot lock one more, the worker reads no further auction and prices none: it
// goes on from the same place once deposits come back. Before, it priced each auction as
// it came and marked it priced whether or not the bid went through, so a client who
// opened auctions, drew every worker's bids and cancelled before the close (the deposits
// then come back, the client's escrow too) kept the workers' deposits locked meanwhile,
// and every auction opened in that time never got their bids.
func (a *Agent) bidActions(ctx context.Context) []action {
	op := a.o.Chain.Address().String()
	slot := markettypes.SlotFromNode(a.node)
	if !slot.Active {
		return nil // not schedulable (inactive, or measured into no class): a bid is refused
	}
	a.forgetClosedAuctions()
	deposit := a.params.BidDeposit
	if deposit.Amount.IsNil() {
		deposit.Amount = sdkmath.ZeroInt() // no params read yet
	}
	funds, known := a.spendable(ctx, deposit.Denom)
	if known {
		// the bids on their way lock theirs once they land
		a.mu.Lock()
		for what := range a.inflight {
			if strings.HasPrefix(what, bidPrefix) {
				funds = funds.Sub(deposit.Amount)
			}
		}
		a.mu.Unlock()
	}
	if known && funds.LT(deposit.Amount) {
		a.depositsShort(true)
		return nil
	}
	a.depositsShort(false)
	open, err := a.openAuctions(ctx, slot)
	if err != nil {
		a.log.Warn("open auctions", "err", err)
	}
	var acts []action
	for _, job := range open {
		a.mu.Lock()
		_, done := a.bid[job.Id]
		used := a.gpusHeldByTasks()
		a.mu.Unlock()
		if done || job.Owner == op || !markettypes.Serves(slot, job.Spec) {
			continue
		}
		if known && funds.LT(deposit.Amount) {
			a.auctions.rewind(job.Id) // read and priced once deposits come back
			break
		}
		// GPUs: the node's devices (on a node with MIG, its instances and whole cards)
		b, err := a.o.Bidder.Price(ctx, bidder.Offer{Job: job, GpuClass: a.node.GpuClass, GPUs: slot.Gpus, GPUsUsed: used})
		if err != nil {
			a.log.Warn("pricing", "job", job.Id, "err", err)
			a.auctions.rewind(job.Id) // priced again at the next tick, as before
			continue
		}
		a.mu.Lock()
		a.bid[job.Id] = job.AuctionCloseHeight // priced once: a refused bid is not retried every block
		a.mu.Unlock()
		if b.Quantity == 0 {
			a.log.Debug("no bid", "job", job.Id, "reason", b.Reason)
			continue
		}
		if known {
			funds = funds.Sub(deposit.Amount)
		}
		msg := &markettypes.MsgPlaceBid{Provider: op, JobId: job.Id, NodeId: a.node.Id, Price: b.Price, Quantity: b.Quantity}
		jobID := job.Id
		acts = append(acts, action{what: fmt.Sprintf("%s%d", bidPrefix, job.Id), msgs: msgs(msg), after: func(err error) {
			if err == nil {
				a.mu.Lock()
				a.placed[jobID] = true
				a.mu.Unlock()
				a.log.Info("bid placed", "job", jobID, "price", b.Price, "quantity", b.Quantity)
			}
		}})
	}
	return acts
}

// bidPrefix names a bid's action ("bid on job 7"), in flight while its tx is.
const bidPrefix = "bid on job "

// spendable is the provider's spendable balance in denom; known is false when the node
// did not answer (the worker then bids as it did, and the chain refuses a bid it cannot
// fund).
func (a *Agent) spendable(ctx context.Context, denom string) (sdkmath.Int, bool) {
	res, err := a.bank.SpendableBalanceByDenom(ctx, &banktypes.QuerySpendableBalanceByDenomRequest{Address: a.o.Chain.Address().String(), Denom: denom})
	if err != nil || res.Balance == nil {
		a.log.Warn("spendable balance", "err", err)
		return sdkmath.Int{}, false
	}
	return res.Balance.Amount, true
}

// depositsShort logs when the provider's funds stop, and start again, to cover a bid
// deposit.
func (a *Agent) depositsShort(short bool) {
	a.mu.Lock()
	was := a.shortOfDeposit
	a.shortOfDeposit = short
	a.mu.Unlock()
	switch {
	case short && !was:
		a.log.Warn("no auction priced until a bid deposit comes back: the provider's spendable balance is below params.bid_deposit", "bid_deposit", a.params.BidDeposit.String())
	case !short && was:
		a.log.Info("bid deposits covered again: pricing the open auctions")
	}
}
