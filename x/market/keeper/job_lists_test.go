package keeper_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/flopsnet/flops/x/market/keeper"
	"github.com/flopsnet/flops/x/market/types"
)

// The job lists with omit_spec give the jobs as without it, history length included,
// less their specs, in the same order and pages: by owner, by status and every job.
func TestJobListsOmitTheirSpecs(t *testing.T) {
	f := newFixture(t, nil)
	other := f.operator("other")
	f.fund(other, clientFunds)
	for i := range 5 {
		owner := f.client
		if i%2 == 1 {
			owner = other
		}
		id := f.submitAs(owner, f.unplaceable())
		if i == 2 {
			_, err := f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: owner, JobId: id}) // a history entry
			require.NoError(t, err)
		}
	}
	f.blocks(1)
	qs := keeper.NewQueryServerImpl(f.k)
	for _, reverse := range []bool{false, true} {
		page := func() *query.PageRequest { return &query.PageRequest{Limit: 2, Reverse: reverse} }
		lists := map[string]func(omit bool, pg *query.PageRequest) ([]types.Job, *query.PageResponse){
			"by owner": func(omit bool, pg *query.PageRequest) ([]types.Job, *query.PageResponse) {
				r, err := qs.JobsByOwner(f.ctx, &types.QueryJobsByOwnerRequest{Owner: f.client, Pagination: pg, OmitSpec: omit})
				require.NoError(t, err)
				return r.Jobs, r.Pagination
			},
			"by status": func(omit bool, pg *query.PageRequest) ([]types.Job, *query.PageResponse) {
				r, err := qs.JobsByStatus(f.ctx, &types.QueryJobsByStatusRequest{Status: types.JOB_STATUS_ACTIVE, Pagination: pg, OmitSpec: omit})
				require.NoError(t, err)
				return r.Jobs, r.Pagination
			},
			"every job": func(omit bool, pg *query.PageRequest) ([]types.Job, *query.PageResponse) {
				r, err := qs.Jobs(f.ctx, &types.QueryJobsRequest{Pagination: pg, OmitSpec: omit})
				require.NoError(t, err)
				return r.Jobs, r.Pagination
			},
			"every job in a status": func(omit bool, pg *query.PageRequest) ([]types.Job, *query.PageResponse) {
				r, err := qs.Jobs(f.ctx, &types.QueryJobsRequest{Status: types.JOB_STATUS_CANCELLED, Pagination: pg, OmitSpec: omit})
				require.NoError(t, err)
				return r.Jobs, r.Pagination
			},
		}
		for name, list := range lists {
			var with, without []types.Job
			for _, omit := range []bool{false, true} {
				pg := page()
				for {
					jobs, res := list(omit, pg)
					if omit {
						without = append(without, jobs...)
					} else {
						with = append(with, jobs...)
					}
					if len(res.NextKey) == 0 {
						break
					}
					pg = page()
					pg.Key = res.NextKey
				}
			}
			require.NotEmpty(t, with, name)
			for i := range with {
				require.NotEmpty(t, with[i].Spec.Image, "%s: with its spec", name)
				one, err := qs.Job(f.ctx, &types.QueryJobRequest{JobId: with[i].Id})
				require.NoError(t, err)
				require.Equal(t, one.Job, with[i], "%s: the job as Job shows it", name)
				with[i].Spec = types.JobSpec{}
			}
			require.Equal(t, with, without, "%s, reverse %v", name, reverse)
		}
	}
}

// queue reads the Queue query.
func queue(t *testing.T, f *fixture) types.QueryQueueResponse {
	t.Helper()
	res, err := keeper.NewQueryServerImpl(f.k).Queue(f.ctx, &types.QueryQueueRequest{})
	require.NoError(t, err)
	return *res
}

// Queue counts the scheduler's queue: the tasks waiting in their groups, queued or parked
// (no node could take them), and the tasks parked alone; an assigned or cancelled task
// leaves it.
func TestQueueCountsTheScheduler(t *testing.T) {
	f := newFixture(t, nil)
	f.submit(f.unplaceable())
	three := f.unplaceable()
	three.TaskCount = 3
	b := f.submit(three)
	require.Equal(t, types.QueryQueueResponse{Waiting: 4, Groups: 2}, queue(t, f), "submitted")

	f.blocks(1)
	require.Equal(t, types.QueryQueueResponse{Waiting: 4, Groups: 2, GroupsParked: 2}, queue(t, f), "no node could take them")

	require.NoError(t, f.k.ParkAloneForTest(f.ctx, f.tasks(b)[1].Id))
	require.Equal(t, types.QueryQueueResponse{Waiting: 3, Groups: 2, GroupsParked: 2, Parked: 1}, queue(t, f), "one parked alone")

	_, err := f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: b})
	require.NoError(t, err)
	require.Equal(t, types.QueryQueueResponse{Waiting: 1, Groups: 1, GroupsParked: 1}, queue(t, f), "cancelled")

	f.addNode(f.operator("p1"), 8, nil)
	placed := f.submit(f.gemmSpec(2))
	require.Equal(t, types.QueryQueueResponse{Waiting: 3, Groups: 2, GroupsParked: 1}, queue(t, f), "two more")
	f.blocks(1)
	for _, task := range f.tasks(placed) {
		require.Equal(t, types.TASK_STATUS_ASSIGNED, task.Status)
	}
	require.Equal(t, types.QueryQueueResponse{Waiting: 1, Groups: 1, GroupsParked: 1}, queue(t, f), "assigned")
	f.assertInvariants()
}

// TestAttackQueueFloodHidesTheQueue: a client floods the market with jobs no node can
// take. The Queue query walked a record per group with a task waiting: some 600,000 such
// jobs passed a node's query gas limit, and the dashboard's queue went blank just
// when it mattered. The counts are kept (queue_counts.go), and the query reads the same
// two records however long the queue is, in the block of the submissions (their pending
// moves) and after it (the folded record); before, 500 groups cost it 41,730 gas (83 a
// group: about 600,000 pass flopsd's query gas limit of 50,000,000).
func TestAttackQueueFloodHidesTheQueue(t *testing.T) {
	f := newFixture(t, nil)
	const jobs = 500
	for range jobs {
		f.submit(f.unplaceable())
	}
	read := func(want types.QueryQueueResponse) uint64 {
		t.Helper()
		ctx := f.ctx.WithGasMeter(storetypes.NewInfiniteGasMeter())
		res, err := keeper.NewQueryServerImpl(f.k).Queue(ctx, &types.QueryQueueRequest{})
		require.NoError(t, err)
		require.Equal(t, want, *res)
		return ctx.GasMeter().GasConsumed()
	}
	inBlock := read(types.QueryQueueResponse{Groups: jobs, Waiting: jobs})
	f.assertInvariants()
	f.blocks(1)
	after := read(types.QueryQueueResponse{Groups: jobs, Waiting: jobs, GroupsParked: jobs})
	t.Logf("the Queue query with %d groups waiting: %d gas in their block, %d after it", jobs, inBlock, after)
	require.Less(t, inBlock, uint64(5_000))
	require.Less(t, after, uint64(5_000))
	f.assertInvariants()
}

// processSpec is an unplaceable one-task PROCESS job whose command has n arguments of 100
// bytes.
func processSpec(f *fixture, n int) types.JobSpec {
	s := f.unplaceable()
	s.Runtime, s.Image, s.Builtin = types.RUNTIME_PROCESS, "", types.BuiltinArgs{}
	s.Command = nil
	for i := range n {
		s.Command = append(s.Command, fmt.Sprintf("%03d", i)+strings.Repeat("a", 97))
	}
	return s
}

// A job keeps a program (command, environment, inputs, task arguments) of more than 1 KiB
// apart from the rest of its spec (version 11): the spec the scheduler reads holds none of
// it, the Job query and the genesis give the spec whole, a pruning removes both. The
// migration from 10 splits a store of version 10's layout (every spec whole), and leaves
// a small program in the spec.
func TestJobProgramsApart(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.JobRetentionBlocks = 3 })
	bigSpec, smallSpec := processSpec(f, 20), processSpec(f, 2)
	big, small := f.submit(bigSpec), f.submit(smallSpec)
	qs := keeper.NewQueryServerImpl(f.k)
	check := func(what string) {
		t.Helper()
		for id, want := range map[uint64]types.JobSpec{big: bigSpec, small: smallSpec} {
			res, err := qs.Job(f.ctx, &types.QueryJobRequest{JobId: id})
			require.NoError(t, err)
			require.Equal(t, want, res.Job.Spec, "%s: job %d whole", what, id)
			read, err := f.k.JobSpecs.Get(f.ctx, id)
			require.NoError(t, err)
			_, apart := f.k.JobPrograms.Get(f.ctx, id)
			if id == big {
				require.Empty(t, read.Command, "%s: the scheduler's read holds no program", what)
				require.NoError(t, apart)
				require.True(t, f.job(id).ProgramApart)
			} else {
				require.Equal(t, want, read, "%s: a small program stays in the spec", what)
				require.Error(t, apart)
				require.False(t, f.job(id).ProgramApart)
			}
		}
		gs, err := f.k.ExportGenesis(f.ctx)
		require.NoError(t, err)
		require.Equal(t, bigSpec, gs.Jobs[0].Spec, "%s: the genesis gives the spec whole", what)
		f.assertInvariants()
	}
	check("submitted")

	// the job-specs invariant: each way a spec can be stored against its record's word
	broken := func(want string, mess, mend func()) {
		t.Helper()
		mess()
		msg, bad := f.k.JobSpecsInvariant(f.ctx)
		require.True(t, bad, "%s: not reported", want)
		require.Contains(t, msg, want)
		mend()
		msg, bad = f.k.JobSpecsInvariant(f.ctx)
		require.False(t, bad, msg)
	}
	setJob := func(id uint64, apart bool) func() {
		return func() {
			j := f.job(id)
			j.ProgramApart, j.Spec = apart, types.JobSpec{}
			require.NoError(t, f.k.Jobs.Set(f.ctx, id, j))
		}
	}
	bigProgram, err := f.k.JobPrograms.Get(f.ctx, big)
	require.NoError(t, err)
	bigRest, err := f.k.JobSpecs.Get(f.ctx, big)
	require.NoError(t, err)
	restore := func() {
		require.NoError(t, f.k.JobPrograms.Set(f.ctx, big, bigProgram))
		require.NoError(t, f.k.JobSpecs.Set(f.ctx, big, bigRest))
	}
	broken(fmt.Sprintf("job %d keeps its program apart, and JobPrograms has none", big),
		func() { require.NoError(t, f.k.JobPrograms.Remove(f.ctx, big)) }, restore)
	broken(fmt.Sprintf("job %d has no spec", big),
		func() { require.NoError(t, f.k.JobSpecs.Remove(f.ctx, big)) }, restore)
	broken(fmt.Sprintf("job %d keeps its program in its spec, and JobPrograms has one", big), setJob(big, false), setJob(big, true))
	broken(fmt.Sprintf("job %d keeps its program apart, and its spec holds one", big),
		func() { require.NoError(t, f.k.JobSpecs.Set(f.ctx, big, bigSpec)) }, restore)
	broken(fmt.Sprintf("job %d's JobPrograms entry holds more than its program", big),
		func() { require.NoError(t, f.k.JobPrograms.Set(f.ctx, big, bigSpec)) }, restore)
	broken(fmt.Sprintf("job %d keeps a program of", small), func() {
		setJob(small, true)()
		program := types.JobSpec{Command: smallSpec.Command, Env: smallSpec.Env, Inputs: smallSpec.Inputs, TaskArgs: smallSpec.TaskArgs}
		require.NoError(t, f.k.JobPrograms.Set(f.ctx, small, program))
		rest := smallSpec
		rest.Command, rest.Env, rest.Inputs, rest.TaskArgs = nil, nil, nil, nil
		require.NoError(t, f.k.JobSpecs.Set(f.ctx, small, rest))
	}, func() {
		setJob(small, false)()
		require.NoError(t, f.k.JobPrograms.Remove(f.ctx, small))
		require.NoError(t, f.k.JobSpecs.Set(f.ctx, small, smallSpec))
	})
	broken(fmt.Sprintf("job %d's spec holds a program of", big),
		func() {
			setJob(big, false)()
			require.NoError(t, f.k.JobSpecs.Set(f.ctx, big, bigSpec))
			require.NoError(t, f.k.JobPrograms.Remove(f.ctx, big))
		},
		func() { setJob(big, true)(); restore() })
	broken("JobSpecs holds job 999, which has no record",
		func() { require.NoError(t, f.k.JobSpecs.Set(f.ctx, 999, smallSpec)) },
		func() { require.NoError(t, f.k.JobSpecs.Remove(f.ctx, 999)) })
	broken("JobPrograms holds job 998, which has no record",
		func() { require.NoError(t, f.k.JobPrograms.Set(f.ctx, 998, bigProgram)) },
		func() { require.NoError(t, f.k.JobPrograms.Remove(f.ctx, 998)) })

	// version 10's layout: every spec whole, no program apart
	j := f.job(big)
	require.NoError(t, f.k.JobSpecs.Set(f.ctx, big, bigSpec))
	require.NoError(t, f.k.JobPrograms.Remove(f.ctx, big))
	j.ProgramApart, j.Spec = false, types.JobSpec{}
	require.NoError(t, f.k.Jobs.Set(f.ctx, big, j))
	require.NoError(t, keeper.NewMigrator(f.k).Migrate10to11(f.ctx))
	check("migrated")

	for _, id := range []uint64{big, small} {
		_, err := f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: id})
		require.NoError(t, err)
	}
	f.blocks(5)
	for _, id := range []uint64{big, small} {
		_, err := f.k.JobSpecs.Get(f.ctx, id)
		require.Error(t, err, "pruned")
		_, err = f.k.JobPrograms.Get(f.ctx, id)
		require.Error(t, err, "pruned")
	}
}
