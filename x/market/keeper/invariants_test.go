package keeper_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/keepertest"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/types"
)

// The stuck-tasks invariant holds through a task's life and breaks on each way a job can
// hold a task nothing will ever move: a waiting task with no clock left in its job, an
// unfinished job with no task left, a pending task of a job the scheduler skips.
func TestStuckTasksInvariant(t *testing.T) {
	holds := func(t *testing.T, f *fixture) { t.Helper(); invariantHolds(t, f, f.k.StuckTasksInvariant) }
	breaks := func(t *testing.T, f *fixture, want string) {
		t.Helper()
		invariantBreaks(t, f, f.k.StuckTasksInvariant, want)
	}

	t.Run("a task's life", func(t *testing.T) {
		f := newFixture(t, nil)
		job := f.submit(f.unplaceable()) // pending, the scheduler keeps trying
		holds(t, f)
		task := f.committedTask("a")
		holds(t, f)
		f.blocks(2)
		f.reveal(f.task(task.Id))
		holds(t, f)
		f.blocks(40)
		holds(t, f)
		f.assertInvariants()
		require.Zero(t, f.job(job).FinishedHeight)
	})

	t.Run("revealed with nothing left to decide it", func(t *testing.T) {
		f := newFixture(t, nil)
		task := f.committedTask("a")
		task.Status = types.TASK_STATUS_REVEALED // its reveal deadline was its only clock
		require.NoError(t, f.k.Tasks.Set(f.ctx, task.Id, task))
		breaks(t, f, "wait and no task of the job can move")
	})

	t.Run("unfinished job with every task final", func(t *testing.T) {
		f := newFixture(t, nil)
		task := f.committedTask("a")
		task.Status = types.TASK_STATUS_SETTLED
		require.NoError(t, f.k.Tasks.Set(f.ctx, task.Id, task))
		breaks(t, f, "no task left to finish it")
	})

	t.Run("pending task of a job the scheduler skips", func(t *testing.T) {
		f := newFixture(t, nil)
		id := f.submit(f.unplaceable())
		job := f.job(id)
		job.Status = types.JOB_STATUS_COMPLETED // but not finished: its task stays pending
		require.NoError(t, f.k.Jobs.Set(f.ctx, id, job))
		breaks(t, f, "is never scheduled and nothing cancels it")
	})
}

// A closed pool keeps the height its records are pruned at through an export and an
// import (a later block height): before, the import queued it a retention from the
// import, so that every export and import postponed it (found by TestAppImportExport).
func TestClosedPoolPruneHeightSurvivesExport(t *testing.T) {
	f := newFixture(t, nil)
	res, err := f.ms.CreatePool(f.ctx, &types.MsgCreatePool{Owner: f.client, Spec: types.PoolSpec{
		Workload: gfltypes.WORKLOAD_CLASS_BATCH, Runtime: types.RUNTIME_PROCESS, Command: []string{"serve"},
		Verification: types.VERIFICATION_CLASS_NONE, UnitPrice: sdk.NewInt64Coin(udps, 1_000),
		Budget: sdk.NewInt64Coin(udps, 10_000_000), MaxProviders: 2, UnitMaxDuration: time.Minute,
	}})
	require.NoError(t, err)
	f.blocks(3)
	_, err = f.ms.ClosePool(f.ctx, &types.MsgClosePool{Owner: f.client, PoolId: res.PoolId})
	require.NoError(t, err)
	want := f.ctx.BlockHeight() + int64(f.params().JobRetentionBlocks)
	pool, err := f.k.Pools.Get(f.ctx, res.PoolId)
	require.NoError(t, err)
	require.Equal(t, want, pool.PruneHeight)
	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)

	g := newFixture(t, nil)
	g.blocks(10)
	require.NoError(t, g.k.InitGenesis(g.ctx, gs))
	has, err := g.k.PoolPruneQueue.Has(g.ctx, collections.Join(want, res.PoolId))
	require.NoError(t, err)
	require.True(t, has, "the imported pool is pruned at %d, as before the export", want)
}

// A big job cancelled while its sweep is under way (its tasks past the first cancelInline
// still pending) and exported then: the import queues its sweep again, so that its
// pending tasks are cancelled and their escrow refunded as on the exporting chain. Before,
// the import dropped the sweep, and the tasks stayed pending for good with the escrow
// locked (found by TestAppImportExport at 500 blocks, seed 3: the stuck-tasks invariant).
func TestImportGoesOnCancellingABigJob(t *testing.T) {
	f := newFixture(t, nil)
	s := f.unplaceable()
	s.TaskCount = 200 // more than a cancellation does in its own tx (cancelInline)
	id := f.submit(s)
	_, err := f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: id})
	require.NoError(t, err)
	require.Equal(t, types.JOB_STATUS_CANCELLED, f.job(id).Status)
	require.Zero(t, f.job(id).FinishedHeight, "its sweep goes on in the block work")
	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.Equal(t, []types.CancelSweep{{Height: f.ctx.BlockHeight(), JobId: id}}, gs.CancelSweeps)
	require.Len(t, gs.SweepCursors, 1, "where the cancellation got to")

	for _, old := range []bool{false, true} {
		g := newFixture(t, nil)
		g.blocks(3)
		g.bank.FundModule(types.ModuleName, sdk.NewCoins(sdk.NewCoin(udps, f.escrow())))
		imported := *gs
		if old {
			// a genesis from before cancel_sweeps: the job's sweep is queued at the import
			imported.CancelSweeps, imported.SweepCursors = nil, nil
		}
		require.NoError(t, g.k.InitGenesis(g.ctx, &imported))
		after, err := g.k.ExportGenesis(g.ctx)
		require.NoError(t, err)
		if old {
			require.Equal(t, []types.CancelSweep{{Height: g.ctx.BlockHeight(), JobId: id}}, after.CancelSweeps)
		} else {
			require.Equal(t, gs.CancelSweeps, after.CancelSweeps, "the sweep goes on where it was")
			require.Equal(t, gs.SweepCursors, after.SweepCursors)
		}
		msg, broken := g.k.StuckTasksInvariant(g.ctx)
		require.False(t, broken, msg)
		g.blocks(5)
		job := g.job(id)
		require.NotZero(t, job.FinishedHeight, "every task cancelled, the job finished")
		require.True(t, job.Escrow.IsZero(), "its escrow refunded: %s", job.Escrow)
	}
}

// A cancelled job whose finished work is still verified: the audit of its committed
// task, drawn after the cancellation, runs like any audit, and no cancel sweep is queued
// for it. An export and import must leave it so. Before, the import queued a sweep for
// every cancelled, unfinished job holding a pending, assigned or running task, so the
// imported chain cancelled the audit the exporting chain ran (found by
// TestAppImportExport at 500 blocks, seed 10: the imported market store held two cancel
// sweeps the exported one did not).
func TestImportQueuesNoSweepForACancelledJobsAudit(t *testing.T) {
	f := newFixture(t, nil)
	f.addNode(f.operator("worker"), 8, nil)
	f.addNode(f.operator("auditor"), 8, nil)
	spec := f.gemmSpec(1)
	spec.Verification = types.VERIFICATION_CLASS_EXACT
	spec.VerificationBudget = sdk.NewInt64Coin(udps, 20_000_000)
	id := f.submit(spec)
	f.blocks(1)
	task := f.tasks(id)[0]
	require.Equal(t, types.TASK_STATUS_ASSIGNED, task.Status)
	f.ack(task)
	f.blocks(1)
	f.commit(task)
	_, err := f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: id})
	require.NoError(t, err)
	f.blocks(3) // the audit is drawn (a new provider's work always is) and placed
	var audit types.Task
	for _, tk := range f.tasks(id) {
		if tk.Role == types.TASK_ROLE_AUDIT {
			audit = tk
		}
	}
	require.NotZero(t, audit.Id, "the cancelled job's committed task is audited")
	require.Contains(t, []types.TaskStatus{types.TASK_STATUS_PENDING, types.TASK_STATUS_ASSIGNED}, audit.Status)
	require.Equal(t, types.JOB_STATUS_CANCELLED, f.job(id).Status)
	require.Zero(t, cancelSweeps(t, f), "the cancellation swept the job at once")
	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)

	g := newFixture(t, nil)
	g.blocks(3)
	g.bank.FundModule(types.ModuleName, sdk.NewCoins(sdk.NewCoin(udps, f.escrow())))
	require.NoError(t, g.k.InitGenesis(g.ctx, gs))
	require.Zero(t, cancelSweeps(t, g), "no sweep after the import either")
	g.blocks(2)
	require.NotEqual(t, types.TASK_STATUS_CANCELLED, g.task(audit.Id).Status, "the audit goes on")
}

// cancelSweeps is the number of queued cancel sweeps.
func cancelSweeps(t *testing.T, f *fixture) int {
	n := 0
	require.NoError(t, f.k.CancelSweeps.Walk(f.ctx, nil, func(collections.Pair[int64, uint64]) (bool, error) {
		n++
		return false, nil
	}))
	return n
}

// The escrow invariant holds a bid's deposit and a challenge's bond to the life of what
// they are held for: a won bid's deposit only while a task it won is assigned and not
// yet acked, a dispute's bond only while its job is unfinished. Each state below is the
// escrow account and the record as a deposit or bond left behind would leave them (the
// coins still in the account), which the job's pruning would then lose.
func TestEscrowInvariantHoldsDepositsAndBondsOnlyWhileTheirWorkIsOpen(t *testing.T) {
	holds := func(t *testing.T, f *fixture) { t.Helper(); invariantHolds(t, f, f.k.EscrowInvariant) }
	breaks := func(t *testing.T, f *fixture, want string) {
		t.Helper()
		invariantBreaks(t, f, f.k.EscrowInvariant, want)
	}
	// wonAuction: p1 and p2 win the two tasks of an auction (p3 loses), not yet acked
	wonAuction := func(t *testing.T) (*fixture, uint64, map[string]uint64) {
		f, job, nodes := auctionFixture(t, "p1", "p2", "p3")
		for i, n := range []string{"p1", "p2", "p3"} {
			_, err := f.ms.PlaceBid(f.ctx, &types.MsgPlaceBid{Provider: keepertest.Addr(n), JobId: job, NodeId: nodes[n], Price: sdkmath.NewInt(int64(i+1) * 100_000), Quantity: 1})
			require.NoError(t, err)
		}
		for f.job(job).Status == types.JOB_STATUS_BIDDING {
			f.blocks(1)
		}
		return f, job, nodes
	}
	// leaveHeld puts a won bid's deposit back as a version 13 chain left it
	leaveHeld := func(t *testing.T, f *fixture, job, node uint64) sdkmath.Int {
		t.Helper()
		key := collections.Join(job, node)
		b, err := f.k.Bids.Get(f.ctx, key)
		require.NoError(t, err)
		b.Status, b.Deposit = types.BID_STATUS_WON, f.params().BidDeposit.Amount
		require.NoError(t, f.k.Bids.Set(f.ctx, key, b))
		f.bank.FundModule(types.ModuleName, sdk.NewCoins(f.params().BidDeposit))
		return b.Deposit
	}

	t.Run("won bids while their tasks are assigned", func(t *testing.T) {
		f, job, nodes := wonAuction(t)
		for _, n := range []string{"p1", "p2"} {
			b, err := f.k.Bids.Get(f.ctx, collections.Join(job, nodes[n]))
			require.NoError(t, err)
			require.Equal(t, types.BID_STATUS_WON, b.Status)
			require.True(t, b.Deposit.IsPositive())
		}
		holds(t, f)
	})

	t.Run("a won bid's deposit after its task was acked", func(t *testing.T) {
		f, job, nodes := wonAuction(t)
		for _, task := range f.tasks(job) {
			if task.NodeId == nodes["p1"] {
				f.ack(task)
			}
		}
		holds(t, f)
		deposit := leaveHeld(t, f, job, nodes["p1"])
		breaks(t, f, fmt.Sprintf("job %d holds node %d's won bid deposit %s with no task of the bid assigned", job, nodes["p1"], deposit))
	})

	t.Run("a won bid's deposit after its job was cancelled", func(t *testing.T) {
		f, job, nodes := wonAuction(t)
		_, err := f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: job})
		require.NoError(t, err)
		require.NotZero(t, f.job(job).FinishedHeight)
		holds(t, f)
		deposit := leaveHeld(t, f, job, nodes["p2"])
		breaks(t, f, fmt.Sprintf("finished job %d holds node %d's won bid deposit %s", job, nodes["p2"], deposit))
	})

	t.Run("a dispute's bond after its job finished", func(t *testing.T) {
		f := newFixture(t, nil)
		task := f.settleFor("prov", f.client)
		require.NotZero(t, f.job(task.JobId).FinishedHeight)
		holds(t, f)
		bond := f.params().ChallengeBond
		require.NoError(t, f.k.Disputes.Set(f.ctx, 7, types.Dispute{Id: 7, JobId: task.JobId, TargetTask: task.Id, Bond: bond.Amount, Status: types.DISPUTE_STATUS_OPEN}))
		f.bank.FundModule(types.ModuleName, sdk.NewCoins(bond))
		breaks(t, f, fmt.Sprintf("finished job %d holds dispute 7's bond %s", task.JobId, bond.Amount))
	})
}

// invariantHolds and invariantBreaks run one invariant on the fixture's state: it holds,
// or it breaks with want in its message.
func invariantHolds(t *testing.T, f *fixture, inv func(sdk.Context) (string, bool)) {
	t.Helper()
	msg, broken := inv(f.ctx)
	require.False(t, broken, msg)
}

func invariantBreaks(t *testing.T, f *fixture, inv func(sdk.Context) (string, bool), want string) {
	t.Helper()
	msg, broken := inv(f.ctx)
	require.True(t, broken, msg)
	require.Contains(t, msg, want)
}
