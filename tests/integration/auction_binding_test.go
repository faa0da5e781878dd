package integration

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/apptest"
	dpstypes "github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// A full auction (max_bids_per_job open bids) takes a new bid only if it is cheaper than
// its dearest, and honest workers price an auction once. These attacks get a dear bid
// into a full auction, or keep a cheaper one out, with a cheap bid their provider never
// means to honour. The auctions here: max_bids_per_job 3, two tasks, max price 400,000
// udps; honest, p1 at 200,000 and p2 at 250,000 win at the first losing bid's price.
// With multiple > 0, result_penalty_multiple is that and every provider but p4 bonds
// another 400 DPS.
func bindingAuction(t *testing.T, multiple uint32) (a *apptest.App, nodes map[string]uint64, job uint64) {
	t.Helper()
	a, nodes = marketAppN(t, 5, func(p *markettypes.Params) {
		p.MaxBidsPerJob = 3
		if multiple > 0 {
			p.ResultPenaltyMultiple = multiple
		}
	})
	if multiple > 0 {
		for _, n := range []string{"p1", "p2", "p3", "p5"} {
			a.MustDeliver(n, &sstypes.MsgBond{Provider: a.Account(n).String(), Amount: sdk.NewInt64Coin(udps, 400_000_000)})
		}
	}
	spec := gemmJob(a, 2, markettypes.ALLOCATION_MODE_AUCTION)
	spec.MaxPricePerTask.Amount = sdkmath.NewInt(400_000) // within the providers' collateral
	job = submit(t, a, spec)
	bid(t, a, "p1", nodes["p1"], job, 200_000)
	bid(t, a, "p2", nodes["p2"], job, 250_000)
	return a, nodes, job
}

// closeBidding runs blocks until the job's auction has closed, and returns the two
// tasks' nodes (those the bids won) and the price each is paid.
func closeBidding(t *testing.T, a *apptest.App, job uint64) (bidNodes []uint64, prices []int64) {
	t.Helper()
	for getJob(t, a, job).Status == markettypes.JOB_STATUS_BIDDING {
		a.NextBlock()
	}
	for _, task := range jobTasks(t, a, job) {
		bidNodes = append(bidNodes, task.BidNode)
		prices = append(prices, task.Price.Int64())
	}
	return bidNodes, prices
}

// squat: p4 takes the auction's last place at 1 udps, and p3's honest bid at 300,000 that
// follows is refused, no cheaper than the dearest open bid (p2's).
func squat(t *testing.T, a *apptest.App, nodes map[string]uint64, job uint64) {
	t.Helper()
	bid(t, a, "p4", nodes["p4"], job, 1)
	r := a.Deliver("p3", &markettypes.MsgPlaceBid{Provider: a.Account("p3").String(), JobId: job, NodeId: nodes["p3"], Price: sdkmath.NewInt(300_000), Quantity: 1})
	require.Equal(t, markettypes.ErrInvalidBid.ABCICode(), r.Code, "p3's dearer bid is refused by the full auction: %s", r.Log)
}

// paidByNode maps closeBidding's task nodes to their prices.
func paidByNode(nodes []uint64, prices []int64) map[uint64]int64 {
	paid := map[uint64]int64{}
	for i, n := range nodes {
		paid[n] = prices[i]
	}
	return paid
}

// withdraw sends name's MsgWithdrawBid and returns its result code.
func withdraw(a *apptest.App, name string, node, job uint64) uint32 {
	return a.Deliver(name, &markettypes.MsgWithdrawBid{Provider: a.Account(name).String(), JobId: job, NodeId: node}).Code
}

// The attack: honest p3 takes the last place at 300,000 (the price the winners would be
// paid). p4 outbids it at 1 udps and withdraws, and p5, its accomplice, bids the max
// price into the freed place: p1 and p2 were paid 400,000 each, and p3, which priced the
// auction once, was gone. Now a bid in a full auction is binding: p4's withdrawal is
// refused, p5's dear bid too, and p4 wins a task at the clearing price it bid for.
func TestAttackOutbidThenWithdrawLetsADearBidIn(t *testing.T) {
	a, nodes, job := bindingAuction(t, 0)
	bid(t, a, "p3", nodes["p3"], job, 300_000)
	bid(t, a, "p4", nodes["p4"], job, 1) // outbids p3, the dearest
	has, err := a.MarketKeeper.Bids.Has(a.Ctx(), collections.Join(job, nodes["p3"]))
	require.NoError(t, err)
	require.False(t, has, "p3's bid is outbid")

	require.Equal(t, markettypes.ErrBidBinding.ABCICode(), withdraw(a, "p4", nodes["p4"], job), "a bid in a full auction is binding")
	r := a.Deliver("p5", &markettypes.MsgPlaceBid{Provider: a.Account("p5").String(), JobId: job, NodeId: nodes["p5"], Price: sdkmath.NewInt(400_000), Quantity: 1})
	require.Equal(t, markettypes.ErrInvalidBid.ABCICode(), r.Code, "the full auction refuses a bid no cheaper than its dearest: %s", r.Log)
	a.AssertInvariants()

	won, prices := closeBidding(t, a, job)
	require.ElementsMatch(t, []uint64{nodes["p4"], nodes["p1"]}, won, "the two cheapest bids win")
	require.Equal(t, []int64{250_000, 250_000}, prices, "paid p2's price, the first losing bid's; not the accomplice's max price")
	a.AssertInvariants()
}

// The attack: p4 takes the last place at 1 udps; p3's honest bid at 300,000 is refused
// (no cheaper than the dearest open bid, p2's); p4 withdraws before the close, and p1 and
// p2 fill both tasks with nothing left over, so both were paid the max price. Now p4
// cannot withdraw from the full auction: it wins a task, and the price is p2's.
func TestAttackSquatThenWithdrawKeepsBiddersOut(t *testing.T) {
	a, nodes, job := bindingAuction(t, 0)
	squat(t, a, nodes, job)
	require.Equal(t, markettypes.ErrBidBinding.ABCICode(), withdraw(a, "p4", nodes["p4"], job), "a bid in a full auction is binding")

	won, prices := closeBidding(t, a, job)
	require.ElementsMatch(t, []uint64{nodes["p4"], nodes["p1"]}, won)
	require.Equal(t, []int64{250_000, 250_000}, prices, "paid the first losing bid's price, not the max price")
	a.AssertInvariants()
}

// The same squat, left by deactivating the node instead: the bid still wins (it sets the
// price), its node cannot take the task, which goes to the scheduler (a drawn node's
// asking price), and p4's deposit came back as a lost bid's. A winner whose node is gone at the close
// now forfeits its deposit to the reward pool, as a winner whose ack lapses does.
func TestAttackSquatThenDeactivateKeepsBiddersOut(t *testing.T) {
	a, nodes, job := bindingAuction(t, 0)
	deposit := markettypes.DefaultParams().BidDeposit.Amount
	pool := func() sdkmath.Int { return a.ModuleBalance(dpstypes.ModuleName, udps) }
	before := a.Balance(a.Account("p4").Address, udps)
	squat(t, a, nodes, job)
	a.MustDeliver("p4", &gfltypes.MsgDeactivateNode{Operator: a.Account("p4").String(), NodeId: nodes["p4"]})
	poolBefore := pool()

	won, prices := closeBidding(t, a, job)
	b, err := a.MarketKeeper.Bids.Get(a.Ctx(), collections.Join(job, nodes["p4"]))
	require.NoError(t, err)
	require.Equal(t, markettypes.BID_STATUS_FORFEITED, b.Status, "the winner whose node left forfeits")
	require.True(t, b.Deposit.IsZero())
	require.Equal(t, before.Sub(deposit), a.Balance(a.Account("p4").Address, udps), "p4 lost its deposit")
	require.Equal(t, poolBefore.Add(deposit), pool(), "the deposit went to the reward pool")
	require.NotContains(t, won, nodes["p4"])
	require.Contains(t, won, nodes["p1"], "p1's bid won the other task")
	require.Contains(t, prices, int64(250_000), "p1 is paid the first losing bid's price")
	a.AssertInvariants()
}

// The same squat by a node whose collateral covers a task at its own 1 udps but not at the
// clearing price: at the close it could not take the task it won, which went to the
// scheduler, and its deposit came back as a lost bid's; it needed no other act. A winner
// whose collateral does not cover a task at the clearing price now takes it at its own
// bid's price, which its bid reserved while open: p4 runs a task for 1 udps, or lapses
// and forfeits. Here result_penalty_multiple is 400: p4's 100 DPS cover a task of
// 1 udps plus the 0.1 DPS tip, not one of 250,000 plus the tip.
func TestAttackSquatWithoutCollateralKeepsBiddersOut(t *testing.T) {
	a, nodes, job := bindingAuction(t, 400)
	squat(t, a, nodes, job)
	a.AssertInvariants()

	paid := paidByNode(closeBidding(t, a, job))
	require.Equal(t, map[uint64]int64{nodes["p1"]: 250_000, nodes["p4"]: 1}, paid,
		"p1 is paid the clearing price, p4 its own bid's price, which its collateral covers")
	a.AssertInvariants()
}

// An open bid reserves its provider's collateral for one task at its price, so that the
// squatter of the last test cannot bid with collateral to spare and unbond it before the
// close, leaving too little to take a task even at its own price (its deposit then came
// back). Here result_penalty_multiple is 1,000: a task of 1 udps plus the 0.1 DPS tip
// reserves 100.001 DPS, more than the 100 DPS that p4's one GPU keeps bonded.
func TestAttackSquatThenUnbondKeepsBiddersOut(t *testing.T) {
	a, nodes, job := bindingAuction(t, 1_000)
	a.MustDeliver("p4", &sstypes.MsgBond{Provider: a.Account("p4").String(), Amount: sdk.NewInt64Coin(udps, 100_000_000)})
	bid(t, a, "p4", nodes["p4"], job, 1)
	exposure := func() sdkmath.Int {
		c, err := a.StakingSlashKeeper.GetCollateral(a.Ctx(), a.Account("p4").Address)
		require.NoError(t, err)
		return c.Exposure
	}
	require.Equal(t, sdkmath.NewInt(100_001_000), exposure(), "the open bid reserves one task at its price")
	r := a.Deliver("p4", &sstypes.MsgUnbond{Provider: a.Account("p4").String(), Amount: sdk.NewInt64Coin(udps, 100_000_000)})
	require.Equal(t, sstypes.ErrExposureLimit.ABCICode(), r.Code, "the reserved collateral cannot be unbonded: %s", r.Log)
	a.AssertInvariants()

	paid := paidByNode(closeBidding(t, a, job))
	require.Equal(t, map[uint64]int64{nodes["p1"]: 250_000, nodes["p4"]: 1}, paid)
	require.Equal(t, sdkmath.NewInt(100_001_000), exposure(), "the reservation is released and the won task reserves its own")
	a.AssertInvariants()
}

// The same squat, left by changing the node so that it no longer fits the job before the
// close: fewer GPUs than a task needs (2-GPU tasks on 2-GPU nodes), another region than
// the job names, or less disk a GPU than the job names. The bid won and set the price,
// and its node either had no room for a task, which went to the scheduler with p4's
// deposit back as a busy winner's, or took the task it no longer fitted. A winner whose
// node no longer fits the job at the close changed it itself since it bid (its load is
// the scheduler's doing; its spec is its own): it now forfeits its deposit, as one whose
// node left does, and its task goes to the scheduler.
func TestAttackSquatThenShrinkKeepsBiddersOut(t *testing.T) {
	for _, c := range []struct {
		name  string
		job   func(*markettypes.JobSpec)
		after func(*gfltypes.NodeSpec)
	}{
		{"fewer GPUs", func(j *markettypes.JobSpec) { j.Requirements.GpuCount = 2 }, func(s *gfltypes.NodeSpec) { s.Gpus = s.Gpus[:1] }},
		{"another region", func(j *markettypes.JobSpec) { j.Requirements.Region = "eu-west" }, func(s *gfltypes.NodeSpec) { s.Region = "us-east" }},
		{"less disk", func(j *markettypes.JobSpec) { j.Requirements.DiskMibPerGpu = 2048 }, func(s *gfltypes.NodeSpec) { s.DiskMibPerGpu = 1024 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, nodes := marketAppLate(t, 5, 0, func(p *markettypes.Params) { p.MaxBidsPerJob = 3 })
			node := func(p string) gfltypes.NodeSpec {
				s := a100(p, 2)
				s.DiskMibPerGpu = 2048
				return s
			}
			for _, p := range []string{"p1", "p2", "p3", "p4", "p5"} {
				a.MustDeliver(p, &sstypes.MsgBond{Provider: a.Account(p).String(), Amount: sdk.NewInt64Coin(udps, 200_000_000)},
					&gfltypes.MsgRegisterNode{Operator: a.Account(p).String(), Spec: node(p)})
				nodes[p] = nodeOf(t, a, p)
			}
			spec := gemmJob(a, 2, markettypes.ALLOCATION_MODE_AUCTION)
			spec.MaxPricePerTask.Amount = sdkmath.NewInt(400_000)
			c.job(&spec)
			job := submit(t, a, spec)
			bid(t, a, "p1", nodes["p1"], job, 200_000)
			bid(t, a, "p2", nodes["p2"], job, 250_000)
			deposit := markettypes.DefaultParams().BidDeposit.Amount
			pool := func() sdkmath.Int { return a.ModuleBalance(dpstypes.ModuleName, udps) }
			before := a.Balance(a.Account("p4").Address, udps)
			squat(t, a, nodes, job)
			changed := node("p4")
			c.after(&changed)
			a.MustDeliver("p4", &gfltypes.MsgUpdateNode{Operator: a.Account("p4").String(), NodeId: nodes["p4"], Spec: changed})
			poolBefore := pool()

			won, prices := closeBidding(t, a, job)
			b, err := a.MarketKeeper.Bids.Get(a.Ctx(), collections.Join(job, nodes["p4"]))
			require.NoError(t, err)
			require.Equal(t, markettypes.BID_STATUS_FORFEITED, b.Status, "the winner that changed its node forfeits")
			require.Equal(t, before.Sub(deposit), a.Balance(a.Account("p4").Address, udps), "p4 lost its deposit")
			require.Equal(t, poolBefore.Add(deposit), pool(), "the deposit went to the reward pool")
			require.NotContains(t, won, nodes["p4"])
			require.Contains(t, won, nodes["p1"], "p1's bid won the other task")
			require.Contains(t, prices, int64(250_000), "p1 is paid the first losing bid's price")
			for _, tk := range jobTasks(t, a, job) {
				require.NotEqual(t, nodes["p4"], tk.NodeId, "no task on the node that no longer fits")
			}
			a.AssertInvariants()
		})
	}
}

// The same on a node with MIG: p4 squats an auction of whole-GPU tasks with one card
// whole and one in MIG mode, then carves the whole card into instances before the close.
// Its node still counts more devices than a task needs, but none of the task's shape: it
// forfeits, as a node too small does.
func TestAttackSquatThenCarveMIGKeepsBiddersOut(t *testing.T) {
	a, nodes := marketAppLate(t, 5, 3, func(p *markettypes.Params) { p.MaxBidsPerJob = 3 })
	carved := func(wholeCards int) gfltypes.NodeSpec {
		s := a100("p4", 2)
		for i := range s.Gpus[wholeCards:] {
			g := &s.Gpus[wholeCards+i]
			g.MigCapable, g.MigSlices = true, 7
			g.MigInstances = []gfltypes.MigInstance{
				{Uuid: g.Uuid + "-mig-0", MemoryMib: 19968, Slices: 3}, {Uuid: g.Uuid + "-mig-1", MemoryMib: 19968, Slices: 3},
			}
		}
		return s
	}
	p4 := a.Account("p4").String()
	a.MustDeliver("p4", &sstypes.MsgBond{Provider: p4, Amount: sdk.NewInt64Coin(udps, 200_000_000)},
		&gfltypes.MsgRegisterNode{Operator: p4, Spec: carved(1)})
	nodes["p4"] = nodeOf(t, a, "p4")
	spec := gemmJob(a, 2, markettypes.ALLOCATION_MODE_AUCTION)
	spec.MaxPricePerTask.Amount = sdkmath.NewInt(400_000)
	job := submit(t, a, spec)
	bid(t, a, "p1", nodes["p1"], job, 200_000)
	bid(t, a, "p2", nodes["p2"], job, 250_000)
	squat(t, a, nodes, job)
	a.MustDeliver("p4", &gfltypes.MsgUpdateNode{Operator: p4, NodeId: nodes["p4"], Spec: carved(0)})

	won, _ := closeBidding(t, a, job)
	b, err := a.MarketKeeper.Bids.Get(a.Ctx(), collections.Join(job, nodes["p4"]))
	require.NoError(t, err)
	require.Equal(t, markettypes.BID_STATUS_FORFEITED, b.Status, "no whole GPU left: it forfeits")
	require.NotContains(t, won, nodes["p4"])
	a.AssertInvariants()
}
