package keeper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/flopsnet/flops/x/market/keeper"
	"github.com/flopsnet/flops/x/market/types"
)

// requireJobCounts checks the JobCounts query against want (next_job_id aside) and the
// job-counts invariant (the counts against the ByStatus index).
func requireJobCounts(t *testing.T, f *fixture, want types.JobCounts, what string) {
	t.Helper()
	res, err := keeper.NewQueryServerImpl(f.k).JobCounts(f.ctx, &types.QueryJobCountsRequest{})
	require.NoError(t, err, what)
	next, _, err := f.k.PeekIDs(f.ctx)
	require.NoError(t, err)
	want.NextJobId = next
	require.Equal(t, want, res.Counts, what)
	require.Equal(t, want.Bidding+want.Active+want.Completed+want.Failed+want.Cancelled, res.Total, what)
	msg, broken := f.k.JobCountsInvariant(f.ctx)
	require.False(t, broken, msg)
	// the lists' count_total answers the same (read from the record, not counted)
	qs := keeper.NewQueryServerImpl(f.k)
	counted := &query.PageRequest{Limit: 1, CountTotal: true}
	all, err := qs.Jobs(f.ctx, &types.QueryJobsRequest{Pagination: counted})
	require.NoError(t, err, what)
	require.Equal(t, res.Total, all.Pagination.Total, "%s: jobs", what)
	open, err := qs.OpenAuctions(f.ctx, &types.QueryOpenAuctionsRequest{Pagination: counted})
	require.NoError(t, err, what)
	require.Equal(t, want.Bidding, open.Pagination.Total, "%s: open auctions", what)
	for s, n := range map[types.JobStatus]uint64{
		types.JOB_STATUS_BIDDING: want.Bidding, types.JOB_STATUS_ACTIVE: want.Active, types.JOB_STATUS_COMPLETED: want.Completed,
		types.JOB_STATUS_FAILED: want.Failed, types.JOB_STATUS_CANCELLED: want.Cancelled,
	} {
		in, err := qs.JobsByStatus(f.ctx, &types.QueryJobsByStatusRequest{Status: s, Pagination: counted})
		require.NoError(t, err, what)
		require.Equal(t, n, in.Pagination.Total, "%s: %s", what, s)
		byStatus, err := qs.Jobs(f.ctx, &types.QueryJobsRequest{Status: s, Pagination: counted})
		require.NoError(t, err, what)
		require.Equal(t, n, byStatus.Pagination.Total, "%s: jobs in %s", what, s)
	}
}

// A list of jobs answers count_total from the job counts record: its gas does not grow
// with the jobs the chain keeps. Before, the SDK's pagination read every entry of the
// list to count it, so a big chain's node refused the first page of its jobs with their
// total at its query gas limit.
func TestJobListsCountFromTheRecord(t *testing.T) {
	f := newFixture(t, nil)
	qs := keeper.NewQueryServerImpl(f.k)
	gasOf := func(list func(ctx sdk.Context) (uint64, error)) (uint64, uint64) {
		ctx := f.ctx.WithGasMeter(storetypes.NewInfiniteGasMeter())
		total, err := list(ctx)
		require.NoError(t, err)
		return total, ctx.GasMeter().GasConsumed()
	}
	counted := &query.PageRequest{Limit: 1, CountTotal: true}
	lists := map[string]func(ctx sdk.Context) (uint64, error){
		"jobs": func(ctx sdk.Context) (uint64, error) {
			res, err := qs.Jobs(ctx, &types.QueryJobsRequest{Pagination: counted, OmitSpec: true})
			return res.GetPagination().GetTotal(), err
		},
		"active jobs": func(ctx sdk.Context) (uint64, error) {
			res, err := qs.JobsByStatus(ctx, &types.QueryJobsByStatusRequest{Status: types.JOB_STATUS_ACTIVE, Pagination: counted, OmitSpec: true})
			return res.GetPagination().GetTotal(), err
		},
	}
	for range 10 {
		f.submit(f.unplaceable())
	}
	f.blocks(1)
	few := map[string]uint64{}
	for name, list := range lists {
		total, gas := gasOf(list)
		require.Equal(t, uint64(10), total, name)
		few[name] = gas
	}
	for range 300 {
		f.submit(f.unplaceable())
	}
	f.blocks(1)
	for name, list := range lists {
		total, gas := gasOf(list)
		require.Equal(t, uint64(310), total, name)
		require.Equal(t, few[name], gas, "%s: the count's gas with 310 jobs as with 10", name)
	}
}

// The job counts follow a job through every status (an auction's bidding, active,
// completed, failed at its deadline, cancelled) and out at its pruning, in the block that
// moves it and after, with a job submitted and cancelled in one block among them.
func TestJobCountsFollowEveryStatus(t *testing.T) {
	f := newFixture(t, func(p *types.Params) {
		p.JobRetentionBlocks, p.ChallengeWindowBlocks, p.AuctionWindowBlocks = 60, 5, 50
	})
	var want types.JobCounts
	requireJobCounts(t, f, want, "no job")

	cancelled := f.submit(f.unplaceable())
	want.Active++
	requireJobCounts(t, f, want, "an assign job, in its block")
	auction := f.gemmSpec(1)
	auction.Mode = types.ALLOCATION_MODE_AUCTION
	auction.Requirements.Region = "nowhere"
	bidding := f.submit(auction)
	want.Bidding++
	requireJobCounts(t, f, want, "an auction, in its block")
	fails := f.unplaceable()
	fails.Deadline = f.ctx.BlockTime().Add(fails.MaxDuration + 3*time.Second)
	failed := f.submit(fails)
	want.Active++
	f.blocks(1)
	requireJobCounts(t, f, want, "after the block")
	for f.job(failed).Status == types.JOB_STATUS_ACTIVE {
		f.blocks(1)
	}
	require.Equal(t, types.JOB_STATUS_FAILED, f.job(failed).Status, "its deadline passed with its task unplaced")
	want.Active--
	want.Failed++
	requireJobCounts(t, f, want, "failed")

	_, err := f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: cancelled})
	require.NoError(t, err)
	want.Active--
	want.Cancelled++
	requireJobCounts(t, f, want, "cancelled, in its block")
	both := f.submit(f.unplaceable())
	_, err = f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: both})
	require.NoError(t, err)
	want.Cancelled++
	requireJobCounts(t, f, want, "submitted and cancelled in one block")

	// a job run to its settlement
	task := f.runningTask("p1") // ends a block
	want.Active++
	requireJobCounts(t, f, want, "a job running")
	f.blocks(1)
	f.commit(task)
	f.blocks(1)
	f.reveal(task)
	f.blocks(int(f.params().ChallengeWindowBlocks) + 1)
	require.Equal(t, types.JOB_STATUS_COMPLETED, f.job(task.JobId).Status)
	want.Active--
	want.Completed++
	requireJobCounts(t, f, want, "completed")

	// the auction closes with no bid: its task goes to the scheduler
	for f.job(bidding).Status == types.JOB_STATUS_BIDDING {
		f.blocks(1)
	}
	require.Equal(t, types.JOB_STATUS_ACTIVE, f.job(bidding).Status)
	want.Bidding--
	want.Active++
	requireJobCounts(t, f, want, "the auction closed")

	// the finished jobs are pruned job_retention_blocks after they finish
	f.blocks(int(f.params().JobRetentionBlocks) + 1)
	for _, id := range []uint64{cancelled, both, task.JobId, failed} {
		_, err := f.k.GetJob(f.ctx, id)
		require.ErrorIs(t, err, types.ErrJobNotFound, "job %d pruned", id)
	}
	requireJobCounts(t, f, types.JobCounts{Active: 1}, "the finished jobs pruned")
	f.assertInvariants()
}

// A transaction that fails leaves no move behind: an auction submitted by a transaction
// whose next message fails (its branch of the block is dropped) changes no count.
func TestJobCountsIgnoreAFailedTransaction(t *testing.T) {
	f := newFixture(t, nil)
	spec := f.gemmSpec(1)
	spec.Mode = types.ALLOCATION_MODE_AUCTION
	err := f.tx(func(ctx sdk.Context) error {
		if _, err := f.ms.SubmitJob(ctx, &types.MsgSubmitJob{Owner: f.client, Spec: spec}); err != nil {
			return err
		}
		_, err := f.ms.CancelJob(ctx, &types.MsgCancelJob{Owner: f.client, JobId: 99})
		return err
	})
	require.ErrorIs(t, err, types.ErrJobNotFound)
	requireJobCounts(t, f, types.JobCounts{}, "nothing submitted")
	f.blocks(1)
	requireJobCounts(t, f, types.JobCounts{}, "nor after the block")
}

// The counts come in with a genesis: the jobs imported, in their statuses (ids with gaps
// where jobs were pruned), with no move for the first block to count again.
func TestJobCountsAfterImport(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.JobRetentionBlocks = 3 })
	pruned := f.submit(f.unplaceable())
	_, err := f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: pruned})
	require.NoError(t, err)
	f.blocks(5)
	_, err = f.k.GetJob(f.ctx, pruned)
	require.ErrorIs(t, err, types.ErrJobNotFound)
	f.submit(f.unplaceable())
	cancelled := f.submit(f.unplaceable())
	_, err = f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: cancelled})
	require.NoError(t, err)
	auction := f.gemmSpec(1)
	auction.Mode = types.ALLOCATION_MODE_AUCTION
	f.submit(auction)
	f.blocks(1)
	want := types.JobCounts{Active: 1, Bidding: 1, Cancelled: 1}
	requireJobCounts(t, f, want, "exported")
	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)

	g := newFixture(t, nil)
	g.bank.FundModule(types.ModuleName, sdk.NewCoins(sdk.NewCoin(udps, f.escrow())))
	require.NoError(t, g.k.InitGenesis(g.ctx, gs))
	requireJobCounts(t, g, want, "imported")
	g.blocks(1)
	requireJobCounts(t, g, want, "after the first block")
}

// Version 9 counts the jobs. The migration from 8 counts a store of version 8's layout
// (no counts) from the index, so that the block after it adds to the right counts.
func TestMigrate8to9CountsTheJobs(t *testing.T) {
	f := newFixture(t, nil)
	f.submitGemms(3)
	cancelled := f.submit(f.unplaceable())
	_, err := f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: cancelled})
	require.NoError(t, err)
	f.blocks(1)

	// version 8's layout: no counts
	require.NoError(t, f.k.JobCounts.Remove(f.ctx))
	f.submit(f.unplaceable()) // before the upgrade's block ends, a job: already in the index
	msg, broken := f.k.JobCountsInvariant(f.ctx)
	require.True(t, broken, "without counts every job is counted as submitted since job 1: %s", msg)

	require.NoError(t, keeper.NewMigrator(f.k).Migrate8to9(f.ctx))
	want := types.JobCounts{Active: 4, Cancelled: 1}
	requireJobCounts(t, f, want, "migrated")
	f.submit(f.unplaceable())
	f.blocks(1)
	want.Active++
	requireJobCounts(t, f, want, "a block after the migration")
	f.assertInvariants()
}
