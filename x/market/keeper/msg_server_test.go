package keeper_test

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/flopsnet/flops/internal/validate"
	"github.com/flopsnet/flops/testutil/keepertest"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/keeper"
	"github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// badAddresses are signers the market must refuse with ErrInvalidAddress: not bech32,
// bech32 of another chain, empty, a broken checksum, mixed case.
var badAddresses = func() []struct{ name, addr string } {
	good := keepertest.Addr("x")
	last := byte('q')
	if good[len(good)-1] == 'q' {
		last = 'p'
	}
	return []struct{ name, addr string }{
		{"not bech32", "not-an-address"},
		{"other prefix", sdk.MustBech32ifyAddressBytes("cosmos", sdk.MustAccAddressFromBech32(good))},
		{"empty", ""},
		{"bad checksum", good[:len(good)-1] + string(last)},
		{"mixed case", strings.ToUpper(good[:8]) + good[8:]},
	}
}()

// ---------------------------------------------------------------- SubmitJob

// A submission moves the whole budget (every replica's max price and tip) into escrow,
// creates one task per replica with consecutive ids per shard, queues them for the
// scheduler, and announces the job.
func TestSubmitJob(t *testing.T) {
	f := newFixture(t, nil)
	spec := f.gemmSpec(3)
	spec.Replicas = 2
	res, err := f.ms.SubmitJob(f.ctx, &types.MsgSubmitJob{Owner: f.client, Spec: spec})
	require.NoError(t, err)
	// 3 tasks x 2 replicas x (5 DPS + 0.1 DPS tip) = 30.6 DPS
	budget := sdkmath.NewInt(30_600_000)
	require.Equal(t, budget, res.Escrow)
	require.Equal(t, clientFunds.Sub(budget), f.balance(f.client))
	require.Equal(t, budget, f.escrow())
	require.True(t, f.hasEvent("EventJobSubmitted"))

	job := f.job(res.JobId)
	require.Equal(t, types.JOB_STATUS_ACTIVE, job.Status)
	require.Equal(t, budget, job.Escrow)
	require.Len(t, job.GemmSeed, 32, "a gemm job gets its seed at submission")
	tasks := f.tasks(res.JobId)
	require.Len(t, tasks, 6)
	for i, task := range tasks {
		require.Equal(t, types.TASK_STATUS_PENDING, task.Status)
		require.Equal(t, uint32(i/2), task.Index)
		require.Equal(t, uint32(i%2), task.Replica)
		require.Equal(t, tasks[0].Id+uint64(i), task.Id, "a shard's replicas have consecutive ids")
		require.True(t, f.queued(task.Id))
	}
	f.assertInvariants()
}

// An AUCTION job waits for bids until its close height; its tasks are not queued.
func TestSubmitAuctionJob(t *testing.T) {
	f := newFixture(t, nil)
	spec := f.gemmSpec(2)
	spec.Mode = types.ALLOCATION_MODE_AUCTION
	id := f.submit(spec)
	job := f.job(id)
	require.Equal(t, types.JOB_STATUS_BIDDING, job.Status)
	require.Equal(t, f.ctx.BlockHeight()+int64(f.params().AuctionWindowBlocks), job.AuctionCloseHeight)
	for _, task := range f.tasks(id) {
		require.False(t, f.queued(task.Id))
	}
	f.assertInvariants()
}

// An owner holding exactly the budget may submit and is left with nothing.
func TestSubmitJobExactFunds(t *testing.T) {
	f := newFixture(t, nil)
	owner := keepertest.Addr("exact")
	spec := f.gemmSpec(2)
	f.fund(owner, spec.Budget())
	f.submitAs(owner, spec)
	require.True(t, f.balance(owner).IsZero())
	f.assertInvariants()
}

func TestSubmitJobRejects(t *testing.T) {
	f := newFixture(t, nil)
	short := keepertest.Addr("short")
	f.fund(short, f.gemmSpec(1).Budget().SubRaw(1))
	cases := []struct {
		name  string
		owner string
		edit  func(s *types.JobSpec)
		err   error
	}{
		// The spec is checked field by field in types/spec_test.go; one case proves the
		// handler calls it.
		{"invalid spec", f.client, func(s *types.JobSpec) { s.TaskCount = 0 }, types.ErrInvalidJobSpec},
		// The deadline is checked against the block time.
		{"deadline already past", f.client, func(s *types.JobSpec) { s.Deadline = f.ctx.BlockTime().Add(-time.Hour) }, types.ErrInvalidJobSpec},
		{"deadline sooner than one task's duration", f.client, func(s *types.JobSpec) { s.Deadline = f.ctx.BlockTime().Add(s.MaxDuration - time.Second) }, types.ErrInvalidJobSpec},
		// One udps short of the budget.
		{"insufficient funds", short, nil, types.ErrInsufficientFunds},
		{"owner without funds", keepertest.Addr("nobody"), nil, types.ErrInsufficientFunds},
		// The budget counts every replica, not only the tasks.
		{"funds for the tasks but not the replicas", short, func(s *types.JobSpec) {
			s.TaskCount, s.Replicas = 1, 2
		}, types.ErrInsufficientFunds},
	}
	for _, bad := range badAddresses {
		name, addr := bad.name, bad.addr
		cases = append(cases, struct {
			name  string
			owner string
			edit  func(s *types.JobSpec)
			err   error
		}{"owner address: " + name, addr, nil, types.ErrInvalidAddress})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := f.gemmSpec(1)
			if tc.edit != nil {
				tc.edit(&spec)
			}
			f.requireRejected(tc.err, func(ctx sdk.Context) error {
				_, err := f.ms.SubmitJob(ctx, &types.MsgSubmitJob{Owner: tc.owner, Spec: spec})
				return err
			})
		})
	}
}

// A price and tip whose budget would overflow 256 bits (max_price_per_task + tip, times
// the replicas) are refused with ErrInvalidJobSpec: nothing panics in a handler
// (DESIGN.md section 7), and the largest accepted amounts give a computable budget.
func TestSubmitJobHugePriceIsRefusedWithoutPanic(t *testing.T) {
	f := newFixture(t, nil)
	spec := f.gemmSpec(2)
	huge, ok := sdkmath.NewIntFromString("57896044618658097711785492504343953926634992332820282019728792003956564819967") // 2^255 - 1
	require.True(t, ok)
	spec.MaxPricePerTask = sdk.NewCoin(udps, huge)
	spec.PriorityTip = sdk.NewCoin(udps, huge)
	require.ErrorIs(t, spec.Validate(f.params(), f.ctx.BlockTime()), types.ErrInvalidJobSpec)
	var err error
	require.NotPanics(t, func() {
		err = f.tx(func(ctx sdk.Context) error {
			_, err := f.ms.SubmitJob(ctx, &types.MsgSubmitJob{Owner: f.client, Spec: spec})
			return err
		})
	})
	require.ErrorIs(t, err, types.ErrInvalidJobSpec)

	spec.MaxPricePerTask = sdk.NewCoin(udps, types.MaxAmount)
	spec.PriorityTip = sdk.NewCoin(udps, types.MaxAmount)
	spec.TaskCount, spec.Replicas = f.params().MaxTasksPerJob, f.params().MaxReplicas
	require.NoError(t, spec.Validate(f.params(), f.ctx.BlockTime()))
	require.NotPanics(t, func() { spec.Budget() })
}

// ---------------------------------------------------------------- CancelJob

// Cancelling a job whose tasks have not started refunds the whole budget at once, ends
// the job and releases the node and the provider's exposure of an assigned task.
func TestCancelJob(t *testing.T) {
	f := newFixture(t, nil)
	f.addNode(f.operator("p1"), 8, nil)
	spec := f.gemmSpec(2)
	id := f.submit(spec)
	f.blocks(1)
	tasks := f.tasks(id)
	require.Equal(t, types.TASK_STATUS_ASSIGNED, tasks[0].Status)
	f.assertInvariants()

	res, err := f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: id})
	require.NoError(t, err)
	require.Equal(t, spec.Budget(), res.Refunded)
	require.Equal(t, clientFunds, f.balance(f.client))
	require.True(t, f.escrow().IsZero())
	job := f.job(id)
	require.Equal(t, types.JOB_STATUS_CANCELLED, job.Status)
	require.NotZero(t, job.FinishedHeight)
	for _, task := range f.tasks(id) {
		require.Equal(t, types.TASK_STATUS_CANCELLED, task.Status)
		require.False(t, f.queued(task.Id))
	}
	require.Zero(t, f.slot(tasks[0].NodeId).GpusUsed)
	require.True(t, f.hasEvent("EventJobFinished"))
	f.assertInvariants()
	// nothing is assigned later
	f.blocks(2)
	for _, task := range f.tasks(id) {
		require.Equal(t, types.TASK_STATUS_CANCELLED, task.Status)
	}
}

// Cancelling an auction returns every open bid's deposit and drops the close.
func TestCancelAuctionJobReturnsBids(t *testing.T) {
	f := newFixture(t, nil)
	op := f.operator("p1")
	node := f.addNode(op, 8, nil)
	spec := f.gemmSpec(1)
	spec.Mode = types.ALLOCATION_MODE_AUCTION
	id := f.submit(spec)
	opBefore := f.balance(op)
	_, err := f.ms.PlaceBid(f.ctx, &types.MsgPlaceBid{Provider: op, JobId: id, NodeId: node, Price: sdkmath.NewInt(100_000), Quantity: 1})
	require.NoError(t, err)
	require.Equal(t, opBefore.Sub(f.params().BidDeposit.Amount), f.balance(op))

	_, err = f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: id})
	require.NoError(t, err)
	require.Equal(t, opBefore, f.balance(op))
	b, err := f.k.Bids.Get(f.ctx, collections.Join(id, node))
	require.NoError(t, err)
	require.Equal(t, types.BID_STATUS_WITHDRAWN, b.Status)
	require.True(t, f.escrow().IsZero())
	f.assertInvariants()
	// the close height passes without effect
	f.blocks(int(f.params().AuctionWindowBlocks) + 1)
	require.Equal(t, types.JOB_STATUS_CANCELLED, f.job(id).Status)
	f.assertInvariants()
}

func TestCancelJobRejects(t *testing.T) {
	f := newFixture(t, nil)
	active := f.submit(f.unplaceable())
	cancelled := f.submit(f.unplaceable())
	_, err := f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: cancelled})
	require.NoError(t, err)
	// a completed job: run it to settlement
	task := f.runningTask("p1")
	f.blocks(1)
	f.commit(task)
	f.blocks(1)
	f.reveal(task)
	// settled at the end of the block challenge_window_blocks after the reveal
	f.blocks(int(f.params().ChallengeWindowBlocks) + 1)
	completed := task.JobId
	require.Equal(t, types.JOB_STATUS_COMPLETED, f.job(completed).Status)

	cases := []struct {
		name  string
		owner string
		job   uint64
		err   error
	}{
		{"unknown job", f.client, 999, types.ErrJobNotFound},
		{"not the owner", keepertest.Addr("mallory"), active, types.ErrNotOwner},
		{"the job's provider is not its owner", task.Provider, completed, types.ErrNotOwner},
		{"already cancelled", f.client, cancelled, types.ErrInvalidJobStatus},
		{"completed", f.client, completed, types.ErrInvalidJobStatus},
	}
	for _, bad := range badAddresses {
		name, addr := bad.name, bad.addr
		cases = append(cases, struct {
			name  string
			owner string
			job   uint64
			err   error
		}{"owner address: " + name, addr, active, types.ErrInvalidAddress})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.requireRejected(tc.err, func(ctx sdk.Context) error {
				_, err := f.ms.CancelJob(ctx, &types.MsgCancelJob{Owner: tc.owner, JobId: tc.job})
				return err
			})
		})
	}
}

// ---------------------------------------------------------------- PlaceBid / WithdrawBid

// auctionFixture: an AUCTION job of 2 tasks (max 5 DPS) and one eligible node per name.
func auctionFixture(t *testing.T, names ...string) (*fixture, uint64, map[string]uint64) {
	f := newFixture(t, nil)
	nodes := map[string]uint64{}
	for _, n := range names {
		nodes[n] = f.addNode(f.operator(n), 8, nil)
	}
	spec := f.gemmSpec(2)
	spec.Mode = types.ALLOCATION_MODE_AUCTION
	return f, f.submit(spec), nodes
}

// A bid locks the deposit and is recorded open; a zero quantity means one task.
func TestPlaceBid(t *testing.T) {
	f, job, nodes := auctionFixture(t, "p1")
	op := keepertest.Addr("p1")
	before := f.balance(op)
	_, err := f.ms.PlaceBid(f.ctx, &types.MsgPlaceBid{Provider: op, JobId: job, NodeId: nodes["p1"], Price: sdkmath.NewInt(5_000_000)})
	require.NoError(t, err, "a bid at exactly the max price is allowed")
	deposit := f.params().BidDeposit.Amount
	require.Equal(t, before.Sub(deposit), f.balance(op))
	b, err := f.k.Bids.Get(f.ctx, collections.Join(job, nodes["p1"]))
	require.NoError(t, err)
	require.Equal(t, types.BID_STATUS_OPEN, b.Status)
	require.Equal(t, uint32(1), b.Quantity)
	require.Equal(t, deposit, b.Deposit)
	require.True(t, f.hasEvent("EventBid"))
	f.assertInvariants()
}

func TestPlaceBidRejects(t *testing.T) {
	f := newFixture(t, nil)
	nodes := map[string]uint64{}
	for _, n := range []string{"p1", "p2", "jailed", "lowrep", "inactive", "tiny", "wrongregion", "onegpu"} {
		nodes[n] = f.addNode(f.operator(n), 8, nil)
	}
	// poor has collateral but nothing in its account for the deposit
	poor := keepertest.Addr("poor")
	f.coll.bond(poor, sdkmath.NewInt(1_000_000_000_000))
	nodes["poor"] = f.addNode(poor, 8, nil)
	// the client runs a node of its own
	f.coll.bond(f.client, sdkmath.NewInt(1_000_000_000_000))
	nodes["client"] = f.addNode(f.client, 8, nil)
	auction := func(edit func(s *types.JobSpec)) uint64 {
		s := f.gemmSpec(2)
		s.Mode = types.ALLOCATION_MODE_AUCTION
		s.Requirements.Region = "eu-west"
		if edit != nil {
			edit(&s)
		}
		return f.submit(s)
	}
	// an auction that closed: p2 won one of its tasks
	closed := auction(nil)
	_, err := f.ms.PlaceBid(f.ctx, &types.MsgPlaceBid{Provider: keepertest.Addr("p2"), JobId: closed, NodeId: nodes["p2"], Price: sdkmath.NewInt(1_000_000), Quantity: 1})
	require.NoError(t, err)
	// cleared at the end of the block auction_window_blocks after the submission
	f.blocks(int(f.params().AuctionWindowBlocks) + 1)
	require.Equal(t, types.JOB_STATUS_ACTIVE, f.job(closed).Status)
	cancelled := auction(nil)
	_, err = f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: cancelled})
	require.NoError(t, err)
	assignJob := f.submit(f.unplaceable())
	job := auction(nil)
	twoGPUs := auction(func(s *types.JobSpec) { s.Requirements.GpuCount = 2 })
	bigDisk := auction(func(s *types.JobSpec) { s.Requirements.DiskMibPerGpu = 1 << 20 })
	_, err = f.ms.PlaceBid(f.ctx, &types.MsgPlaceBid{Provider: keepertest.Addr("p1"), JobId: job, NodeId: nodes["p1"], Price: sdkmath.NewInt(1_000_000), Quantity: 1})
	require.NoError(t, err)
	f.coll.jail(keepertest.Addr("jailed"))
	f.rep.ineligible[nodes["lowrep"]] = true
	f.updateNode(nodes["inactive"], func(n *gfltypes.Node) { n.Status = gfltypes.NODE_STATUS_INACTIVE })
	f.updateNode(nodes["wrongregion"], func(n *gfltypes.Node) { n.Region = "us-east" })
	f.updateNode(nodes["onegpu"], func(n *gfltypes.Node) { n.Gpus = n.Gpus[:1] })
	f.coll.bond(keepertest.Addr("tiny"), sdkmath.NewInt(999_999))

	price := sdkmath.NewInt(1_000_000)
	bid := func(name string, jobID uint64, node uint64, price sdkmath.Int, qty uint32) *types.MsgPlaceBid {
		addr := keepertest.Addr(name)
		if name == "client" {
			addr = f.client
		}
		return &types.MsgPlaceBid{Provider: addr, JobId: jobID, NodeId: node, Price: price, Quantity: qty}
	}
	cases := []struct {
		name string
		msg  *types.MsgPlaceBid
		err  error
	}{
		{"unknown job", bid("p2", 999, nodes["p2"], price, 1), types.ErrJobNotFound},
		{"ASSIGN job", bid("p2", assignJob, nodes["p2"], price, 1), types.ErrNotAuction},
		{"auction closed", bid("p2", closed, nodes["p2"], price, 1), types.ErrNotAuction},
		{"auction cancelled", bid("p2", cancelled, nodes["p2"], price, 1), types.ErrNotAuction},
		{"price zero", bid("p2", job, nodes["p2"], sdkmath.ZeroInt(), 1), types.ErrInvalidBid},
		{"price negative", bid("p2", job, nodes["p2"], sdkmath.NewInt(-1), 1), types.ErrInvalidBid},
		{"price unset", bid("p2", job, nodes["p2"], sdkmath.Int{}, 1), types.ErrInvalidBid},
		{"price above the max price", bid("p2", job, nodes["p2"], sdkmath.NewInt(5_000_001), 1), types.ErrInvalidBid},
		{"quantity above the job's tasks", bid("p2", job, nodes["p2"], price, 3), types.ErrInvalidBid},
		{"unknown node", bid("p2", job, 999, price, 1), types.ErrNodeUnknown},
		{"not the node's operator", bid("p2", job, nodes["p1"], price, 1), types.ErrNotProvider},
		{"duplicate bid", bid("p1", job, nodes["p1"], sdkmath.NewInt(1), 1), types.ErrDuplicateBid},
		{"owner-operated node", bid("client", job, nodes["client"], price, 1), types.ErrNodeNotEligible},
		{"jailed operator", bid("jailed", job, nodes["jailed"], price, 1), types.ErrNodeNotEligible},
		{"reputation not eligible", bid("lowrep", job, nodes["lowrep"], price, 1), types.ErrNodeNotEligible},
		{"inactive node", bid("inactive", job, nodes["inactive"], price, 1), types.ErrNodeNotEligible},
		{"requirements: region", bid("wrongregion", job, nodes["wrongregion"], price, 1), types.ErrNodeNotEligible},
		{"requirements: GPUs", bid("onegpu", twoGPUs, nodes["onegpu"], price, 1), types.ErrNodeNotEligible},
		{"requirements: disk not offered", bid("p2", bigDisk, nodes["p2"], price, 1), types.ErrNodeNotEligible},
		{"collateral does not cover the price", bid("tiny", job, nodes["tiny"], price, 1), types.ErrNodeNotEligible},
		{"deposit not affordable", bid("poor", job, nodes["poor"], price, 1), types.ErrInsufficientFunds},
	}
	for _, bad := range badAddresses {
		m := bid("p2", job, nodes["p2"], price, 1)
		m.Provider = bad.addr
		cases = append(cases, struct {
			name string
			msg  *types.MsgPlaceBid
			err  error
		}{"provider address: " + bad.name, m, types.ErrInvalidAddress})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.requireRejected(tc.err, func(ctx sdk.Context) error {
				_, err := f.ms.PlaceBid(ctx, tc.msg)
				return err
			})
		})
	}
	// the cheapest possible valid bid from p2 is accepted after all that
	_, err = f.ms.PlaceBid(f.ctx, bid("p2", job, nodes["p2"], sdkmath.NewInt(1), 2))
	require.NoError(t, err)
	f.assertInvariants()
}

// Withdrawing an open bid returns its deposit and deletes the bid, freeing its place in the
// auction (a withdrawn bid kept would hold one: TestAttackWithdrawnBidsFillTheAuction); an
// event says so (bids write nothing into the job's history:
// TestAttackBidsFillTheJobsHistory), and the node may bid again.
func TestWithdrawBid(t *testing.T) {
	f, job, nodes := auctionFixture(t, "p1")
	op := keepertest.Addr("p1")
	before := f.balance(op)
	place := &types.MsgPlaceBid{Provider: op, JobId: job, NodeId: nodes["p1"], Price: sdkmath.NewInt(1_000_000), Quantity: 1}
	_, err := f.ms.PlaceBid(f.ctx, place)
	require.NoError(t, err)
	_, err = f.ms.WithdrawBid(f.ctx, &types.MsgWithdrawBid{Provider: op, JobId: job, NodeId: nodes["p1"]})
	require.NoError(t, err)
	require.Equal(t, before, f.balance(op))
	has, err := f.k.Bids.Has(f.ctx, collections.Join(job, nodes["p1"]))
	require.NoError(t, err)
	require.False(t, has, "the withdrawn bid is deleted")
	require.True(t, f.hasEvent("EventBid"))
	f.assertInvariants()
	_, err = f.ms.PlaceBid(f.ctx, place)
	require.NoError(t, err, "the node bids again")
	require.Equal(t, before.Sub(f.params().BidDeposit.Amount), f.balance(op))
	f.assertInvariants()
}

// An auction that closes without a valid bid (none placed, all withdrawn, or every bidder
// fallen below the minimum reputation) hands its tasks to the scheduler, as auction.go
// says: "tasks nobody won go to the scheduler's queue".
func TestAuctionWithoutBidsFallsBackToScheduler(t *testing.T) {
	f := newFixture(t, nil)
	op := f.operator("p1")
	node := f.addNode(op, 8, nil)
	spec := f.gemmSpec(1)
	spec.Mode = types.ALLOCATION_MODE_AUCTION
	noBids := f.submit(spec)
	withdrawn := f.submit(spec)
	_, err := f.ms.PlaceBid(f.ctx, &types.MsgPlaceBid{Provider: op, JobId: withdrawn, NodeId: node, Price: sdkmath.NewInt(1_000_000), Quantity: 1})
	require.NoError(t, err)
	_, err = f.ms.WithdrawBid(f.ctx, &types.MsgWithdrawBid{Provider: op, JobId: withdrawn, NodeId: node})
	require.NoError(t, err)
	f.blocks(int(f.params().AuctionWindowBlocks) + 1)
	for _, id := range []uint64{noBids, withdrawn} {
		job := f.job(id)
		require.Equal(t, types.JOB_STATUS_ACTIVE, job.Status, "job %d closed", id)
		require.True(t, job.ClearingPrice.IsZero())
		task := f.tasks(id)[0]
		require.Equal(t, types.TASK_STATUS_ASSIGNED, task.Status, "job %d: the scheduler took the task", id)
		require.Equal(t, quote10m, task.Price, "at the node's quote")
	}
	f.assertInvariants()
}

func TestWithdrawBidRejects(t *testing.T) {
	f, job, nodes := auctionFixture(t, "p1", "p2", "p3")
	place := func(name string, jobID uint64, price int64) {
		_, err := f.ms.PlaceBid(f.ctx, &types.MsgPlaceBid{Provider: keepertest.Addr(name), JobId: jobID, NodeId: nodes[name], Price: sdkmath.NewInt(price), Quantity: 1})
		require.NoError(t, err)
	}
	withdraw := func(name string, jobID, node uint64) *types.MsgWithdrawBid {
		return &types.MsgWithdrawBid{Provider: keepertest.Addr(name), JobId: jobID, NodeId: node}
	}
	place("p1", job, 100_000)
	place("p2", job, 200_000)
	place("p3", job, 300_000)
	// close the auction: p1 and p2 win the two tasks, p3 loses
	for f.job(job).Status == types.JOB_STATUS_BIDDING {
		f.blocks(1)
	}
	bidStatus := func(node uint64) types.BidStatus {
		b, err := f.k.Bids.Get(f.ctx, collections.Join(job, node))
		require.NoError(t, err)
		return b.Status
	}
	require.Equal(t, types.BID_STATUS_WON, bidStatus(nodes["p1"]))
	require.Equal(t, types.BID_STATUS_LOST, bidStatus(nodes["p3"]))
	// a second auction: p1's bid open, p2's withdrawn
	spec := f.gemmSpec(1)
	spec.Mode = types.ALLOCATION_MODE_AUCTION
	open := f.submit(spec)
	place("p1", open, 1)
	place("p2", open, 1)
	_, err := f.ms.WithdrawBid(f.ctx, withdraw("p2", open, nodes["p2"]))
	require.NoError(t, err)

	cases := []struct {
		name string
		msg  *types.MsgWithdrawBid
		err  error
	}{
		{"unknown job", withdraw("p1", 999, nodes["p1"]), types.ErrBidNotFound},
		{"node never bid", withdraw("p3", open, nodes["p3"]), types.ErrBidNotFound},
		{"unknown node", withdraw("p1", open, 999), types.ErrBidNotFound},
		{"not the bid's provider", withdraw("p3", open, nodes["p1"]), types.ErrNotProvider},
		{"the job's owner", &types.MsgWithdrawBid{Provider: f.client, JobId: open, NodeId: nodes["p1"]}, types.ErrNotProvider},
		{"already withdrawn", withdraw("p2", open, nodes["p2"]), types.ErrBidNotFound},
		{"won", withdraw("p1", job, nodes["p1"]), types.ErrInvalidBid},
		{"lost", withdraw("p3", job, nodes["p3"]), types.ErrInvalidBid},
	}
	for _, bad := range badAddresses {
		m := withdraw("p1", open, nodes["p1"])
		m.Provider = bad.addr
		cases = append(cases, struct {
			name string
			msg  *types.MsgWithdrawBid
			err  error
		}{"provider address: " + bad.name, m, types.ErrInvalidAddress})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.requireRejected(tc.err, func(ctx sdk.Context) error {
				_, err := f.ms.WithdrawBid(ctx, tc.msg)
				return err
			})
		})
	}
	f.assertInvariants()
}

// ---------------------------------------------------------------- AckTask

// An ack starts the task: its run deadline is ack + max_duration, the node's heartbeat
// clock starts, x/reputation hears of an on-time ack.
func TestAckTask(t *testing.T) {
	f := newFixture(t, nil)
	task := f.assignedTask("p1")
	require.Equal(t, quote10m, task.Price)
	// the task reserves (price + tip) x result_penalty_multiple of the provider's collateral
	job := f.job(task.JobId)
	reserved := quote10m.Add(job.Spec.PriorityTip.Amount).MulRaw(int64(f.params().ResultPenaltyMultiple))
	require.Equal(t, reserved, task.Exposure)
	require.Equal(t, reserved, f.coll.exp(task.Provider))
	_, err := f.ms.AckTask(f.ctx, &types.MsgAckTask{Provider: task.Provider, TaskId: task.Id})
	require.NoError(t, err)
	got := f.task(task.Id)
	require.Equal(t, types.TASK_STATUS_RUNNING, got.Status)
	require.Equal(t, f.ctx.BlockTime(), got.StartedTime)
	require.Equal(t, f.ctx.BlockTime().Add(10*time.Minute), got.RunDeadline)
	hb, err := f.k.Heartbeats.Get(f.ctx, task.NodeId)
	require.NoError(t, err)
	require.Equal(t, f.ctx.BlockHeight()+int64(f.params().HeartbeatTimeoutBlocks), hb)
	require.Equal(t, []uint64{task.NodeId}, f.hooks.acked)
	require.Equal(t, []bool{true}, f.hooks.onTime)
	require.True(t, f.hasEvent("EventTaskStatus"))
	f.assertInvariants()
}

// A task acked close to its job's deadline runs until the deadline, not beyond.
func TestAckTaskRunDeadlineCappedByJobDeadline(t *testing.T) {
	f := newFixture(t, nil)
	f.addNode(f.operator("p1"), 8, nil)
	spec := f.gemmSpec(1)
	spec.Deadline = f.ctx.BlockTime().Add(spec.MaxDuration + 5*time.Second)
	id := f.submit(spec)
	f.blocks(10)
	task := f.tasks(id)[0]
	f.ack(task)
	require.Equal(t, spec.Deadline, f.task(task.Id).RunDeadline, "acked 10 s after the submission, 5 s of slack")
}

func TestAckTaskRejects(t *testing.T) {
	f := newFixture(t, nil)
	assigned := f.assignedTask("p1")
	running := f.runningTask("p2")
	committed := f.committedTask("p3")
	pending := f.tasks(f.submit(f.unplaceable()))[0]
	cancelledJob := f.assignedTask("p4")
	_, err := f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: cancelledJob.JobId})
	require.NoError(t, err)

	ack := func(provider string, id uint64) *types.MsgAckTask {
		return &types.MsgAckTask{Provider: provider, TaskId: id}
	}
	cases := []struct {
		name string
		msg  *types.MsgAckTask
		err  error
	}{
		{"unknown task", ack(assigned.Provider, 999), types.ErrTaskNotFound},
		{"another provider", ack(running.Provider, assigned.Id), types.ErrNotProvider},
		{"the job's owner", ack(f.client, assigned.Id), types.ErrNotProvider},
		{"pending task", ack(assigned.Provider, pending.Id), types.ErrNotProvider},
		{"already running", ack(running.Provider, running.Id), types.ErrInvalidTaskStatus},
		{"committed", ack(committed.Provider, committed.Id), types.ErrInvalidTaskStatus},
		{"cancelled", ack(cancelledJob.Provider, cancelledJob.Id), types.ErrInvalidTaskStatus},
	}
	for _, bad := range badAddresses {
		name, addr := bad.name, bad.addr
		cases = append(cases, struct {
			name string
			msg  *types.MsgAckTask
			err  error
		}{"provider address: " + name, ack(addr, assigned.Id), types.ErrInvalidAddress})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.requireRejected(tc.err, func(ctx sdk.Context) error {
				_, err := f.ms.AckTask(ctx, tc.msg)
				return err
			})
		})
	}
	f.assertInvariants()
}

// An assigned task nobody acks within ack_timeout_blocks lapses: the provider is slashed
// (burned) and the task returns to the queue, never to that node.
func TestAckTimeoutLapses(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.AckTimeoutBlocks = 3 })
	task := f.assignedTask("p1")
	f.blocks(3)
	got := f.task(task.Id)
	require.Equal(t, types.TASK_STATUS_PENDING, got.Status)
	require.Equal(t, []uint64{task.NodeId}, got.ExcludedNodes)
	require.Equal(t, uint32(1), got.Reassignments)
	require.Len(t, f.coll.slashes, 1)
	s := f.coll.slashes[0]
	require.Equal(t, task.Provider, s.provider)
	require.Equal(t, f.abandonPPM(task), s.ppm, "2x the task's value: less than abandon_slash_ppm of this 1,000,000 DPS bond")
	require.Less(t, s.ppm, f.params().AbandonSlashPpm)
	require.Equal(t, sstypes.SLASH_REASON_ABANDONED_TASK, s.reason)
	require.Empty(t, s.owner, "burned: a job can make its provider abandon it, so its owner is not paid for that")
	require.Equal(t, task.Id, s.evidence.TaskId)
	require.Equal(t, []uint64{task.NodeId}, f.hooks.lapsed)
	require.True(t, f.coll.exp(task.Provider).IsZero())
	f.assertInvariants()
}

// ---------------------------------------------------------------- ReleaseTask

// A provider gives back an assigned task and a running one: each lapses at once, as at its
// ack or heartbeat deadline (TestAckTimeoutLapses): slashed abandon_slash_ppm (at most 2x
// the task's value), burned, the lapse hook, back to the queue never to that node, the
// reason in the task's history.
func TestReleaseTask(t *testing.T) {
	for _, running := range []bool{false, true} {
		t.Run(fmt.Sprintf("running=%v", running), func(t *testing.T) {
			f := newFixture(t, nil)
			task := f.assignedTask("p1")
			if running {
				task = f.runningTask("p2")
			}
			_, err := f.ms.ReleaseTask(f.ctx, &types.MsgReleaseTask{Provider: task.Provider, TaskId: task.Id, Reason: "GPU 3 fell off the bus"})
			require.NoError(t, err)
			got := f.task(task.Id)
			require.Equal(t, types.TASK_STATUS_PENDING, got.Status)
			require.Equal(t, []uint64{task.NodeId}, got.ExcludedNodes)
			require.Equal(t, uint32(1), got.Reassignments)
			require.Empty(t, got.Provider)
			require.Len(t, f.coll.slashes, 1)
			s := f.coll.slashes[0]
			require.Equal(t, task.Provider, s.provider)
			require.Equal(t, f.abandonPPM(task), s.ppm, "as a lapse: at most 2x the task's value")
			require.Equal(t, sstypes.SLASH_REASON_ABANDONED_TASK, s.reason)
			require.Empty(t, s.owner)
			require.Equal(t, []uint64{task.NodeId}, f.hooks.lapsed)
			require.True(t, f.coll.exp(task.Provider).IsZero())
			require.True(t, f.hasEvent("EventTaskReassigned"))
			hist, err := keeper.NewQueryServerImpl(f.k).JobHistory(f.ctx, &types.QueryJobHistoryRequest{JobId: task.JobId})
			require.NoError(t, err)
			last := hist.Entries[len(hist.Entries)-1]
			require.Contains(t, last.Detail, "released by its provider: GPU 3 fell off the bus")
			f.assertInvariants()
		})
	}
}

func TestReleaseTaskRejects(t *testing.T) {
	f := newFixture(t, nil)
	assigned := f.assignedTask("p1")
	running := f.runningTask("p2")
	committed := f.committedTask("p3")
	pending := f.tasks(f.submit(f.unplaceable()))[0]
	release := func(provider string, id uint64, reason string) *types.MsgReleaseTask {
		return &types.MsgReleaseTask{Provider: provider, TaskId: id, Reason: reason}
	}
	cases := []struct {
		name string
		msg  *types.MsgReleaseTask
		err  error
	}{
		{"unknown task", release(assigned.Provider, 999, ""), types.ErrTaskNotFound},
		{"another provider", release(running.Provider, assigned.Id, ""), types.ErrNotProvider},
		{"the job's owner", release(f.client, assigned.Id, ""), types.ErrNotProvider},
		{"pending task", release(assigned.Provider, pending.Id, ""), types.ErrNotProvider},
		// once committed, a lapse costs a missed reveal's slash: no release out of it
		{"committed", release(committed.Provider, committed.Id, ""), types.ErrInvalidTaskStatus},
		{"reason too long", release(assigned.Provider, assigned.Id, strings.Repeat("x", types.MaxFailureDetailLen+1)), validate.ErrTooLarge},
		{"reason on two lines", release(assigned.Provider, assigned.Id, "GPU\nlost"), types.ErrInvalidRelease},
	}
	for _, bad := range badAddresses {
		cases = append(cases, struct {
			name string
			msg  *types.MsgReleaseTask
			err  error
		}{"provider address: " + bad.name, release(bad.addr, assigned.Id, ""), types.ErrInvalidAddress})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.requireRejected(tc.err, func(ctx sdk.Context) error {
				_, err := f.ms.ReleaseTask(ctx, tc.msg)
				return err
			})
		})
	}
	f.assertInvariants()
}

// ---------------------------------------------------------------- Heartbeat

// Heartbeats keep a running task alive past the heartbeat timeout; when they stop the task
// lapses timeout blocks after the last one.
func TestHeartbeat(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.HeartbeatTimeoutBlocks = 4 })
	task := f.runningTask("p1")
	for range 4 {
		f.blocks(3)
		_, err := f.ms.Heartbeat(f.ctx, &types.MsgHeartbeat{Provider: task.Provider, NodeId: task.NodeId})
		require.NoError(t, err)
		hb, err := f.k.Heartbeats.Get(f.ctx, task.NodeId)
		require.NoError(t, err)
		require.Equal(t, f.ctx.BlockHeight()+4, hb)
	}
	require.Equal(t, types.TASK_STATUS_RUNNING, f.task(task.Id).Status, "12 blocks, alive")
	f.blocks(4)
	require.Equal(t, types.TASK_STATUS_RUNNING, f.task(task.Id).Status, "due at the end of the 4th block after the last heartbeat")
	f.blocks(1)
	got := f.task(task.Id)
	require.Equal(t, types.TASK_STATUS_PENDING, got.Status, "lapsed 4 blocks after the last heartbeat")
	require.Contains(t, got.ExcludedNodes, task.NodeId)
	f.assertInvariants()
}

func TestHeartbeatRejects(t *testing.T) {
	f := newFixture(t, nil)
	task := f.runningTask("p1")
	other := f.operator("p2")
	f.addNode(other, 8, nil)
	cases := []struct {
		name string
		msg  *types.MsgHeartbeat
		err  error
	}{
		{"unknown node", &types.MsgHeartbeat{Provider: task.Provider, NodeId: 999}, types.ErrNodeUnknown},
		{"not the node's operator", &types.MsgHeartbeat{Provider: other, NodeId: task.NodeId}, types.ErrNotProvider},
	}
	for _, bad := range badAddresses {
		name, addr := bad.name, bad.addr
		cases = append(cases, struct {
			name string
			msg  *types.MsgHeartbeat
			err  error
		}{"provider address: " + name, &types.MsgHeartbeat{Provider: addr, NodeId: task.NodeId}, types.ErrInvalidAddress})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.requireRejected(tc.err, func(ctx sdk.Context) error {
				_, err := f.ms.Heartbeat(ctx, tc.msg)
				return err
			})
		})
	}
}

// ---------------------------------------------------------------- Checkpoint

const goodSum = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

// A checkpoint is recorded with its height and announced; a later one replaces it.
func TestCheckpoint(t *testing.T) {
	f := newFixture(t, nil)
	task := f.runningTask("p1")
	_, err := f.ms.Checkpoint(f.ctx, &types.MsgCheckpoint{Provider: task.Provider, TaskId: task.Id, Sha256: goodSum, Uri: "ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi"})
	require.NoError(t, err)
	require.True(t, f.hasEvent("EventCheckpoint"))
	f.blocks(1)
	_, err = f.ms.Checkpoint(f.ctx, &types.MsgCheckpoint{Provider: task.Provider, TaskId: task.Id, Sha256: goodSum, Uri: "https://p1.example.com/ckpt/2"})
	require.NoError(t, err)
	got := f.task(task.Id)
	require.Equal(t, types.Checkpoint{Sha256: goodSum, Uri: "https://p1.example.com/ckpt/2", Height: f.ctx.BlockHeight(), Author: task.Provider}, got.Checkpoint)
	require.Equal(t, types.TASK_STATUS_RUNNING, got.Status)
}

func TestCheckpointRejects(t *testing.T) {
	f := newFixture(t, nil)
	running := f.runningTask("p1")
	assigned := f.assignedTask("p2")
	committed := f.committedTask("p3")
	uri := "https://p1.example.com/ckpt/1"
	cp := func(provider string, id uint64, sum, uri string) *types.MsgCheckpoint {
		return &types.MsgCheckpoint{Provider: provider, TaskId: id, Sha256: sum, Uri: uri}
	}
	p := running.Provider
	cases := []struct {
		name string
		msg  *types.MsgCheckpoint
		err  error
	}{
		{"unknown task", cp(p, 999, goodSum, uri), types.ErrTaskNotFound},
		{"not the task's provider", cp(assigned.Provider, running.Id, goodSum, uri), types.ErrNotProvider},
		{"assigned, not running", cp(assigned.Provider, assigned.Id, goodSum, uri), types.ErrInvalidTaskStatus},
		{"committed", cp(committed.Provider, committed.Id, goodSum, uri), types.ErrInvalidTaskStatus},
		{"sha256 empty", cp(p, running.Id, "", uri), types.ErrInvalidCheckpoint},
		{"sha256 63 characters", cp(p, running.Id, goodSum[:63], uri), types.ErrInvalidCheckpoint},
		{"sha256 65 characters", cp(p, running.Id, goodSum+"0", uri), validate.ErrTooLarge},
		{"sha256 upper case", cp(p, running.Id, strings.ToUpper(goodSum), uri), types.ErrInvalidCheckpoint},
		{"sha256 not hex", cp(p, running.Id, "g"+goodSum[1:], uri), types.ErrInvalidCheckpoint},
		{"uri empty", cp(p, running.Id, goodSum, ""), types.ErrInvalidCheckpoint},
		{"uri scheme ftp", cp(p, running.Id, goodSum, "ftp://p1.example.com/x"), types.ErrInvalidCheckpoint},
		{"uri without scheme", cp(p, running.Id, goodSum, "p1.example.com/x"), types.ErrInvalidCheckpoint},
		{"uri https without host", cp(p, running.Id, goodSum, "https:///x"), types.ErrInvalidCheckpoint},
		{"uri too long", cp(p, running.Id, goodSum, "https://p1.example.com/"+strings.Repeat("a", types.MaxURILen)), validate.ErrTooLarge},
		{"uri unparsable", cp(p, running.Id, goodSum, "https://p1.example.com/%zz"), types.ErrInvalidCheckpoint},
	}
	for _, bad := range badAddresses {
		name, addr := bad.name, bad.addr
		cases = append(cases, struct {
			name string
			msg  *types.MsgCheckpoint
			err  error
		}{"provider address: " + name, cp(addr, running.Id, goodSum, uri), types.ErrInvalidAddress})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.requireRejected(tc.err, func(ctx sdk.Context) error {
				_, err := f.ms.Checkpoint(ctx, tc.msg)
				return err
			})
		})
	}
}

// ---------------------------------------------------------------- CommitResult

// A commitment frees the node's GPUs (the task stays in flight until revealed) and opens
// the reveal window.
func TestCommitResult(t *testing.T) {
	f := newFixture(t, nil)
	task := f.runningTask("p1")
	require.Equal(t, uint32(1), f.slot(task.NodeId).GpusUsed)
	f.blocks(1)
	c := types.Commitment(testRoot[:], testSalt, sdk.MustAccAddressFromBech32(task.Provider))
	_, err := f.ms.CommitResult(f.ctx, &types.MsgCommitResult{Provider: task.Provider, TaskId: task.Id, Commitment: c})
	require.NoError(t, err)
	got := f.task(task.Id)
	require.Equal(t, types.TASK_STATUS_COMMITTED, got.Status)
	require.Equal(t, c, got.Commitment)
	require.Equal(t, f.ctx.BlockHeight(), got.CommitHeight)
	require.Equal(t, f.ctx.BlockHeight()+int64(f.params().RevealTimeoutBlocks), got.RevealDeadlineHeight)
	s := f.slot(task.NodeId)
	require.Zero(t, s.GpusUsed, "the GPUs are free again")
	require.Equal(t, uint32(1), s.Tasks, "the task is still in flight")
	require.True(t, f.hasEvent("EventTaskStatus"))
	f.assertInvariants()
}

// A commitment in the block whose time is exactly the run deadline is on time.
func TestCommitResultAtRunDeadline(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.HeartbeatTimeoutBlocks = 1000 })
	task := f.runningTask("p1")
	f.next(f.task(task.Id).RunDeadline.Sub(f.ctx.BlockTime()))
	require.Equal(t, f.task(task.Id).RunDeadline, f.ctx.BlockTime())
	f.commit(task)
	require.Equal(t, types.TASK_STATUS_COMMITTED, f.task(task.Id).Status)
}

// A commitment that misses the reveal window lapses: the provider is slashed for a missed
// reveal and the task goes back to the queue.
func TestMissedRevealLapses(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.RevealTimeoutBlocks = 2 })
	task := f.committedTask("p1")
	f.blocks(2)
	require.Equal(t, types.TASK_STATUS_COMMITTED, f.task(task.Id).Status, "due at the end of commit height + 2")
	f.blocks(1)
	got := f.task(task.Id)
	require.Equal(t, types.TASK_STATUS_PENDING, got.Status)
	require.Nil(t, got.Commitment)
	require.Len(t, f.coll.slashes, 1)
	require.Equal(t, f.params().MissedRevealSlashPpm, f.coll.slashes[0].ppm)
	require.Equal(t, sstypes.SLASH_REASON_MISSED_REVEAL, f.coll.slashes[0].reason)
	f.assertInvariants()
}

func TestCommitResultRejects(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.HeartbeatTimeoutBlocks = 1000 })
	running := f.runningTask("p1")
	assigned := f.assignedTask("p2")
	committed := f.committedTask("p3")
	late := f.runningTask("p4")
	good := func(provider string) []byte {
		return types.Commitment(testRoot[:], testSalt, sdk.MustAccAddressFromBech32(provider))
	}
	commit := func(provider string, id uint64, c []byte) *types.MsgCommitResult {
		return &types.MsgCommitResult{Provider: provider, TaskId: id, Commitment: c}
	}
	p := running.Provider
	cases := []struct {
		name string
		msg  *types.MsgCommitResult
		err  error
	}{
		{"unknown task", commit(p, 999, good(p)), types.ErrTaskNotFound},
		{"not the task's provider", commit(assigned.Provider, running.Id, good(assigned.Provider)), types.ErrNotProvider},
		{"the job's owner", commit(f.client, running.Id, good(f.client)), types.ErrNotProvider},
		{"assigned, not acked", commit(assigned.Provider, assigned.Id, good(assigned.Provider)), types.ErrInvalidTaskStatus},
		{"committed twice", commit(committed.Provider, committed.Id, good(committed.Provider)), types.ErrInvalidTaskStatus},
		{"31-byte commitment", commit(p, running.Id, good(p)[:31]), types.ErrInvalidCommitment},
		{"33-byte commitment", commit(p, running.Id, append(good(p), 0)), types.ErrInvalidCommitment},
		{"empty commitment", commit(p, running.Id, nil), types.ErrInvalidCommitment},
	}
	for _, bad := range badAddresses {
		name, addr := bad.name, bad.addr
		cases = append(cases, struct {
			name string
			msg  *types.MsgCommitResult
			err  error
		}{"provider address: " + name, commit(addr, running.Id, good(p)), types.ErrInvalidAddress})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.requireRejected(tc.err, func(ctx sdk.Context) error {
				_, err := f.ms.CommitResult(ctx, tc.msg)
				return err
			})
		})
	}
	// One second after the run deadline, in the block before the deadline lapses it.
	t.Run("after the run deadline", func(t *testing.T) {
		f.next(f.task(late.Id).RunDeadline.Sub(f.ctx.BlockTime()) + time.Second)
		require.Equal(t, types.TASK_STATUS_RUNNING, f.task(late.Id).Status)
		f.requireRejected(types.ErrDeadlinePassed, func(ctx sdk.Context) error {
			_, err := f.ms.CommitResult(ctx, commit(late.Provider, late.Id, good(late.Provider)))
			return err
		})
		// and it lapses at the end of that block
		f.blocks(1)
		require.Equal(t, types.TASK_STATUS_PENDING, f.task(late.Id).Status)
	})
	f.assertInvariants()
}

// ---------------------------------------------------------------- RevealResult

// A reveal that opens the commitment records the result, frees the node and schedules
// settlement at the end of the challenge window (a NONE job's result needs no comparison:
// it may be verified at once); the task then settles and the provider is paid price + tip
// less the take.
func TestRevealResult(t *testing.T) {
	f := newFixture(t, nil)
	task := f.committedTask("p1")
	f.blocks(1)
	res, err := f.ms.RevealResult(f.ctx, revealMsg(task))
	require.NoError(t, err)
	window := int64(f.params().ChallengeWindowBlocks)
	require.Equal(t, f.ctx.BlockHeight()+window, res.SettleHeight)
	got := f.task(task.Id)
	require.Contains(t, []types.TaskStatus{types.TASK_STATUS_REVEALED, types.TASK_STATUS_VERIFIED}, got.Status)
	require.Equal(t, testRoot[:], got.ResultRoot)
	require.Equal(t, revealMsg(task).OutputUri, got.OutputUri)
	require.Equal(t, uint64(600), got.Usage.GpuSeconds)
	require.Zero(t, f.slot(task.NodeId).Tasks, "nothing in flight on the node")
	require.True(t, f.hasEvent("EventTaskStatus"))
	f.assertInvariants()

	provBefore := f.balance(task.Provider)
	for f.ctx.BlockHeight() <= res.SettleHeight {
		require.NotEqual(t, types.TASK_STATUS_SETTLED, f.task(task.Id).Status, "not before the end of the challenge window")
		f.blocks(1)
	}
	require.Equal(t, types.TASK_STATUS_SETTLED, f.task(task.Id).Status, "settled at the end of the settle height")
	// acked and committed within a minute of the job's ten: a tenth of the quote, and the tip
	split := types.SplitPayment(quote10m.QuoRaw(10).AddRaw(100_000), f.params().TakeRatePpm, f.params().TakePoolSharePpm)
	require.Equal(t, provBefore.Add(split.Provider), f.balance(task.Provider))
	require.Equal(t, []uint64{task.NodeId}, f.hooks.settled)
	require.True(t, f.escrow().IsZero())
	f.assertInvariants()
}

func TestRevealResultRejects(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.HeartbeatTimeoutBlocks = 1000 })
	committed := f.committedTask("p1")
	running := f.runningTask("p2")
	// p3 copies p1's commitment onto its own task
	copier := f.runningTask("p3")
	f.blocks(1)
	_, err := f.ms.CommitResult(f.ctx, &types.MsgCommitResult{Provider: copier.Provider, TaskId: copier.Id, Commitment: f.task(committed.Id).Commitment})
	require.NoError(t, err)
	// p4 commits in this block
	fresh := f.runningTask("p4")
	f.commit(fresh)

	reveal := func(task types.Task, edit func(m *types.MsgRevealResult)) *types.MsgRevealResult {
		m := revealMsg(task)
		if edit != nil {
			edit(m)
		}
		return m
	}
	otherSalt := []byte("fedcba9876543210")
	otherRoot := sha256.Sum256([]byte("another result"))
	uuids := make([]string, 65)
	for i := range uuids {
		uuids[i] = "GPU-x"
	}
	cases := []struct {
		name string
		msg  *types.MsgRevealResult
		err  error
	}{
		{"unknown task", reveal(committed, func(m *types.MsgRevealResult) { m.TaskId = 999 }), types.ErrTaskNotFound},
		{"not the task's provider", reveal(committed, func(m *types.MsgRevealResult) { m.Provider = running.Provider }), types.ErrNotProvider},
		{"running, not committed", reveal(running, nil), types.ErrInvalidTaskStatus},
		{"in the commit block", reveal(fresh, nil), types.ErrRevealNotOpen},
		{"mismatched salt", reveal(committed, func(m *types.MsgRevealResult) { m.Salt = otherSalt }), types.ErrRevealMismatch},
		{"mismatched root", reveal(committed, func(m *types.MsgRevealResult) { m.ResultRoot = otherRoot[:] }), types.ErrRevealMismatch},
		// sha256(root || salt || p1) committed by p3 opens for p1 only
		{"commitment copied from another provider", reveal(copier, nil), types.ErrRevealMismatch},
		{"root 31 bytes", reveal(committed, func(m *types.MsgRevealResult) { m.ResultRoot = testRoot[:31] }), types.ErrInvalidReveal},
		{"root 33 bytes", reveal(committed, func(m *types.MsgRevealResult) { m.ResultRoot = append(append([]byte{}, testRoot[:]...), 0) }), validate.ErrTooLarge},
		{"salt 15 bytes", reveal(committed, func(m *types.MsgRevealResult) { m.Salt = testSalt[:15] }), types.ErrInvalidReveal},
		{"salt 65 bytes", reveal(committed, func(m *types.MsgRevealResult) { m.Salt = make([]byte, 65) }), validate.ErrTooLarge},
		{"output uri empty", reveal(committed, func(m *types.MsgRevealResult) { m.OutputUri = "" }), types.ErrInvalidReveal},
		{"output uri scheme", reveal(committed, func(m *types.MsgRevealResult) { m.OutputUri = "file:///etc/passwd" }), types.ErrInvalidReveal},
		{"output uri too long", reveal(committed, func(m *types.MsgRevealResult) {
			m.OutputUri = "https://x.example.com/" + strings.Repeat("a", types.MaxURILen)
		}), validate.ErrTooLarge},
		{"65 GPU uuids", reveal(committed, func(m *types.MsgRevealResult) { m.Usage.GpuUuids = uuids }), validate.ErrTooMany},
	}
	for _, bad := range badAddresses {
		name, addr := bad.name, bad.addr
		cases = append(cases, struct {
			name string
			msg  *types.MsgRevealResult
			err  error
		}{"provider address: " + name, reveal(committed, func(m *types.MsgRevealResult) { m.Provider = addr }), types.ErrInvalidAddress})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.requireRejected(tc.err, func(ctx sdk.Context) error {
				_, err := f.ms.RevealResult(ctx, tc.msg)
				return err
			})
		})
	}
	// the honest provider reveals what it committed
	_, err = f.ms.RevealResult(f.ctx, revealMsg(committed))
	require.NoError(t, err)
	// salts of 16 and 64 bytes are both fine
	f.blocks(1)
	for _, n := range []int{16, 64} {
		task := f.runningTask(fmt.Sprint("salt", n))
		salt := make([]byte, n)
		_, err := f.ms.CommitResult(f.ctx, &types.MsgCommitResult{Provider: task.Provider, TaskId: task.Id,
			Commitment: types.Commitment(testRoot[:], salt, sdk.MustAccAddressFromBech32(task.Provider))})
		require.NoError(t, err)
		f.blocks(1)
		m := revealMsg(task)
		m.Salt = salt
		_, err = f.ms.RevealResult(f.ctx, m)
		require.NoError(t, err, "salt of %d bytes", n)
	}
	f.assertInvariants()
}

// A job's history entry 0, its submission, is not stored (it cost 7% of a submission's
// gas): JobHistory makes it from the job's record. Every way of paging (limits, next
// keys, offsets, reverse, the total) lists the same entries as one page, entry 0 first.
func TestJobHistoryListsTheImpliedSubmission(t *testing.T) {
	f := newFixture(t, nil)
	f.addNode(f.operator("op"), 8, nil)
	job := f.submit(f.gemmSpec(3))
	f.next(time.Second) // three TaskAssigned
	_, err := f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: job})
	require.NoError(t, err)
	qs := keeper.NewQueryServerImpl(f.k)
	page := func(pg *query.PageRequest) *types.QueryJobHistoryResponse {
		t.Helper()
		res, err := qs.JobHistory(f.ctx, &types.QueryJobHistoryRequest{JobId: job, Pagination: pg})
		require.NoError(t, err)
		return res
	}
	events := func(es []types.HistoryEntry) (out []string) {
		for _, e := range es {
			out = append(out, fmt.Sprintf("%s@%d:%d", e.Event, e.Height, e.TaskId))
		}
		return out
	}
	all := page(&query.PageRequest{CountTotal: true})
	require.GreaterOrEqual(t, len(all.Entries), 5)
	require.Equal(t, uint64(len(all.Entries)), all.Pagination.Total)
	shown, err := qs.Job(f.ctx, &types.QueryJobRequest{JobId: job})
	require.NoError(t, err)
	require.Equal(t, uint32(len(all.Entries)), shown.Job.HistoryLen, "the Job query counts the whole history")
	require.Equal(t, uint32(1), f.job(job).HistoryLen, "the record counts what submission wrote; the entries after are in HistoryAdded")
	sub := all.Entries[0]
	require.Equal(t, "JobSubmitted", sub.Event)
	require.Equal(t, "3 tasks x 1 replicas, ALLOCATION_MODE_ASSIGN, escrow 15300000udps", sub.Detail)
	require.Equal(t, f.job(job).SubmittedHeight, sub.Height)
	require.Equal(t, "JobCancelled", all.Entries[len(all.Entries)-1].Event)
	want := events(all.Entries)
	stored := 0
	require.NoError(t, f.k.History.Walk(f.ctx, collections.NewPrefixedPairRange[uint64, uint32](job), func(k collections.Pair[uint64, uint32], _ types.HistoryEntry) (bool, error) {
		require.NotZero(t, k.K2(), "entry 0 is not stored")
		stored++
		return false, nil
	}))
	require.Equal(t, len(want)-1, stored)

	requirePagingAgrees(t, want, func(pg *query.PageRequest) ([]string, *query.PageResponse) {
		res := page(pg)
		return events(res.Entries), res.Pagination
	})
}

// An auction whose job's deadline passes before its close height: the job expires while
// bidding. The open bids must get their deposits back and the close must go with the
// job; before, the bids stayed open on a failed job (the deposits locked until the
// prune deleted the bids, and never paid back) and the close entry stayed in the store
// for a job that no longer bid (an export/import lost it: found by the 500-block sims,
// seed 2).
func TestAttackAuctionOutlivesItsJobsDeadline(t *testing.T) {
	f := newFixture(t, nil)
	op := f.operator("p1")
	node := f.addNode(op, 8, nil)
	spec := f.gemmSpec(1)
	spec.Mode = types.ALLOCATION_MODE_AUCTION
	spec.Deadline = f.ctx.BlockTime().Add(spec.MaxDuration + 5*time.Second)
	id := f.submit(spec)
	closeAt := f.job(id).AuctionCloseHeight
	opBefore := f.balance(op)
	_, err := f.ms.PlaceBid(f.ctx, &types.MsgPlaceBid{Provider: op, JobId: id, NodeId: node, Price: sdkmath.NewInt(1_000_000), Quantity: 1})
	require.NoError(t, err)
	// the deadline passes (blocks of 1 s after a long one) before the auction closes
	f.next(spec.MaxDuration)
	f.blocks(6)
	require.Less(t, f.ctx.BlockHeight(), closeAt)
	job := f.job(id)
	require.Equal(t, types.JOB_STATUS_FAILED, job.Status)
	require.Equal(t, types.TASK_STATUS_EXPIRED, f.tasks(id)[0].Status)
	b, err := f.k.Bids.Get(f.ctx, collections.Join(id, node))
	require.NoError(t, err)
	require.Equal(t, types.BID_STATUS_LOST, b.Status, "the bid ends with its job")
	require.True(t, b.Deposit.IsZero())
	require.Equal(t, opBefore, f.balance(op), "the deposit is paid back")
	has, err := f.k.AuctionClose.Has(f.ctx, collections.Join(closeAt, id))
	require.NoError(t, err)
	require.False(t, has, "no close is left for a job that no longer bids")
	f.assertInvariants()
	f.blocks(int(closeAt - f.ctx.BlockHeight() + 1))
	require.Equal(t, types.JOB_STATUS_FAILED, f.job(id).Status)
	require.Equal(t, opBefore, f.balance(op))
	f.assertInvariants()
}

// A full auction (max_bids_per_job open bids) takes a bid only below its dearest open bid
// by price over reputation factor, the order the close fills in, and outbids that one:
// its deposit returns and it is deleted. A bid whose node fell below the minimum
// reputation since it bid (the close would drop it) goes first; a bid no cheaper than the
// dearest is refused and changes nothing.
func TestFullAuctionTakesOnlyCheaperBids(t *testing.T) {
	f, job, nodes := auctionFixture(t, "p1", "p2", "p3", "p4", "p5")
	p := f.params()
	p.MaxBidsPerJob = 2
	require.NoError(t, f.k.Params.Set(f.ctx, p))
	place := func(name string, price int64) error {
		_, err := f.ms.PlaceBid(f.ctx, &types.MsgPlaceBid{Provider: keepertest.Addr(name), JobId: job, NodeId: nodes[name], Price: sdkmath.NewInt(price), Quantity: 1})
		return err
	}
	has := func(name string) bool {
		ok, err := f.k.Bids.Has(f.ctx, collections.Join(job, nodes[name]))
		require.NoError(t, err)
		return ok
	}
	f.rep.scores[nodes["p2"]] = sdkmath.LegacyNewDecWithPrec(5, 1) // 200,000 / 0.5: the dearest
	require.NoError(t, place("p1", 300_000))
	require.NoError(t, place("p2", 200_000))
	before := f.balance(keepertest.Addr("p2"))

	// 400,000 effective, as dear as p2's: refused, nothing changed
	state := f.snapshot()
	f.requireRejected(types.ErrInvalidBid, func(ctx sdk.Context) error {
		_, err := f.ms.PlaceBid(ctx, &types.MsgPlaceBid{Provider: keepertest.Addr("p3"), JobId: job, NodeId: nodes["p3"], Price: sdkmath.NewInt(400_000), Quantity: 1})
		return err
	})
	f.requireUnchanged(state)

	// 350,000 effective: below p2's 400,000 (though p2's price is lower), so p2 is outbid
	require.NoError(t, place("p3", 350_000))
	require.False(t, has("p2"), "p2's bid is outbid")
	require.Equal(t, before.Add(p.BidDeposit.Amount), f.balance(keepertest.Addr("p2")), "p2's deposit is back")
	require.True(t, has("p1") && has("p3"))
	f.assertInvariants()

	// p1 falls below the minimum reputation: a bid dearer than both open ones takes its place
	f.rep.ineligible[nodes["p1"]] = true
	require.NoError(t, place("p4", 390_000))
	require.False(t, has("p1"), "the bid the close would drop goes first")
	require.True(t, has("p3") && has("p4"))
	// p5 at 390,000 ties p4, the dearest: refused
	require.ErrorIs(t, place("p5", 390_000), types.ErrInvalidBid)
	f.assertInvariants()
}
