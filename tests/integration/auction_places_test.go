package integration

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	marketkeeper "github.com/flopsnet/flops/x/market/keeper"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// An auction holds at most max_bids_per_job bids, so that its close clears them in one
// step. The attack of a provider (or an owner's accomplice) on the other bidders: every
// bid record held a place, withdrawn ones too, so a few nodes that bid and withdrew (their
// deposits back, only fees spent) closed the auction to every other bidder, and its tasks
// went to the scheduler or to the squatter's later bid. Only open bids hold a place now,
// and a withdrawn bid is deleted. Here max_bids_per_job is 2: p1 and p2 bid and withdraw,
// then p3's and p4's bids are taken, and p3's wins.
func TestAttackWithdrawnBidsFillTheAuction(t *testing.T) {
	a, nodes := marketAppN(t, 4, func(p *markettypes.Params) { p.MaxBidsPerJob = 2 })
	job := submit(t, a, gemmJob(a, 1, markettypes.ALLOCATION_MODE_AUCTION))
	for _, n := range []string{"p1", "p2"} {
		bid(t, a, n, nodes[n], job, 400_000)
		a.MustDeliver(n, &markettypes.MsgWithdrawBid{Provider: a.Account(n).String(), JobId: job, NodeId: nodes[n]})
	}
	bid(t, a, "p3", nodes["p3"], job, 200_000)
	bid(t, a, "p4", nodes["p4"], job, 300_000)
	for getJob(t, a, job).Status == markettypes.JOB_STATUS_BIDDING {
		a.NextBlock()
	}
	task := jobTasks(t, a, job)[0]
	require.Equal(t, nodes["p3"], task.BidNode, "p3's bid won the task")
	a.AssertInvariants()
}

// The same attack with open bids: nodes that fill every place with dear bids (their
// deposits locked for the window) kept every cheaper bid out, and set the price among
// themselves. A full auction now takes a bid whose price over its node's reputation
// factor is below its dearest open bid's, which it outbids (deposit back, bid deleted);
// a bid no cheaper than the dearest is refused. Here p1 and p2 fill both places at the
// max price; p3's cheaper bid outbids one of them, p4's bid at the max price is refused,
// and at the close p3 wins the task, paid the first losing bid's price (the remaining
// squatter's) rather than the squatters winning it.
func TestAttackDearBidsFillTheAuction(t *testing.T) {
	a, nodes := marketAppN(t, 4, func(p *markettypes.Params) { p.MaxBidsPerJob = 2 })
	spec := gemmJob(a, 1, markettypes.ALLOCATION_MODE_AUCTION)
	spec.MaxPricePerTask.Amount = sdkmath.NewInt(400_000) // within the providers' collateral
	job := submit(t, a, spec)
	maxPrice := spec.MaxPricePerTask.Amount.Int64()
	deposit := markettypes.DefaultParams().BidDeposit.Amount
	before := map[string]sdkmath.Int{}
	for _, n := range []string{"p1", "p2"} {
		before[n] = a.Balance(a.Account(n).Address, udps)
		bid(t, a, n, nodes[n], job, maxPrice)
	}
	bid(t, a, "p3", nodes["p3"], job, 200_000)
	// p1 and p2 tie (the same price and the same initial reputation); the later in the
	// fill order, the higher node id, is the dearest and is outbid
	out, kept := "p1", "p2"
	if nodes["p2"] > nodes["p1"] {
		out, kept = "p2", "p1"
	}
	has, err := a.MarketKeeper.Bids.Has(a.Ctx(), collections.Join(job, nodes[out]))
	require.NoError(t, err)
	require.False(t, has, "%s's bid is outbid and deleted", out)
	require.Equal(t, before[out], a.Balance(a.Account(out).Address, udps), "%s's deposit is back", out)
	require.Equal(t, before[kept].Sub(deposit), a.Balance(a.Account(kept).Address, udps))
	r := a.Deliver("p4", &markettypes.MsgPlaceBid{Provider: a.Account("p4").String(), JobId: job, NodeId: nodes["p4"], Price: sdkmath.NewInt(maxPrice), Quantity: 1})
	require.Equal(t, markettypes.ErrInvalidBid.ABCICode(), r.Code, "a bid no cheaper than the dearest is refused: %s", r.Log)
	a.AssertInvariants()

	for getJob(t, a, job).Status == markettypes.JOB_STATUS_BIDDING {
		a.NextBlock()
	}
	task := jobTasks(t, a, job)[0]
	require.Equal(t, nodes["p3"], task.BidNode, "p3's bid won the task")
	require.Equal(t, sdkmath.NewInt(maxPrice), task.Price, "paid the first losing bid's price, the kept squatter's")
	b, err := a.MarketKeeper.Bids.Get(a.Ctx(), collections.Join(job, nodes[kept]))
	require.NoError(t, err)
	require.Equal(t, markettypes.BID_STATUS_LOST, b.Status)
	a.AssertInvariants()
}

// A job's history (at most max_history_per_job entries, the owner's record of its job)
// is written by the job's own steps, not by strangers' bids: each bid placed, withdrawn or
// outbid wrote an entry, so a bidder that bid and withdrew over and over (now that a
// withdrawn bid frees its place), or the auction's bidders together, filled the history
// before the job's assignment, run and settlement were written. The bids are in the job's
// bid records and events; the history keeps the auction's clearing. Here
// max_history_per_job is 8 and p1 bids and withdraws five times before p2 and p3 bid.
func TestAttackBidsFillTheJobsHistory(t *testing.T) {
	a, nodes := marketAppN(t, 3, func(p *markettypes.Params) { p.MaxHistoryPerJob = 8; p.AuctionWindowBlocks = 30 })
	job := submit(t, a, gemmJob(a, 1, markettypes.ALLOCATION_MODE_AUCTION))
	for range 5 {
		bid(t, a, "p1", nodes["p1"], job, 400_000)
		a.MustDeliver("p1", &markettypes.MsgWithdrawBid{Provider: a.Account("p1").String(), JobId: job, NodeId: nodes["p1"]})
	}
	bid(t, a, "p2", nodes["p2"], job, 200_000)
	bid(t, a, "p3", nodes["p3"], job, 300_000)
	for getJob(t, a, job).Status == markettypes.JOB_STATUS_BIDDING {
		a.NextBlock()
	}
	task := jobTasks(t, a, job)[0]
	require.Equal(t, nodes["p2"], task.BidNode)
	run(t, a, nodes, task)
	a.NextBlocks(10)
	hist, err := marketkeeper.NewQueryServerImpl(a.MarketKeeper).JobHistory(a.Ctx(), &markettypes.QueryJobHistoryRequest{JobId: job})
	require.NoError(t, err)
	var events []string
	for _, e := range hist.Entries {
		events = append(events, e.Event)
	}
	require.Equal(t, []string{"JobSubmitted", "TaskAssigned", "AuctionCleared", "TaskRunning", "TaskCommitted", "TaskRevealed", "TaskSettled", "JobCompleted"}, events)
	a.AssertInvariants()
}
