package agent

import (
	"context"
	"fmt"

	"github.com/flopsnet/flops/worker/bidder"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// bidActions bids in the open auctions the node can run, at the policy's price. Nothing
// is reserved before the price is decided; a bid locks the chain's bid deposit and, if it
// wins, the tasks are assigned to the node like any other.
func (a *Agent) bidActions(ctx context.Context) []action {
	res, err := a.market.OpenAuctions(ctx, &markettypes.QueryOpenAuctionsRequest{})
	if err != nil {
		a.log.Warn("open auctions", "err", err)
		return nil
	}
	op := a.o.Chain.Address().String()
	slot := markettypes.SlotFromNode(a.node)
	if !slot.Active {
		return nil // not schedulable (inactive, or measured into no class): a bid is refused
	}
	var acts []action
	for _, job := range res.Jobs {
		a.mu.Lock()
		done := a.bid[job.Id]
		used := uint32(len(a.pinned))
		a.mu.Unlock()
		if done || job.Owner == op || !markettypes.Serves(slot, job.Spec) {
			continue
		}
		// GPUs: the node's devices (on a node with MIG, its instances and whole cards)
		b, err := a.o.Bidder.Price(ctx, bidder.Offer{Job: job, GpuClass: a.node.GpuClass, GPUs: slot.Gpus, GPUsUsed: used})
		if err != nil {
			a.log.Warn("pricing", "job", job.Id, "err", err)
			continue
		}
		a.mu.Lock()
		a.bid[job.Id] = true // priced once: a refused bid is not retried every block
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
