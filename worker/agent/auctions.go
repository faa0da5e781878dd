package agent

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	"github.com/cosmos/cosmos-sdk/types/query"

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
		}
	}
}

// bidActions bids in the open auctions the node can run, at the policy's price. Nothing
// is reserved before the price is decided; a bid locks the chain's bid deposit and, if it
// wins, the tasks are assigned to the node like any other.
func (a *Agent) bidActions(ctx context.Context) []action {
	op := a.o.Chain.Address().String()
	slot := markettypes.SlotFromNode(a.node)
	if !slot.Active {
		return nil // not schedulable (inactive, or measured into no class): a bid is refused
	}
	a.forgetClosedAuctions()
	open, err := a.openAuctions(ctx, slot)
	if err != nil {
		a.log.Warn("open auctions", "err", err)
	}
	var acts []action
	for _, job := range open {
		a.mu.Lock()
		_, done := a.bid[job.Id]
		used := uint32(len(a.pinned))
		a.mu.Unlock()
		if done || job.Owner == op || !markettypes.Serves(slot, job.Spec) {
			continue
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
		msg := &markettypes.MsgPlaceBid{Provider: op, JobId: job.Id, NodeId: a.node.Id, Price: b.Price, Quantity: b.Quantity}
		jobID := job.Id
		acts = append(acts, action{what: fmt.Sprintf("bid on job %d", job.Id), msgs: msgs(msg), after: func(err error) {
			if err == nil {
				a.log.Info("bid placed", "job", jobID, "price", b.Price, "quantity", b.Quantity)
			}
		}})
	}
	return acts
}
