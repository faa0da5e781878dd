package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/apptest"
	dpstypes "github.com/flopsnet/flops/x/dps/types"
	marketkeeper "github.com/flopsnet/flops/x/market/keeper"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// wonAuction runs an AUCTION job of two tasks to its close on marketApp's chain: p1 and p2
// bid, both win (p3's dearer bid loses), and both tasks are assigned to them, not yet
// acked. It returns the job
// and the two winners' balances before they bid.
// wonByTwo is an auction of two tasks that p1 and p2 won (p3 lost), not yet acked, with
// what the owner, the reward pool and the winners held after the close.
type wonByTwo struct {
	a              *apptest.App
	nodes          map[string]uint64
	job            uint64
	won            []markettypes.Task
	deposit        sdkmath.Int
	before         map[string]sdkmath.Int // the winners' balances before they bid
	client, reward sdkmath.Int
}

func newWonByTwo(t *testing.T) wonByTwo {
	a, nodes := marketApp(t, nil)
	job, before := wonAuction(t, a, nodes, gemmJob(a, 2, markettypes.ALLOCATION_MODE_AUCTION))
	return wonByTwo{a: a, nodes: nodes, job: job, won: jobTasks(t, a, job), deposit: markettypes.DefaultParams().BidDeposit.Amount,
		before: before, client: a.Balance(a.Account("client").Address, udps), reward: a.ModuleBalance(dpstypes.ModuleName, udps)}
}

// requireForfeited: both winners' tasks went unacked (how, in words): the owner gained
// nothing, both deposits went to the reward pool, both bids are forfeited, and each task
// excludes the node that won it.
func (w wonByTwo) requireForfeited(t *testing.T, how string) {
	t.Helper()
	a := w.a
	require.Equal(t, w.client, a.Balance(a.Account("client").Address, udps), "the owner gains nothing from %s", how)
	require.Equal(t, w.reward.Add(w.deposit.MulRaw(2)), a.ModuleBalance(dpstypes.ModuleName, udps), "the two deposits go to the reward pool")
	for _, n := range []string{"p1", "p2"} {
		b, err := a.MarketKeeper.Bids.Get(a.Ctx(), collections.Join(w.job, w.nodes[n]))
		require.NoError(t, err)
		require.Equal(t, markettypes.BID_STATUS_FORFEITED, b.Status, n)
		require.True(t, b.Deposit.IsZero(), n)
	}
	for i, task := range jobTasks(t, a, w.job) {
		require.Contains(t, task.ExcludedNodes, w.won[i].NodeId, "task %d goes elsewhere", task.Id)
	}
}

func wonAuction(t *testing.T, a *apptest.App, nodes map[string]uint64, spec markettypes.JobSpec) (uint64, map[string]sdkmath.Int) {
	t.Helper()
	before := map[string]sdkmath.Int{}
	for _, n := range []string{"p1", "p2"} {
		before[n] = a.Balance(a.Account(n).Address, udps)
	}
	job := submit(t, a, spec)
	bid(t, a, "p1", nodes["p1"], job, 200_000)
	bid(t, a, "p2", nodes["p2"], job, 150_000)
	bid(t, a, "p3", nodes["p3"], job, 300_000) // loses, and sets the clearing price
	for getJob(t, a, job).Status == markettypes.JOB_STATUS_BIDDING {
		a.NextBlock()
	}
	deposit := markettypes.DefaultParams().BidDeposit.Amount
	for _, task := range jobTasks(t, a, job) {
		require.Equal(t, markettypes.TASK_STATUS_ASSIGNED, task.Status)
		require.NotZero(t, task.BidNode, "assigned from its won bid")
	}
	for _, n := range []string{"p1", "p2"} {
		b, err := a.MarketKeeper.Bids.Get(a.Ctx(), collections.Join(job, nodes[n]))
		require.NoError(t, err)
		require.Equal(t, markettypes.BID_STATUS_WON, b.Status, n)
		require.Equal(t, before[n].Sub(deposit), a.Balance(a.Account(n).Address, udps), "%s's deposit is held until its ack", n)
	}
	return job, before
}

// requireDepositsBack: the winners of job's auction have their deposits back (their
// balances as before they bid), their bids settled, and, once the job is pruned, the
// escrow account holds nothing and the invariants hold.
func requireDepositsBack(t *testing.T, a *apptest.App, nodes map[string]uint64, job uint64, before map[string]sdkmath.Int) {
	t.Helper()
	for _, n := range []string{"p1", "p2"} {
		require.Equal(t, before[n], a.Balance(a.Account(n).Address, udps), "%s's deposit is back", n)
		b, err := a.MarketKeeper.Bids.Get(a.Ctx(), collections.Join(job, nodes[n]))
		require.NoError(t, err)
		require.Equal(t, markettypes.BID_STATUS_SETTLED, b.Status, n)
		require.True(t, b.Deposit.IsZero(), n)
	}
	a.AssertInvariants()
	// the job is pruned after job_retention_blocks, its bids with it: nothing is left in
	// the escrow account with no record of whose it is
	for {
		if _, err := a.MarketKeeper.GetJob(a.Ctx(), job); err != nil {
			break
		}
		a.NextBlock()
	}
	require.True(t, a.ModuleBalance(markettypes.ModuleName, udps).IsZero(), "the escrow account is empty")
	a.AssertInvariants()
}

// The attack of a client on an auction's winners: a winner's deposit returns at its
// first ack and is forfeited when it never acks. A client that cancelled its job
// between the close and the acks cancelled the won tasks while they were assigned, and
// the bids stayed WON: the deposits were neither returned nor forfeited, held in the
// escrow account until the job was pruned, then lost with the bids' records (and the
// escrow invariant broken). The client got its whole escrow back: every won auction it
// cancelled cost its winners bid_deposit each, and it nothing but gas. A won task that
// ends before its ack without a lapse is no fault of its provider: the deposit returns.
func TestAttackCancelAfterTheAuctionKeepsTheWinnersDeposits(t *testing.T) {
	a, nodes := marketApp(t, func(p *markettypes.Params) { p.JobRetentionBlocks = 10 })
	clientBefore := a.Balance(a.Account("client").Address, udps)
	job, before := wonAuction(t, a, nodes, gemmJob(a, 2, markettypes.ALLOCATION_MODE_AUCTION))
	a.MustDeliver("client", &markettypes.MsgCancelJob{Owner: a.Account("client").String(), JobId: job})
	for _, task := range jobTasks(t, a, job) {
		require.Equal(t, markettypes.TASK_STATUS_CANCELLED, task.Status)
	}
	require.Equal(t, clientBefore, a.Balance(a.Account("client").Address, udps), "the client's escrow is refunded (fees are not in udps here)")
	requireDepositsBack(t, a, nodes, job, before)
}

// The same attack by a deadline: a client that sets its job's deadline just after the
// auction's close has the won tasks expire while assigned, before their providers could
// ack within ack_timeout_blocks. The deposits stayed held and were lost at the pruning.
func TestAttackDeadlineRightAfterTheAuctionKeepsTheWinnersDeposits(t *testing.T) {
	a, nodes := marketApp(t, func(p *markettypes.Params) { p.JobRetentionBlocks = 10; p.AckTimeoutBlocks = 1_000 })
	spec := gemmJob(a, 2, markettypes.ALLOCATION_MODE_AUCTION)
	spec.Deadline = a.BlockTime().Add(spec.MaxDuration + 30*time.Second)
	job, before := wonAuction(t, a, nodes, spec)
	for getJob(t, a, job).Status == markettypes.JOB_STATUS_ACTIVE {
		a.BlockInterval = time.Minute
		a.NextBlock()
	}
	a.BlockInterval = time.Second
	for _, task := range jobTasks(t, a, job) {
		require.Equal(t, markettypes.TASK_STATUS_EXPIRED, task.Status)
	}
	requireDepositsBack(t, a, nodes, job, before)
}

// A version 13 chain holds the deposits of won tasks that ended before their ack (the
// two attacks above): Migrate13to14 pays them back and settles their bids, and keeps
// holding those of won tasks still assigned, until their ack. The version 13 state is
// made here as that version left it: the deposits back in the escrow account and the
// bids WON; the escrow invariant reports each of them until the migration.
func TestMigrate13to14ReturnsTheDepositsOfEndedWonTasks(t *testing.T) {
	a, nodes := marketApp(t, nil)
	deposit := markettypes.DefaultParams().BidDeposit.Amount
	cancelled, before := wonAuction(t, a, nodes, gemmJob(a, 2, markettypes.ALLOCATION_MODE_AUCTION))
	a.MustDeliver("client", &markettypes.MsgCancelJob{Owner: a.Account("client").String(), JobId: cancelled})
	assigned, _ := wonAuction(t, a, nodes, gemmJob(a, 2, markettypes.ALLOCATION_MODE_AUCTION))
	a.Prepare(func(ctx sdk.Context) {
		for _, n := range []string{"p1", "p2"} {
			require.NoError(t, a.BankKeeper.SendCoinsFromAccountToModule(ctx, a.Account(n).Address, markettypes.ModuleName, sdk.NewCoins(sdk.NewCoin(udps, deposit))))
			key := collections.Join(cancelled, nodes[n])
			b, err := a.MarketKeeper.Bids.Get(ctx, key)
			require.NoError(t, err)
			b.Status, b.Deposit = markettypes.BID_STATUS_WON, deposit
			require.NoError(t, a.MarketKeeper.Bids.Set(ctx, key, b))
		}
	})
	a.NextBlock()
	msg, broken := a.MarketKeeper.EscrowInvariant(a.Ctx())
	require.True(t, broken)
	for _, n := range []string{"p1", "p2"} {
		require.Contains(t, msg, fmt.Sprintf("finished job %d holds node %d's won bid deposit %s", cancelled, nodes[n], deposit))
	}

	a.Prepare(func(ctx sdk.Context) { require.NoError(t, marketkeeper.NewMigrator(a.MarketKeeper).Migrate13to14(ctx)) })
	a.NextBlock()
	for _, n := range []string{"p1", "p2"} {
		require.Equal(t, before[n].Sub(deposit), a.Balance(a.Account(n).Address, udps), "%s: the cancelled job's deposit is back, the assigned one's still held", n)
		b, err := a.MarketKeeper.Bids.Get(a.Ctx(), collections.Join(cancelled, nodes[n]))
		require.NoError(t, err)
		require.Equal(t, markettypes.BID_STATUS_SETTLED, b.Status)
		require.True(t, b.Deposit.IsZero())
		b, err = a.MarketKeeper.Bids.Get(a.Ctx(), collections.Join(assigned, nodes[n]))
		require.NoError(t, err)
		require.Equal(t, markettypes.BID_STATUS_WON, b.Status, "a won task not yet acked keeps its bid's deposit held")
		require.Equal(t, deposit, b.Deposit)
	}
	a.AssertInvariants()
	// a second run changes nothing
	a.Prepare(func(ctx sdk.Context) { require.NoError(t, marketkeeper.NewMigrator(a.MarketKeeper).Migrate13to14(ctx)) })
	a.NextBlock()
	for _, n := range []string{"p1", "p2"} {
		require.Equal(t, before[n].Sub(deposit), a.Balance(a.Account(n).Address, udps))
	}
	a.AssertInvariants()
}

// An owner must not profit from a winner's ack that never lands: others can keep it out
// of the chain (a proposer that leaves it out of its blocks, an owner that floods the
// winner's node or starts a job that takes its machine down beside the ack), and the task
// then goes to the scheduler at no cost to the owner. Here the owner's accomplice keeps
// both winners' acks out until ack_timeout_blocks pass: each winner loses its deposit
// (and is slashed for the abandon, burned), and the deposits go to the reward pool. Before
// the fix they were paid to the owner: 10 DPS a winner, for an auction it could hold again.
func TestAttackCensoredAckPaysTheOwnerTheDeposit(t *testing.T) {
	w := newWonByTwo(t)
	a, job := w.a, w.job
	// no ack lands: the tasks lapse and go to the scheduler (p3's node, and the winners'
	// are excluded from the task each lost)
	for {
		lapsed := true
		for _, task := range jobTasks(t, a, job) {
			lapsed = lapsed && task.Reassignments > 0
		}
		if lapsed {
			break
		}
		a.NextBlock()
	}
	w.requireForfeited(t, "the lapses")
	for _, n := range []string{"p1", "p2"} {
		require.Equal(t, w.before[n].Sub(w.deposit), a.Balance(a.Account(n).Address, udps), "%s lost its deposit", n)
	}
	a.AssertInvariants()
}
