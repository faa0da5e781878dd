package agent

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"google.golang.org/grpc"

	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/flopsnet/flops/worker/bidder"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

const (
	// auctionPage is the open auctions one query asks for. Each comes with its spec,
	// which the Msg's bounds let reach about 670 KB (command, env, task_args, inputs): a
	// page of the SDK's default 100 such jobs is more than a node lets one query read
	// (flopsd's query-gas-limit) and more than gRPC's default 4 MiB answer, so a client
	// that opened a handful of big auctions first had every worker's read refused and no
	// auction bid on. Ten are at most about 7 MB and 21,000,000 gas.
	auctionPage = 10
	// auctionPageBytes is the answer a page of open auctions may be (gRPC's default is
	// 4 MiB, a page of ten of the largest specs about 7 MB).
	auctionPageBytes = 16 << 20
	// auctionPagesPerTick bounds the auctions one tick reads (200); a tick that stops
	// there goes on from the same place at the next.
	auctionPagesPerTick = 20
)

// openAuctions reads the open auctions the worker has not read yet. Jobs enter the
// auction (JOB_STATUS_BIDDING) only at submission, so in id order: the worker keeps its
// place (a.auctionKey) and each tick reads only the auctions opened since, however many
// are open (before, it read the first 100 every block and never saw the 101st). The
// place is dropped, and every open auction read again, when the node's slot changes
// (its class, runtimes, region or activity decide which auctions it serves).
func (a *Agent) openAuctions(ctx context.Context, slot markettypes.NodeSlot) ([]markettypes.Job, error) {
	fp, err := slot.Marshal()
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(fp, a.auctionSlot) {
		a.auctionKey, a.auctionSlot = nil, fp
	}
	var jobs []markettypes.Job
	for range auctionPagesPerTick {
		res, err := a.market.OpenAuctions(ctx, &markettypes.QueryOpenAuctionsRequest{Pagination: &query.PageRequest{Key: a.auctionKey, Limit: auctionPage}},
			grpc.MaxCallRecvMsgSize(auctionPageBytes))
		if err != nil {
			return jobs, err
		}
		jobs = append(jobs, res.Jobs...)
		if res.Pagination != nil && len(res.Pagination.NextKey) > 0 {
			a.auctionKey = res.Pagination.NextKey
			continue
		}
		// caught up: the next tick starts after the newest auction read, where the next
		// page would (the page key under the status is the job id, big-endian)
		if n := len(res.Jobs); n > 0 {
			a.auctionKey = binary.BigEndian.AppendUint64(nil, res.Jobs[n-1].Id+1)
		}
		break
	}
	return jobs, nil
}

// rereadAuctionsFrom moves the place of the next read of the open auctions back to job
// id, if it is past it: an auction whose pricing failed (a bidder script that timed out)
// is read, and priced, again.
func (a *Agent) rereadAuctionsFrom(id uint64) {
	if key := binary.BigEndian.AppendUint64(nil, id); a.auctionKey != nil && bytes.Compare(key, a.auctionKey) < 0 {
		a.auctionKey = key
	}
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
			a.rereadAuctionsFrom(job.Id) // priced again at the next tick, as before
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
